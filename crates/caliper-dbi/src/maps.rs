//! `/proc/PID/maps`: where each module is loaded, and which address
//! ranges are free for trampolines.

use crate::ptrace::Pid;
use std::io;

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub executable: bool,
    /// Offset in the mapped file.
    pub offset: u64,
    /// The mapped file's device and inode (0 and 0 for anonymous memory):
    /// what a file opened by its path must have to be the one mapped.
    pub device: u64,
    pub inode: u64,
    /// The file was deleted (or replaced) since it was mapped.
    pub deleted: bool,
    /// The file's path; empty for anonymous memory, `[vdso]` and the like
    /// for the kernel's special mappings.
    pub path: String,
}

/// Parses the text of a maps file; lines that do not parse are skipped
/// (the kernel's format is fixed, so this is only defensive).
pub fn parse(text: &str) -> Vec<Mapping> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Mapping> {
    let mut fields = line.splitn(6, ' ');
    let (start, end) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    let offset = fields.next()?;
    let (major, minor) = fields.next()?.split_once(':')?;
    let inode = fields.next()?;
    let path = fields.next().unwrap_or("").trim_start();
    let live = path.strip_suffix(" (deleted)");
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        offset: u64::from_str_radix(offset, 16).ok()?,
        device: libc::makedev(u32::from_str_radix(major, 16).ok()?, u32::from_str_radix(minor, 16).ok()?),
        inode: inode.parse().ok()?,
        deleted: live.is_some(),
        path: live.unwrap_or(path).to_string(),
    })
}

/// The current mappings of process `pid`.
pub fn read(pid: Pid) -> io::Result<Vec<Mapping>> {
    Ok(parse(&std::fs::read_to_string(format!("/proc/{pid}/maps"))?))
}

/// The lowest address from which `size` bytes are free and lie within
/// `reach` bytes of both `near_start` and `near_end` (both ends of a
/// module's code, so that a rel32 reaches every byte of it), or None.
/// `maps` must be sorted by address, as the kernel lists them.
pub fn free_range_near(maps: &[Mapping], near_start: u64, near_end: u64, size: u64, reach: u64) -> Option<u64> {
    const PAGE: u64 = 4096;
    let lo = near_end.saturating_sub(reach).max(0x10000);
    let hi = near_start.saturating_add(reach);
    let mut gaps = Vec::new();
    let mut prev_end = 0x10000;
    for m in maps {
        if m.start > prev_end {
            gaps.push((prev_end, m.start));
        }
        prev_end = prev_end.max(m.end);
    }
    gaps.push((prev_end, 0x7fff_ffff_f000));
    // Prefer the gap closest to the module: below it or above it.
    let mut best: Option<u64> = None;
    for (g_start, g_end) in gaps {
        let start = g_start.max(lo).div_ceil(PAGE) * PAGE;
        let end = g_end.min(hi);
        if start >= end || end - start < size {
            continue;
        }
        // Within the gap, the place nearest the module.
        let candidate = if end <= near_start { (end - size) / PAGE * PAGE } else { start };
        if candidate < start {
            continue;
        }
        let distance = |a: u64| near_start.abs_diff(a);
        if best.is_none_or(|b| distance(candidate) < distance(b)) {
            best = Some(candidate);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
55d0c0a00000-55d0c0a02000 r--p 00000000 08:01 123 /usr/bin/gzip
55d0c0a02000-55d0c0a10000 r-xp 00002000 08:01 123 /usr/bin/gzip
7f0000000000-7f0000020000 r-xp 00000000 08:01 456 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
";

    #[test]
    fn parses_paths_permissions_and_offsets() {
        let maps = parse(SAMPLE);
        assert_eq!(maps.len(), 4);
        assert_eq!(maps[1].start, 0x55d0c0a02000);
        assert!(maps[1].executable && !maps[0].executable);
        assert_eq!(maps[1].offset, 0x2000);
        assert_eq!(maps[1].path, "/usr/bin/gzip");
        assert_eq!((maps[1].device, maps[1].inode, maps[1].deleted), (libc::makedev(8, 1), 123, false));
        assert_eq!(maps[3].path, "[stack]");
        let deleted = parse("7f0000000000-7f0000020000 r-xp 00000000 fd:02 99 /usr/lib/libold.so (deleted)\n");
        assert_eq!((deleted[0].path.as_str(), deleted[0].deleted), ("/usr/lib/libold.so", true));
        assert_eq!(deleted[0].device, libc::makedev(0xfd, 2));
    }

    #[test]
    fn free_range_is_near_the_module_and_does_not_overlap() {
        let maps = parse(SAMPLE);
        let size = 0x100000;
        let at = free_range_near(&maps, 0x55d0c0a00000, 0x55d0c0a10000, size, 1 << 31).unwrap();
        assert!(at + size <= 0x55d0c0a00000 || at >= 0x55d0c0a10000);
        assert!(at.abs_diff(0x55d0c0a00000) < 1 << 31);
        for m in &maps {
            assert!(at + size <= m.start || at >= m.end, "{at:x} overlaps {m:?}");
        }
    }
}
