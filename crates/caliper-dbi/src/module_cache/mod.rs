//! The analysis of each module ([`ModuleInfo`]: its functions, PLT and
//! branch targets), found once per file and kept: in memory for the run,
//! and on disk between runs.
//!
//! A build runs its compiler hundreds of times, and the analysis of a
//! module depends on the file alone: for a compiler of 45,000 functions
//! and 25 MB of code, finding the functions and decoding the code for
//! branch targets took a third of a second at each run. An entry is found
//! by the module's identity: its GNU build-id and size, or, for a file
//! without a build-id, its path, size, modification time and inode; an
//! entry of another identity or format version, or one damaged in any
//! byte, is not used (see [`mod@format`]).
//!
//! It keeps too, for each program and module, the functions of the module
//! that runs of the program called ([`ModuleCache::called_before`]): the
//! engine gives those their trampolines at the module's first call (see
//! [`crate::engine`]), not every function of it. A compiler whose run
//! calls 4,300 of its 45,000 functions spent most of the tool's start-up
//! instrumenting the others.
//!
//! The cache lies in `$XDG_CACHE_HOME/caliper/dbi` (or
//! `~/.cache/caliper/dbi`); `CALI_RUN_CACHE=off` or `--no-cache` turns it
//! off. Entries are written at the end of the run, each whole or not at
//! all (a temporary file renamed), and the oldest go when the directory
//! passes [`MAX_BYTES`]. Nothing the cache does changes what the program
//! does or what is measured (the functions called before change only how
//! many first calls stop the program: `dbi.traps`): a directory that
//! cannot be read or written is a cache that misses, told only with
//! `CALI_RUN_DEBUG_CACHE=1`.

pub mod format;

use crate::discover::{self, ModuleInfo};
use crate::mapped::{Mapped, SharedBytes};
use object::read::ReadCache;
use object::read::elf::{FileHeader, ProgramHeader};
use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The most the cache directory holds; past it, the entries least
/// recently used are removed.
pub const MAX_BYTES: u64 = 512 << 20;

/// What is on disk of a module known in this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stored {
    Nothing,
    WithoutTargets,
    Whole,
}

#[derive(Debug)]
struct Known {
    info: Arc<ModuleInfo>,
    /// None where the file's identity could not be read: not kept.
    identity: Option<String>,
    stored: Stored,
}

/// The functions of a module that runs of a program called.
#[derive(Debug, Default)]
struct Called {
    /// Read from disk: their file addresses, sorted; None where the cache
    /// had none.
    before: Option<Arc<[u64]>>,
    /// Called in this run, to add.
    now: BTreeSet<u64>,
}

/// The modules' analyses by path, read from the disk cache where it has
/// them.
#[derive(Debug, Default)]
pub struct ModuleCache {
    dir: Option<PathBuf>,
    known: HashMap<String, Known>,
    /// The identities of the programs asked about, by path.
    programs: HashMap<String, Option<String>>,
    /// By (program, module) path.
    called: HashMap<(String, String), Called>,
    /// Entries read from and written to the disk cache in this run.
    pub read: usize,
    pub written: usize,
}

impl ModuleCache {
    /// A cache in the user's cache directory, or in memory only when
    /// `enabled` is false or `CALI_RUN_CACHE=off`.
    pub fn new(enabled: bool) -> ModuleCache {
        let off = std::env::var("CALI_RUN_CACHE").is_ok_and(|v| v.eq_ignore_ascii_case("off"));
        ModuleCache::in_dir(if enabled && !off { default_dir() } else { None })
    }

    /// A cache in `dir` (in memory only for None).
    pub fn in_dir(dir: Option<PathBuf>) -> ModuleCache {
        ModuleCache { dir, ..ModuleCache::default() }
    }

    /// The analysis of the file at `path`: known, read from disk, or found
    /// now. A file that cannot be analysed has no functions (and says so).
    pub fn get(&mut self, path: &str) -> Arc<ModuleInfo> {
        if let Some(known) = self.known.get(path) {
            return known.info.clone();
        }
        let identity = self.dir.as_ref().and_then(|_| identity(Path::new(path)));
        let from_disk = identity.as_deref().and_then(|id| self.read_entry(path, id));
        let stored = match &from_disk {
            Some(info) if info.branch_targets.get().is_some() => Stored::Whole,
            Some(_) => Stored::WithoutTargets,
            None => Stored::Nothing,
        };
        let info = Arc::new(from_disk.unwrap_or_else(|| {
            discover::discover_file(Path::new(path)).unwrap_or_else(|e| {
                eprintln!("== CALIPER: cali-run: {e}; not instrumented");
                ModuleInfo::default()
            })
        }));
        self.known.insert(path.to_string(), Known { info: info.clone(), identity, stored });
        info
    }

