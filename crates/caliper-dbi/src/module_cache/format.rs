//! The bytes of a cache entry: a header (magic, format version, the
//! entry's key, the payload's length and checksum), then the payload in
//! LEB128 numbers (sorted addresses as differences, which keeps a
//! compiler's entry to a few megabytes): a [`ModuleInfo`] less its path,
//! keyed by the module's identity, or the functions of a module that runs
//! of a program called, keyed by both identities (see [`called_key`]).
//! The lists of branch targets are the exception: kept as [`Pairs`] keeps
//! them, so that they are searched where they lie in the mapped entry.
//!
//! Reading checks everything it can: a file of another version, of
//! another module, cut short or changed in any byte reads as nothing,
//! never as a wrong analysis.

use crate::discover::{FunctionEntry, ModuleInfo};
use crate::mapped::SharedBytes;
use crate::relocate::{BranchTargets, PAIR_BYTES, Pairs};
use std::collections::HashMap;
use std::sync::Arc;

const MAGIC: &[u8; 8] = b"CALIDBI\0";
/// Changes with any change of the payload's layout or of what the
/// analysis derives: an entry of another version is ignored (and
/// written again).
pub const VERSION: u32 = 2;

/// Why an entry was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Unreadable {
    NotAnEntry,
    OtherVersion(u32),
    OtherModule,
    Corrupt,
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotAnEntry => write!(f, "not a cache entry"),
            Unreadable::OtherVersion(v) => write!(f, "format version {v}, not {VERSION}"),
            Unreadable::OtherModule => write!(f, "the entry of another module"),
            Unreadable::Corrupt => write!(f, "truncated or corrupt"),
        }
    }
}

/// The entry for the module `identity` holding `info`.
pub fn encode(identity: &str, info: &ModuleInfo) -> Vec<u8> {
    let mut payload = Writer(Vec::new());
    payload.number(info.entry);
    payload.number(info.dynamic.map_or(0, |d| d + 1));
    payload.number(info.first_segment.0);
    payload.number(info.first_segment.1);
    payload.number(info.functions.len() as u64);
    let mut last = 0;
    for f in &info.functions {
        payload.text(&f.name);
        payload.number(f.address.wrapping_sub(last));
        payload.number(f.size);
        last = f.address;
    }
    let mut plt: Vec<(&String, &u64)> = info.plt.iter().collect();
    plt.sort();
    payload.number(plt.len() as u64);
    for (name, &address) in plt {
        payload.text(name);
        payload.number(address);
    }
    payload.pairs(&info.ifunc_plt);
    match info.branch_targets.get() {
        None => payload.number(0),
        Some(targets) => {
            payload.number(1);
            for list in targets.lists() {
                payload.number(list.base());
                payload.number(list.len() as u64);
                payload.0.extend_from_slice(list.bytes());
            }
        }
    }
    frame(identity, &payload.0)
}

/// The module that the entry `bytes` holds, if it is a whole entry of
/// this version for the module `identity`. Its path is left empty.
pub fn decode(identity: &str, entry: &SharedBytes) -> Result<ModuleInfo, Unreadable> {
    read_payload(&mut Reader(unframe(identity, entry)?), entry).ok_or(Unreadable::Corrupt)
}

/// The key of the functions of the module `module` (its identity) that
/// runs of the program `program` (its identity) called: never a module's
/// identity, so neither kind of entry reads as the other.
pub fn called_key(program: &str, module: &str) -> String {
    format!("called: {module}; by: {program}")
}

/// The entry for `key` (see [`called_key`]) of the functions at
/// `addresses` (sorted, file addresses).
pub fn encode_called(key: &str, addresses: &[u64]) -> Vec<u8> {
    let mut payload = Writer(Vec::new());
    payload.number(addresses.len() as u64);
    let mut last = 0;
    for &address in addresses {
        payload.number(address.wrapping_sub(last));
        last = address;
    }
    frame(key, &payload.0)
}

/// The sorted addresses that the entry `bytes` holds, if it is a whole
/// entry of this version for `key`.
pub fn decode_called(key: &str, bytes: &[u8]) -> Result<Vec<u64>, Unreadable> {
    let mut r = Reader(unframe(key, bytes)?);
    let count = r.count().ok_or(Unreadable::Corrupt)?;
    let mut addresses = Vec::with_capacity(count);
    let mut last = 0u64;
    for _ in 0..count {
        last = last.wrapping_add(r.number().ok_or(Unreadable::Corrupt)?);
        addresses.push(last);
    }
    let sorted = addresses.windows(2).all(|w| w[0] < w[1]);
    if !r.0.is_empty() || !sorted {
        return Err(Unreadable::Corrupt);
    }
    Ok(addresses)
}

