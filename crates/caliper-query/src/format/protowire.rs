//! The protocol buffers wire format, for the few messages `perfetto`
//! writes: varints, fixed 64-bit doubles, and length-delimited strings and
//! sub-messages. Written by hand rather than through generated code so the
//! writer appends into one reused buffer (a packet at a time, no
//! allocation per message); the tests decode the output with the published
//! Perfetto protos.

/// Appends `value` as a base-128 varint.
pub(crate) fn varint(buf: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;

fn key(buf: &mut Vec<u8>, field: u32, wire_type: u64) {
    varint(buf, (u64::from(field) << 3) | wire_type);
}

/// An unsigned integer, bool or enum field.
pub(crate) fn uint(buf: &mut Vec<u8>, field: u32, value: u64) {
    key(buf, field, VARINT);
    varint(buf, value);
}

/// A signed (`int32`/`int64`, not zigzag) field: negative values take ten
/// bytes, as the format has it.
pub(crate) fn int(buf: &mut Vec<u8>, field: u32, value: i64) {
    uint(buf, field, value as u64);
}

/// A `double` field.
pub(crate) fn double(buf: &mut Vec<u8>, field: u32, value: f64) {
    key(buf, field, FIXED64);
    buf.extend_from_slice(&value.to_le_bytes());
}

/// A `string` or `bytes` field.
pub(crate) fn bytes(buf: &mut Vec<u8>, field: u32, value: &[u8]) {
    key(buf, field, LEN);
    varint(buf, value.len() as u64);
    buf.extend_from_slice(value);
}

/// The key and length of a length-delimited field whose `len` bytes the
/// caller writes itself.
pub(crate) fn length_delimited_header(buf: &mut Vec<u8>, field: u32, len: usize) {
    key(buf, field, LEN);
    varint(buf, len as u64);
}

/// A sub-message field whose body `body` appends: written in place, then
/// its length put in front of it.
pub(crate) fn message(buf: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(buf, field, LEN);
    let start = buf.len();
    body(buf);
    let mut prefix = [0u8; 10];
    let mut n = 0;
    let mut len = (buf.len() - start) as u64;
    while len >= 0x80 {
        prefix[n] = (len as u8) | 0x80;
        len >>= 7;
        n += 1;
    }
    prefix[n] = len as u8;
    buf.splice(start..start, prefix[..=n].iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_are_little_endian_base_128() {
        let mut buf = Vec::new();
        varint(&mut buf, 300);
        assert_eq!(buf, [0xac, 0x02]);
        buf.clear();
        int(&mut buf, 1, -1);
        assert_eq!(buf.len(), 11, "key and ten bytes");
    }

    #[test]
    fn messages_get_their_length_in_front() {
        let mut buf = Vec::new();
        message(&mut buf, 1, |b| bytes(b, 2, &[b'x'; 200]));
        // key 0x0a, length 203 (two bytes), inner key 0x12, length 200 (two bytes).
        assert_eq!(&buf[..5], &[0x0a, 0xcb, 0x01, 0x12, 0xc8]);
        assert_eq!(buf.len(), 3 + 203);
    }
}