    /// The functions (file addresses, sorted) of the module at `module`
    /// (one [`ModuleCache::get`] has given) that earlier runs of the
    /// program at `program` called; None where the cache knows none.
    pub fn called_before(&mut self, program: &str, module: &str) -> Option<Arc<[u64]>> {
        let paths = (program.to_string(), module.to_string());
        if let Some(called) = self.called.get(&paths) {
            return called.before.clone();
        }
        let before = self.called_key(program, module).and_then(|key| self.read_called(&key, module));
        self.called.insert(paths, Called { before: before.clone(), now: BTreeSet::new() });
        before
    }

    /// Functions (file addresses) of the module at `module` that this run
    /// of the program at `program` called: kept with those of earlier runs
    /// at [`ModuleCache::save`].
    pub fn note_called(&mut self, program: &str, module: &str, addresses: impl IntoIterator<Item = u64>) {
        self.called.entry((program.to_string(), module.to_string())).or_default().now.extend(addresses);
    }

    /// The key of the entry of the functions of `module` that `program`
    /// called (see [`format::called_key`]), if both identities are known.
    fn called_key(&mut self, program: &str, module: &str) -> Option<String> {
        self.dir.as_ref()?;
        let module = self.known.get(module)?.identity.clone()?;
        let program =
            self.programs.entry(program.to_string()).or_insert_with(|| identity(Path::new(program))).clone()?;
        Some(format::called_key(&program, &module))
    }

    /// The functions called before that the entry `key` holds, if the
    /// cache holds a good one; a hit marks the entry as recently used.
    fn read_called(&mut self, key: &str, module: &str) -> Option<Arc<[u64]>> {
        let file = entry_path(self.dir.as_ref()?, key, CALLED);
        let bytes = std::fs::read(&file).ok()?;
        match format::decode_called(key, &bytes) {
            Ok(addresses) => {
                debug(format_args!(
                    "read {} functions of {module} called before from {}",
                    addresses.len(),
                    file.display()
                ));
                touch(&file);
                Some(addresses.into())
            }
            Err(why) => {
                debug(format_args!("ignored {}: {why}", file.display()));
                None
            }
        }
    }

    /// Writes the functions called of each (program, module) where this
    /// run called any that earlier runs had not.
    fn save_called(&mut self, dir: &Path) -> bool {
        let mut wrote = false;
        // Those with new functions first (finding a key may learn a
        // program's identity, which the loop then needs the cache for).
        let grown: Vec<(String, String, Vec<u64>)> = self
            .called
            .iter()
            .filter_map(|((program, module), called)| {
                let before = called.before.as_deref().unwrap_or(&[]);
                if called.now.iter().all(|a| before.binary_search(a).is_ok()) {
                    return None;
                }
                let all: BTreeSet<u64> = before.iter().chain(&called.now).copied().collect();
                Some((program.clone(), module.clone(), all.into_iter().collect()))
            })
            .collect();
        for (program, module, all) in grown {
            let Some(key) = self.called_key(&program, &module) else { continue };
            let file = entry_path(dir, &key, CALLED);
            match write_atomically(dir, &file, &format::encode_called(&key, &all)) {
                Ok(()) => {
                    debug(format_args!(
                        "wrote {} functions of {module} called by {program} to {}",
                        all.len(),
                        file.display()
                    ));
                    wrote = true;
                }
                Err(e) => debug(format_args!("cannot write {}: {e}", file.display())),
            }
        }
        wrote
    }

    /// Writes to disk what this run found that the cache does not hold
    /// yet (a module's branch targets are found only where a function of it
    /// was patched, and the functions called), then keeps the directory
    /// within [`MAX_BYTES`].
    pub fn save(&mut self) {
        let Some(dir) = self.dir.clone() else { return };
        let mut wrote = self.save_called(&dir);
        for (path, known) in &mut self.known {
            let whole = known.info.branch_targets.get().is_some();
            let newer = match known.stored {
                Stored::Nothing => true,
                Stored::WithoutTargets => whole,
                Stored::Whole => false,
            };
            let Some(identity) = known.identity.as_deref().filter(|_| newer && !known.info.functions.is_empty()) else {
                continue;
            };
            let bytes = format::encode(identity, &known.info);
            let file = entry_path(&dir, identity, MODULE);
            match write_atomically(&dir, &file, &bytes) {
                Ok(()) => {
                    debug(format_args!("wrote {path} to {}", file.display()));
                    known.stored = if whole { Stored::Whole } else { Stored::WithoutTargets };
                    self.written += 1;
                    wrote = true;
                }
                Err(e) => debug(format_args!("cannot write {}: {e}", file.display())),
            }
        }
        if wrote {
            prune(&dir, MAX_BYTES);
        }
    }

