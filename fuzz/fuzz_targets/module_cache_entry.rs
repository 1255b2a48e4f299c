//! Fuzzes the reading of cali-run's module cache entries: any bytes, as a
//! whole entry and as the payload of one (framed with the checksum a
//! fuzzer would not find), read as a module's analysis, or a set of
//! functions called before, or as nothing, never a panic; and what reads
//! back answers the engine's questions without one.

#![no_main]

use caliper_dbi::mapped::SharedBytes;
use caliper_dbi::module_cache::format;
use libfuzzer_sys::fuzz_target;

/// The key and the payload of `data` where it is an entry (magic, format
/// version, key length, key, payload length, checksum, payload: the seeds
/// are real entries, whose payloads are then mutated), else a key of a
/// module's form and all of `data`.
fn key_and_payload(data: &[u8]) -> (String, &[u8]) {
    let entry = || {
        let rest = data.strip_prefix(b"CALIDBI\0")?;
        let len = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
        let key = std::str::from_utf8(rest.get(8..8 + len)?).ok()?;
        Some((key.to_string(), rest.get(8 + len + 16..)?))
    };
    entry().unwrap_or_else(|| ("build-id 00 size 1".to_string(), data))
}

fuzz_target!(|data: &[u8]| {
    let (key, payload) = key_and_payload(data);
    for entry in [format::frame(&key, payload), data.to_vec()] {
        let entry = SharedBytes::from(entry);
        if let Ok(info) = format::decode(&key, &entry) {
            let targets = info.branch_targets();
            let _ = targets.into_range(0, u64::MAX);
            let _ = targets.into_range(0x1000, 0x1010);
            let _ = targets.calls_to(0x1000).count();
            let _ = info.function_holding(0x1000);
            let _ = info.plt_entry("malloc");
        }
        let _ = format::decode_called(&key, &entry);
    }
});