/// `payload` behind the header of an entry for `key`.
pub fn frame(key: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + key.len() + 40);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&checksum(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of the entry `bytes`, if it is a whole entry of this
/// version for `key`.
fn unframe<'a>(key: &str, bytes: &'a [u8]) -> Result<&'a [u8], Unreadable> {
    let mut header = Reader(bytes);
    if header.take(MAGIC.len()) != Some(MAGIC.as_slice()) {
        return Err(Unreadable::NotAnEntry);
    }
    let version = header.u32().ok_or(Unreadable::Corrupt)?;
    if version != VERSION {
        return Err(Unreadable::OtherVersion(version));
    }
    let len = header.u32().ok_or(Unreadable::Corrupt)? as usize;
    if header.take(len).ok_or(Unreadable::Corrupt)? != key.as_bytes() {
        return Err(Unreadable::OtherModule);
    }
    let len = header.u64().ok_or(Unreadable::Corrupt)?;
    let sum = header.u64().ok_or(Unreadable::Corrupt)?;
    let payload = header.0;
    if payload.len() as u64 != len || checksum(payload) != sum {
        return Err(Unreadable::Corrupt);
    }
    Ok(payload)
}

/// The module that the payload `r` reads holds; its lists of branch
/// targets shared with `whole`, the entry that holds the payload.
fn read_payload(r: &mut Reader, whole: &SharedBytes) -> Option<ModuleInfo> {
    let entry = r.number()?;
    let dynamic = r.number()?.checked_sub(1);
    let first_segment = (r.number()?, r.number()?);
    let count = r.count()?;
    let mut functions = Vec::with_capacity(count);
    let mut last = 0u64;
    for _ in 0..count {
        let name = Arc::from(r.str()?);
        let address = last.wrapping_add(r.number()?);
        functions.push(FunctionEntry { name, address, size: r.number()? });
        last = address;
    }
    let count = r.count()?;
    let mut plt = HashMap::with_capacity(count);
    for _ in 0..count {
        let name = r.text()?;
        plt.insert(name, r.number()?);
    }
    let ifunc_plt = r.pairs()?;
    let info = ModuleInfo { functions, entry, dynamic, first_segment, plt, ifunc_plt, ..ModuleInfo::default() };
    match r.number()? {
        0 => {}
        1 => {
            let mut list = || {
                let base = r.number()?;
                let len = r.count()?.checked_mul(PAIR_BYTES)?;
                Pairs::from_bytes(base, whole.slice(whole.range_of(r.take(len)?)?)?)
            };
            let lists = [list()?, list()?];
            let _ = info.branch_targets.set(BranchTargets::from_lists(lists));
        }
        _ => return None,
    }
    r.0.is_empty().then_some(info)
}

/// A 64-bit checksum of `bytes`, 32 at a time in four independent chains
/// (a byte-wise one cost tens of milliseconds on a compiler's entry, and
/// one chain of multiplications 2 % of the tool's start-up): catches a
/// truncated or damaged file, not a forged one.
fn checksum(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, w: u64| (h ^ w).wrapping_mul(K).rotate_left(29);
    let word = |w: &[u8]| u64::from_le_bytes(w.try_into().expect("8 bytes"));
    let mut lanes = [1u64, 2, 3, 4].map(|lane| bytes.len() as u64 ^ K.wrapping_mul(lane));
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, w) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = mix(*lane, word(w));
        }
    }
    let mut h = lanes.into_iter().fold(K, mix);
    let mut words = blocks.remainder().chunks_exact(8);
    for w in &mut words {
        h = mix(h, word(w));
    }
    for &b in words.remainder() {
        h = mix(h, b as u64);
    }
    h ^ (h >> 32)
}

struct Writer(Vec<u8>);

