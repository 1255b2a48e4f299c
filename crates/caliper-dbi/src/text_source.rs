//! A module's code read from its file instead of from the traced process.
//!
//! Arming every function entry of a module changes a byte on nearly every
//! page of its code, and the write of each page needs its bytes first:
//! read through `/proc/PID/mem`, a compiler's 25 MB of code took an eighth
//! of the tool's start-up (every page faulted into the tracee first). The
//! file holds the same bytes, and a read of it only copies them, as long
//! as the file at the module's path is the one mapped (same device and
//! inode, not deleted or replaced since) and the dynamic linker does not
//! write relocations into the code (`DT_TEXTREL`). Where either is not
//! known, the pages are read from the process as before: bytes of another
//! file written back into the program's code would break it.

use crate::maps::Mapping;
use object::read::ReadCache;
use object::read::elf::{Dyn, FileHeader, ProgramHeader};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};

/// The file of a module, with where its code is mapped.
pub struct TextSource {
    file: File,
    /// (start, end, offset in the file) of each executable mapping.
    ranges: Vec<(u64, u64, u64)>,
}

impl TextSource {
    /// The file of the module at `path`, whose code is mapped between
    /// `low` and `high` as `maps` says, if its code can be read from it.
    pub fn open(maps: &[Mapping], path: &str, low: u64, high: u64) -> Option<TextSource> {
        let mapped: Vec<&Mapping> =
            maps.iter().filter(|m| m.executable && m.path == path && m.start >= low && m.end <= high).collect();
        let first = mapped.first()?;
        let same_file = |m: &&Mapping| !m.deleted && (m.device, m.inode) == (first.device, first.inode);
        if !mapped.iter().all(same_file) {
            return None;
        }
        let file = File::open(path).ok()?;
        let meta = file.metadata().ok()?;
        if (meta.dev(), meta.ino()) != (first.device, first.inode) || relocates_code(&file) != Some(false) {
            return None;
        }
        Some(TextSource { file, ranges: mapped.iter().map(|m| (m.start, m.end, m.offset)).collect() })
    }

    /// Reads the code at `at` into `buffer` (the bytes read), where all of
    /// it lies in one of the code's mappings; an error where it does not.
    pub fn read(&self, at: u64, buffer: &mut [u8]) -> std::io::Result<usize> {
        let inside = |&&(start, end, _): &&(u64, u64, u64)| at >= start && at + buffer.len() as u64 <= end;
        let &(start, _, offset) = self.ranges.iter().find(inside).ok_or(std::io::ErrorKind::NotFound)?;
        self.file.read_at(buffer, at - start + offset)
    }
}

/// Whether the dynamic linker writes relocations into the code of the ELF
/// file `file` (`DT_TEXTREL`, or `DF_TEXTREL` in `DT_FLAGS`); None where
/// the file cannot say.
fn relocates_code(file: &File) -> Option<bool> {
    let data = ReadCache::new(file);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    for segment in header.program_headers(endian, &data).ok()? {
        let Some(entries) = segment.dynamic(endian, &data).ok()? else { continue };
        let textrel = entries.iter().any(|d| {
            let tag = d.d_tag(endian);
            tag == object::elf::DT_TEXTREL
                || tag == object::elf::DT_FLAGS && d.d_val(endian) & object::elf::DF_TEXTREL.0 != 0
        });
        return Some(textrel);
    }
    // No dynamic segment (a static program): nothing relocates its code.
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Memory;

    const PAGE: u64 = 4096;

    /// This process's mappings, and the C library's path and code range.
    fn own_libc() -> (Vec<Mapping>, String, u64, u64) {
        let maps = crate::maps::read(std::process::id() as i32).expect("own maps");
        let (path, low, high) = crate::image::executable_files(&maps)
            .into_iter()
            .find(|(p, _, _)| p.contains("libc.so"))
            .map(|(p, low, high)| (p.to_string(), low, high))
            .expect("libc mapped");
        (maps, path, low, high)
    }

    #[test]
    fn the_c_librarys_code_is_read_from_its_file_and_matches_the_process() {
        let (maps, path, low, high) = own_libc();
        let source = TextSource::open(&maps, &path, low, high).expect("libc's code readable from its file");
        let memory = Memory::open(std::process::id() as i32).expect("own memory");
        for (at, len) in [(low, 7 * PAGE), (low + 5 * PAGE + 17, 100), (high - PAGE, PAGE)] {
            let mut from_file = vec![0u8; len as usize];
            assert_eq!(source.read(at, &mut from_file).expect("in the code"), from_file.len());
            let mut from_process = vec![0u8; from_file.len()];
            memory.read(at, &mut from_process).expect("own code");
            assert!(from_file == from_process, "the file's bytes are the process's at {at:#x}");
        }
        let mut past_the_end = vec![0u8; (2 * PAGE) as usize];
        assert!(source.read(high - PAGE, &mut past_the_end).is_err(), "not all in the code");
    }

    #[test]
    fn a_library_with_relocations_in_its_code_is_known() {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = dir.path().join("textrel.c");
        std::fs::write(&source, "static int counter;\nint *where(void) { return &counter; }\n").expect("write");
        let library = dir.path().join("libtextrel.so");
        // Absolute addresses in non-PIC code: the linker leaves
        // relocations in the code for the dynamic linker.
        let built = std::process::Command::new("gcc")
            .args(["-O0", "-fno-pic", "-mcmodel=large", "-shared", "-Wl,-z,notext", "-o"])
            .arg(&library)
            .arg(&source)
            .status()
            .expect("gcc runs");
        assert!(built.success());
        assert_eq!(relocates_code(&File::open(&library).expect("built")), Some(true));
        assert_eq!(relocates_code(&File::open(own_libc().1).expect("libc")), Some(false));
    }

    #[test]
    fn a_file_that_is_not_the_one_mapped_is_not_read() {
        let (maps, path, low, high) = own_libc();
        let mut other: Vec<Mapping> = maps.clone();
        for m in other.iter_mut().filter(|m| m.path == path) {
            m.inode += 1;
        }
        assert!(TextSource::open(&other, &path, low, high).is_none(), "another inode");
        for m in other.iter_mut().filter(|m| m.path == path) {
            m.inode -= 1;
            m.deleted = true;
        }
        assert!(TextSource::open(&other, &path, low, high).is_none(), "deleted since mapped");
    }
}