    /// The entry of the module `identity` (at `path`), if the cache holds
    /// a good one; a hit marks the entry as recently used.
    fn read_entry(&mut self, path: &str, identity: &str) -> Option<ModuleInfo> {
        let file = entry_path(self.dir.as_ref()?, identity, MODULE);
        // Mapped, not read: the lists of branch targets are searched in place.
        let entry = SharedBytes::from(Mapped::file(&file).ok()?);
        match format::decode(identity, &entry) {
            Ok(mut info) => {
                info.path = PathBuf::from(path);
                debug(format_args!("read {path} from {}", file.display()));
                touch(&file);
                self.read += 1;
                Some(info)
            }
            Err(why) => {
                debug(format_args!("ignored {}: {why}", file.display()));
                None
            }
        }
    }
}

/// `$XDG_CACHE_HOME/caliper/dbi`, or `$HOME/.cache/caliper/dbi`.
fn default_dir() -> Option<PathBuf> {
    let absolute = |var: &str| std::env::var_os(var).map(PathBuf::from).filter(|p| p.is_absolute());
    let base = absolute("XDG_CACHE_HOME").or_else(|| absolute("HOME").map(|home| home.join(".cache")))?;
    Some(base.join("caliper").join("dbi"))
}

/// The identity of the file at `path`, as the cache keys it (see the
/// module's documentation); None if it cannot be read.
fn identity(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    Some(match build_id(file) {
        Some(id) => {
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            format!("build-id {id} size {}", meta.len())
        }
        None => format!(
            "file {} size {} mtime {}.{:09} inode {}:{}",
            path.display(),
            meta.len(),
            meta.mtime(),
            meta.mtime_nsec(),
            meta.dev(),
            meta.ino()
        ),
    })
}