impl Writer {
    /// LEB128: seven bits a byte, the high bit set on all but the last.
    fn number(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.0.push(n as u8 | 0x80);
            n >>= 7;
        }
        self.0.push(n as u8);
    }

    fn text(&mut self, s: &str) {
        self.number(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A list of pairs, the first of each as a difference from the one
    /// before (the lists are sorted by it).
    fn pairs(&mut self, list: &[(u64, u64)]) {
        self.number(list.len() as u64);
        let mut last = 0;
        for &(a, b) in list {
            self.number(a.wrapping_sub(last));
            self.number(b);
            last = a;
        }
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn number(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first()?;
            self.0 = rest;
            n |= ((byte & 0x7f) as u64).checked_shl(shift)?;
            if byte < 0x80 {
                return Some(n);
            }
        }
        None
    }

    /// A count of items that each take at least a byte: more than the
    /// bytes left is corruption (and must not reserve memory for it).
    fn count(&mut self) -> Option<usize> {
        usize::try_from(self.number()?).ok().filter(|&n| n <= self.0.len())
    }

    fn text(&mut self) -> Option<String> {
        self.str().map(str::to_string)
    }

    fn str(&mut self) -> Option<&str> {
        let len = self.count()?;
        std::str::from_utf8(self.take(len)?).ok()
    }

    fn pairs(&mut self) -> Option<Vec<(u64, u64)>> {
        let count = self.count()?;
        let mut list = Vec::with_capacity(count);
        let mut last = 0u64;
        for _ in 0..count {
            last = last.wrapping_add(self.number()?);
            list.push((last, self.number()?));
        }
        Some(list)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn libc() -> ModuleInfo {
        let info = crate::discover::discover_file(Path::new("/lib/x86_64-linux-gnu/libc.so.6")).expect("libc");
        info.branch_targets();
        info
    }

    /// [`decode`] of `bytes` of the tool's own.
    fn read(identity: &str, bytes: &[u8]) -> Result<ModuleInfo, Unreadable> {
        decode(identity, &SharedBytes::from(bytes.to_vec()))
    }

    fn same(a: &ModuleInfo, b: &ModuleInfo) {
        assert_eq!(a.functions, b.functions);
        assert_eq!((a.entry, a.dynamic, a.first_segment), (b.entry, b.dynamic, b.first_segment));
        assert_eq!(a.plt, b.plt);
        assert_eq!(a.ifunc_plt, b.ifunc_plt);
        let lists = |i: &ModuleInfo| i.branch_targets.get().map(|t| t.lists().map(|l| (l.base(), l.bytes().to_vec())));
        assert_eq!(lists(a), lists(b));
    }

    #[test]
    fn an_entry_reads_back_as_the_analysis_written() {
        let info = libc();
        assert!(info.branch_targets.get().is_some_and(|t| !t.lists()[0].is_empty()));
        let back = read("libc", &encode("libc", &info)).expect("read back");
        same(&info, &back);
        let mut without_targets = ModuleInfo { functions: info.functions.clone(), ..ModuleInfo::default() };
        without_targets.dynamic = Some(0);
        let back = read("x", &encode("x", &without_targets)).expect("read back");
        same(&without_targets, &back);
    }

    #[test]
    fn another_version_module_or_any_damage_reads_as_nothing() {
        let bytes = encode("libc", &libc());
        assert_eq!(read("libm", &bytes).err(), Some(Unreadable::OtherModule));
        let mut other = bytes.clone();
        other[8] ^= 0x7;
        assert_eq!(read("libc", &other).err(), Some(Unreadable::OtherVersion(VERSION ^ 0x7)));
        for cut in [0, 5, 20, bytes.len() / 2, bytes.len() - 1] {
            assert!(read("libc", &bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(read("libc", &longer).err(), Some(Unreadable::Corrupt));
        for at in [bytes.len() - 1, bytes.len() / 2, 60] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(read("libc", &damaged).is_err(), "byte {at} changed");
        }
    }

    #[test]
    fn the_checksum_changes_with_any_byte_its_order_or_its_length() {
        let bytes: Vec<u8> = (0..100u8).collect();
        let sum = checksum(&bytes);
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 1;
            assert_ne!(checksum(&damaged), sum, "byte {at}");
        }
        let mut swapped = bytes.clone();
        swapped.swap(0, 8);
        assert_ne!(checksum(&swapped), sum, "two words of different chains");
        let mut blocks = bytes.clone();
        blocks[..64].rotate_left(32);
        assert_ne!(checksum(&blocks), sum, "two blocks");
        assert_ne!(checksum(&bytes[..99]), sum);
    }

    #[test]
    fn a_called_set_reads_back_only_under_its_key() {
        let key = called_key("build-id aa size 1", "build-id bb size 2");
        let addresses = [0x1040, 0x1100, 0x2_0000, 0x7fff_0000];
        let bytes = encode_called(&key, &addresses);
        assert_eq!(decode_called(&key, &bytes), Ok(addresses.to_vec()));
        assert_eq!(
            decode_called(&called_key("build-id cc size 1", "build-id bb size 2"), &bytes),
            Err(Unreadable::OtherModule)
        );
        assert_eq!(read("build-id bb size 2", &bytes).err(), Some(Unreadable::OtherModule), "not a module's entry");
        let mut damaged = bytes.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert!(decode_called(&key, &damaged).is_err());
        assert_eq!(decode_called(&key, &encode_called(&key, &[])), Ok(Vec::new()));
    }
}