/// The GNU build-id of an ELF file, read from its program headers' notes
/// only (not the whole file).
fn build_id(file: File) -> Option<Vec<u8>> {
    let data = ReadCache::new(file);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    for segment in header.program_headers(endian, &data).ok()? {
        let Ok(Some(mut notes)) = segment.notes(endian, &data) else { continue };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"GNU" && note.n_type(endian) == object::elf::NT_GNU_BUILD_ID {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// The extensions of the two kinds of entry: a module's analysis, and the
/// functions of a module that a program called.
const MODULE: &str = "module";
const CALLED: &str = "called";

/// The file of the entry of kind `extension` for `key`: named by a hash
/// of it (the entry holds the key itself, so a collision only misses), not
/// by the format version: an entry of another version is replaced.
fn entry_path(dir: &Path, key: &str, extension: &str) -> PathBuf {
    let hash = key.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    dir.join(format!("{hash:016x}.{extension}"))
}

/// Marks the entry `file` as used now (pruning removes the least recently
/// used first).
fn touch(file: &Path) {
    if let Ok(f) = File::options().append(true).open(file) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Writes `bytes` to `file` in `dir` whole or not at all: to a temporary
/// file there, renamed over it (another run reading the entry meanwhile
/// sees the old or the new one).
fn write_atomically(dir: &Path, file: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if bytes.len() as u64 > MAX_BYTES / 4 {
        return Err(std::io::Error::other("larger than a quarter of the cache"));
    }
    std::fs::create_dir_all(dir)?;
    let mut temp = tempfile::Builder::new().prefix(".entry-").tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.persist(file).map_err(|e| e.error)?;
    Ok(())
}

/// Removes the files of `dir` least recently used until what is left
/// holds at most `limit` bytes.
fn prune(dir: &Path, limit: u64) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<(SystemTime, u64, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            Some((meta.modified().ok()?, meta.len(), e.path()))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut kept = 0u64;
    for (_, len, path) in files {
        kept += len;
        if kept > limit {
            debug(format_args!("removed {} (the cache is full)", path.display()));
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A line on standard error with `CALI_RUN_DEBUG_CACHE=1`.
fn debug(line: std::fmt::Arguments) {
    if std::env::var_os("CALI_RUN_DEBUG_CACHE").is_some_and(|v| v == "1") {
        eprintln!("== CALIPER: cali-run: cache: {line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIBM: &str = "/lib/x86_64-linux-gnu/libm.so.6";

    #[test]
    fn a_second_cache_reads_what_the_first_saved() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut first = ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        let found = first.get(LIBM);
        found.branch_targets();
        first.save();
        assert_eq!((first.read, first.written), (0, 1));
        let mut second = ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        let read = second.get(LIBM);
        assert_eq!(second.read, 1);
        assert_eq!(read.functions, found.functions);
        assert_eq!(read.path, found.path);
        assert!(read.branch_targets.get().is_some(), "the branch targets were kept");
        second.save();
        assert_eq!(second.written, 0, "nothing new to write");
    }

    #[test]
    fn an_entry_of_another_format_version_is_ignored_and_replaced() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut first = ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        first.get(LIBM);
        first.save();
        let entry = entry_path(dir.path(), &identity(Path::new(LIBM)).expect("identity"), MODULE);
        let mut bytes = std::fs::read(&entry).expect("entry written");
        bytes[8..12].copy_from_slice(&(format::VERSION + 1).to_le_bytes());
        std::fs::write(&entry, bytes).expect("write");
        let mut second = ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        assert!(!second.get(LIBM).functions.is_empty());
        second.save();
        assert_eq!((second.read, second.written), (0, 1));
        let mut third = ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        third.get(LIBM);
        assert_eq!(third.read, 1);
    }

    #[test]
    fn the_functions_a_program_called_are_kept_with_those_of_earlier_runs() {
        const PROGRAM: &str = "/bin/true";
        let dir = tempfile::tempdir().expect("temp dir");
        let cache = || ModuleCache::in_dir(Some(dir.path().to_path_buf()));
        let mut first = cache();
        first.get(LIBM);
        assert_eq!(first.called_before(PROGRAM, LIBM), None, "nothing known yet");
        first.note_called(PROGRAM, LIBM, [0x3000, 0x1000]);
        first.save();
        let mut second = cache();
        second.get(LIBM);
        assert_eq!(second.called_before(PROGRAM, LIBM).as_deref(), Some([0x1000, 0x3000].as_slice()));
        assert_eq!(second.called_before("/bin/false", LIBM), None, "another program's are its own");
        second.note_called(PROGRAM, LIBM, [0x2000, 0x3000]);
        second.save();
        let mut third = cache();
        third.get(LIBM);
        assert_eq!(third.called_before(PROGRAM, LIBM).as_deref(), Some([0x1000, 0x2000, 0x3000].as_slice()));
        // Nothing new: nothing written.
        third.note_called(PROGRAM, LIBM, [0x2000]);
        let entries = || std::fs::read_dir(dir.path()).expect("dir").count();
        let before = entries();
        third.save();
        assert_eq!(entries(), before);
    }

    #[test]
    fn a_directory_that_cannot_be_written_only_misses() {
        let mut cache = ModuleCache::in_dir(Some(PathBuf::from("/proc/no-such-dir/dbi")));
        assert!(!cache.get(LIBM).functions.is_empty());
        cache.save();
        assert_eq!((cache.read, cache.written), (0, 0));
    }

    #[test]
    fn a_library_is_known_by_its_build_id_and_a_file_without_one_by_its_inode() {
        let libm = identity(Path::new(LIBM)).expect("identity");
        assert!(libm.starts_with("build-id "), "{libm}");
        let dir = tempfile::tempdir().expect("temp dir");
        let plain = dir.path().join("plain");
        std::fs::write(&plain, b"not elf").expect("write");
        let id = identity(&plain).expect("identity");
        assert!(id.starts_with("file ") && id.contains(" inode "), "{id}");
        std::fs::write(&plain, b"not elf either").expect("write");
        assert_ne!(identity(&plain).expect("identity"), id, "a changed file is another module");
    }

    #[test]
    fn pruning_removes_the_least_recently_used_first() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = SystemTime::now() - std::time::Duration::from_secs(60);
        for (name, when) in [("old", old), ("new", SystemTime::now())] {
            let path = dir.path().join(name);
            std::fs::write(&path, [0u8; 100]).expect("write");
            File::options().append(true).open(&path).expect("open").set_modified(when).expect("touch");
        }
        prune(dir.path(), 150);
        assert!(dir.path().join("new").exists() && !dir.path().join("old").exists());
    }
}
