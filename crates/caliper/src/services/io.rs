//! `io`: the C library's I/O calls, wrapped in every loaded object at run
//! time (see [`crate::interpose`]), become regions of `io.region` (`read`,
//! `write` or `metadata`) with the bytes moved (`io.bytes.read`,
//! `io.bytes.written`, on the region's end) and the file system and mount
//! point of the file (`io.filesystem`, `io.mount.point`, from
//! `/proc/self/mountinfo`). The options `io.bytes`, `io.bytes.read`,
//! `io.bytes.written`, `io.read.bandwidth` and `io.write.bandwidth` report
//! them.
//!
//! Wrapped: `read`, `write`, `pread`, `pwrite`, `readv`, `writev`,
//! `open`, `creat`, `close`, `fsync`, `fdatasync`, `fopen`, `fdopen`,
//! `fclose`, `fread`, `fwrite`, `fflush`, and the `64` variants of those
//! that have one. The C library's own calls between them (`fwrite` to
//! `write`) are internal and not seen twice.

use super::registry::{Created, NotCreated, ServiceSpec, Setup, Stage};
use crate::attributes::Attribute;
use crate::interpose::{self, Hook, Reentry};
use crate::log;
use crate::service::{ChannelView, GlobalRuntime, Runtime, Service};
use crate::sync;
use crate::value::ValueKey;
use caliper_data::node::Id;
use caliper_data::{AttrType, Properties, Variant};
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

pub(super) const SPEC: ServiceSpec = ServiceSpec {
    name: "io",
    aliases: &[],
    description: "Wrap POSIX and stdio I/O calls as io.region regions with bytes read and written",
    stage: Stage::Other,
    settings: &[],
    create: |setup: &Setup<'_>| -> Result<Created, NotCreated> {
        let cali = setup.cali;
        STATE.get_or_init(|| State::new(cali));
        match interpose::install(&HOOKS) {
            Ok(()) => Ok(Created::Service(Arc::new(Io))),
            Err(e) => {
                log::error(format_args!("io: {e}; io disabled"));
                Err(NotCreated::BadSettings)
            }
        }
    },
};

/// What the wrappers need: the runtime, the attributes, and the file
/// systems of the descriptors they have seen.
struct State {
    runtime: GlobalRuntime,
    region: Attribute,
    bytes_read: Attribute,
    bytes_written: Attribute,
    filesystem: Attribute,
    mount_point: Attribute,
    kinds: [ValueKey; 3],
    mounts: Vec<Mount>,
    /// Per descriptor: its file system and mount point, once known
    /// (`None` inside: not a file on a mounted file system).
    descriptors: RwLock<Vec<Option<Option<MountValues>>>>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The values of `io.filesystem` and `io.mount.point` for a file.
type MountValues = (ValueKey, ValueKey);

/// The kind of an I/O call: `io.region`'s value.
#[derive(Clone, Copy)]
enum Kind {
    Read = 0,
    Write = 1,
    Metadata = 2,
}

/// A mount: its mount point and file system type.
struct Mount {
    point: String,
    filesystem: String,
}

impl State {
    fn new(cali: &dyn Runtime) -> State {
        let subscription = cali.find_attribute("subscription_event").map(|a| a.id());
        let meta: Vec<(Id, Variant)> = subscription.into_iter().map(|m| (m, Variant::Bool(true))).collect();
        let region = cali.create_attribute("io.region", AttrType::String, Properties::DEFAULT, &meta);
        let bytes = Properties::ASVALUE | Properties::AGGREGATABLE | Properties::SKIP_EVENTS;
        let tree = Properties::SKIP_EVENTS;
        State {
            runtime: cali.global(),
            region,
            bytes_read: cali.create_attribute("io.bytes.read", AttrType::Uint, bytes, &[]),
            bytes_written: cali.create_attribute("io.bytes.written", AttrType::Uint, bytes, &[]),
            filesystem: cali.create_attribute("io.filesystem", AttrType::String, tree, &[]),
            mount_point: cali.create_attribute("io.mount.point", AttrType::String, tree, &[]),
            kinds: ["read", "write", "metadata"].map(ValueKey::string),
            mounts: std::fs::read_to_string("/proc/self/mountinfo").map(|t| parse_mountinfo(&t)).unwrap_or_default(),
            descriptors: RwLock::new(Vec::new()),
        }
    }

    /// The file system and mount point of descriptor `fd`, found once
    /// from the file it names.
    fn mount_of(&self, fd: c_int) -> Option<MountValues> {
        let index = usize::try_from(fd).ok()?;
        if let Some(Some(known)) = sync::read(&self.descriptors).get(index) {
            return *known;
        }
        let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok();
        let found = target.and_then(|t| self.mount_of_path(&t.to_string_lossy()));
        let mut descriptors = sync::write(&self.descriptors);
        if descriptors.len() <= index {
            descriptors.resize(index + 1, None);
        }
        descriptors[index] = Some(found);
        found
    }

    /// The mount that holds `path` (the longest mount point it starts
    /// with), as values of `io.filesystem` and `io.mount.point`.
    fn mount_of_path(&self, path: &str) -> Option<MountValues> {
        if !path.starts_with('/') {
            return None;
        }
        let under = |m: &&Mount| {
            path.strip_prefix(m.point.as_str())
                .is_some_and(|rest| m.point == "/" || rest.is_empty() || rest.starts_with('/'))
        };
        let mount = self.mounts.iter().filter(under).max_by_key(|m| m.point.len())?;
        Some((ValueKey::string(&mount.filesystem), ValueKey::string(&mount.point)))
    }

    /// Forgets what descriptor `fd` was: it is closed, or reused.
    fn forget(&self, fd: c_int) {
        if let Ok(index) = usize::try_from(fd)
            && let Some(slot) = sync::write(&self.descriptors).get_mut(index)
        {
            *slot = None;
        }
    }
}

/// The mounts of a `/proc/self/mountinfo` text: `id parent dev root
/// mount-point options [optional...] - fstype source super-options`.
fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let point = before.split(' ').nth(4)?;
            let filesystem = after.split(' ').next()?;
            Some(Mount { point: unescape_octal(point), filesystem: filesystem.to_string() })
        })
        .collect()
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape_octal(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let code = bytes.get(i + 1..i + 4).and_then(|d| u8::from_str_radix(std::str::from_utf8(d).ok()?, 8).ok());
        match (bytes[i], code) {
            (b'\\', Some(c)) => {
                out.push(c);
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

struct Io;

impl Service for Io {
    fn name(&self) -> &'static str {
        "io"
    }

    fn subscriptions(&self) -> &'static [&'static str] {
        &["io.region"]
    }

    fn finish(&self, _cali: &dyn Runtime, _channel: &dyn ChannelView) {
        interpose::uninstall(&HOOKS);
    }
}

/// One wrapped call as a region: begun before the call (with the file's
/// file system and mount point, if known), ended after it with the bytes
/// it moved. Does nothing while the thread is inside the runtime or the
/// runtime is not ready.
struct Operation {
    cali: &'static dyn Runtime,
    state: &'static State,
    mount: bool,
    _inside: Reentry,
}

impl Operation {
    /// Begins an operation of `kind` on the file `mount` finds the mount
    /// of (looked up only once the thread is known to be outside the
    /// runtime).
    #[inline]
    fn begin(kind: Kind, mount: impl FnOnce(&State) -> Option<MountValues>) -> Option<Operation> {
        let inside = Reentry::enter()?;
        let state = STATE.get()?;
        let cali = (state.runtime)()?;
        let mount = mount(state);
        if let Some((filesystem, point)) = mount {
            cali.begin(state.filesystem, filesystem);
            cali.begin(state.mount_point, point);
        }
        cali.begin(state.region, state.kinds[kind as usize]);
        Some(Operation { cali, state, mount: mount.is_some(), _inside: inside })
    }

    /// Begins an operation on descriptor `fd`.
    #[inline]
    fn on_fd(kind: Kind, fd: c_int) -> Option<Operation> {
        Operation::begin(kind, |state| state.mount_of(fd))
    }

    /// Begins an operation on the file at `path` (NULL: none).
    fn on_path(kind: Kind, path: *const c_char) -> Option<Operation> {
        Operation::begin(kind, |state| mount_of_path(state, path))
    }

    /// Ends the operation, which moved `bytes` (if it read or wrote).
    fn end(self, bytes: Option<(Attribute, u64)>) {
        let (cali, state) = (self.cali, self.state);
        if let Some((attr, n)) = bytes {
            cali.set(attr, ValueKey::uint(n));
        }
        cali.end(state.region);
        if let Some((attr, _)) = bytes {
            cali.end(attr);
        }
        if self.mount {
            cali.end(state.mount_point);
            cali.end(state.filesystem);
        }
    }
}

/// The bytes a call that returns a count (or -1) moved, as `attr`.
fn moved(attr: fn(&State) -> Attribute, result: isize) -> Option<(Attribute, u64)> {
    let state = STATE.get()?;
    u64::try_from(result).ok().map(|n| (attr(state), n))
}

fn read_bytes(state: &State) -> Attribute {
    state.bytes_read
}

fn written_bytes(state: &State) -> Attribute {
    state.bytes_written
}

/// Declares the original function of each wrapped name and the hooks.
macro_rules! hooks {
    ($($name:literal => $wrapper:ident, $original:ident;)*) => {
        $(static $original: AtomicUsize = AtomicUsize::new(0);)*
        static HOOKS: [Hook; [$($name),*].len()] = [
            $(Hook { name: $name, wrapper: $wrapper as *const (), original: &$original },)*
        ];
    };
}

hooks! {
    c"read" => read, READ;
    c"write" => write, WRITE;
    c"pread" => pread, PREAD;
    c"pread64" => pread64, PREAD64;
    c"pwrite" => pwrite, PWRITE;
    c"pwrite64" => pwrite64, PWRITE64;
    c"readv" => readv, READV;
    c"writev" => writev, WRITEV;
    c"open" => open, OPEN;
    c"open64" => open64, OPEN64;
    c"creat" => creat, CREAT;
    c"close" => close, CLOSE;
    c"fsync" => fsync, FSYNC;
    c"fdatasync" => fdatasync, FDATASYNC;
    c"fopen" => fopen, FOPEN;
    c"fopen64" => fopen64, FOPEN64;
    c"fdopen" => fdopen, FDOPEN;
    c"fclose" => fclose, FCLOSE;
    c"fread" => fread, FREAD;
    c"fwrite" => fwrite, FWRITE;
    c"fflush" => fflush, FFLUSH;
}

/// The original of a hook as a function of type `F`.
///
/// # Safety
/// `F` is the hooked function's type, and the hook is installed.
#[inline(always)]
unsafe fn original<F: Copy>(slot: &AtomicUsize) -> F {
    let address = slot.load(Ordering::Relaxed);
    // SAFETY: the caller's promise; function pointers are address-sized.
    unsafe { std::mem::transmute_copy::<usize, F>(&address) }
}

type File = c_void;

/// The descriptor of a stdio stream (-1 for NULL).
fn stream_fd(stream: *mut File) -> c_int {
    if stream.is_null() {
        return -1;
    }
    // SAFETY: a stream the program passed to a stdio call.
    unsafe { libc::fileno(stream.cast()) }
}

/// Wrappers of calls on a descriptor that move bytes: `(fd, ...) -> ssize_t`.
macro_rules! transfer_wrappers {
    ($($wrapper:ident($($arg:ident: $ty:ty),*) via $original:ident as $kind:ident, $bytes:ident;)*) => {$(
        unsafe extern "C" fn $wrapper(fd: c_int, $($arg: $ty),*) -> isize {
            let op = Operation::on_fd(Kind::$kind, fd);
            // SAFETY: installed with the C library's function of this type.
            let result = unsafe { original::<unsafe extern "C" fn(c_int, $($ty),*) -> isize>(&$original)(fd, $($arg),*) };
            if let Some(op) = op {
                op.end(moved($bytes, result));
            }
            result
        }
    )*};
}

transfer_wrappers! {
    read(buf: *mut c_void, count: usize) via READ as Read, read_bytes;
    write(buf: *const c_void, count: usize) via WRITE as Write, written_bytes;
    pread(buf: *mut c_void, count: usize, offset: i64) via PREAD as Read, read_bytes;
    pread64(buf: *mut c_void, count: usize, offset: i64) via PREAD64 as Read, read_bytes;
    pwrite(buf: *const c_void, count: usize, offset: i64) via PWRITE as Write, written_bytes;
    pwrite64(buf: *const c_void, count: usize, offset: i64) via PWRITE64 as Write, written_bytes;
    readv(iov: *const libc::iovec, count: c_int) via READV as Read, read_bytes;
    writev(iov: *const libc::iovec, count: c_int) via WRITEV as Write, written_bytes;
}

/// Wrappers of `open` and `open64`. They are variadic in C: the mode is
/// there only with `O_CREAT` or `O_TMPFILE`. On x86-64 a variadic integer
/// travels in the register a third parameter would, so the wrapper takes
/// it as one and passes it on (the callee reads it only when the flags
/// say it is there).
macro_rules! open_wrappers {
    ($($wrapper:ident via $original:ident;)*) => {$(
        unsafe extern "C" fn $wrapper(path: *const c_char, flags: c_int, mode: c_uint) -> c_int {
            let op = Operation::on_path(Kind::Metadata, path);
            // SAFETY: installed with the C library's open; see above.
            let fd = unsafe { original::<unsafe extern "C" fn(*const c_char, c_int, c_uint) -> c_int>(&$original)(path, flags, mode) };
            forget(op.as_ref(), fd);
            if let Some(op) = op {
                op.end(None);
            }
            fd
        }
    )*};
}

open_wrappers! {
    open via OPEN;
    open64 via OPEN64;
}

/// The mount of a path the program passes (NULL: none).
fn mount_of_path(state: &State, path: *const c_char) -> Option<MountValues> {
    if path.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path the program passed.
    let path = unsafe { CStr::from_ptr(path) }.to_string_lossy();
    let absolute = match path.starts_with('/') {
        true => path.into_owned(),
        false => std::env::current_dir().ok()?.join(&*path).to_string_lossy().into_owned(),
    };
    state.mount_of_path(&absolute)
}

/// Forgets what a descriptor that was just opened or closed was: inside
/// the call's operation, or else when the thread is outside the runtime
/// and any wrapper (a signal handler that closes a file may have
/// interrupted a lookup).
fn forget(op: Option<&Operation>, fd: c_int) {
    if fd < 0 {
        return;
    }
    match op {
        Some(op) => op.state.forget(fd),
        None => {
            if let Some(_inside) = Reentry::enter()
                && let Some(state) = STATE.get()
            {
                state.forget(fd);
            }
        }
    }
}

unsafe extern "C" fn creat(path: *const c_char, mode: c_uint) -> c_int {
    let op = Operation::on_path(Kind::Metadata, path);
    // SAFETY: installed with the C library's creat.
    let fd = unsafe { original::<unsafe extern "C" fn(*const c_char, c_uint) -> c_int>(&CREAT)(path, mode) };
    forget(op.as_ref(), fd);
    if let Some(op) = op {
        op.end(None);
    }
    fd
}

/// Wrappers of metadata calls on a descriptor: `(fd) -> int`.
macro_rules! fd_metadata_wrappers {
    ($($wrapper:ident via $original:ident, forgets: $forgets:literal;)*) => {$(
        unsafe extern "C" fn $wrapper(fd: c_int) -> c_int {
            let op = Operation::on_fd(Kind::Metadata, fd);
            if $forgets {
                forget(op.as_ref(), fd);
            }
            // SAFETY: installed with the C library's function of this type.
            let result = unsafe { original::<unsafe extern "C" fn(c_int) -> c_int>(&$original)(fd) };
            if let Some(op) = op {
                op.end(None);
            }
            result
        }
    )*};
}

fd_metadata_wrappers! {
    close via CLOSE, forgets: true;
    fsync via FSYNC, forgets: false;
    fdatasync via FDATASYNC, forgets: false;
}

/// Wrappers of `fopen` and `fopen64`.
macro_rules! fopen_wrappers {
    ($($wrapper:ident via $original:ident;)*) => {$(
        unsafe extern "C" fn $wrapper(path: *const c_char, mode: *const c_char) -> *mut File {
            let op = Operation::on_path(Kind::Metadata, path);
            // SAFETY: installed with the C library's fopen.
            let stream = unsafe { original::<unsafe extern "C" fn(*const c_char, *const c_char) -> *mut File>(&$original)(path, mode) };
            forget(op.as_ref(), stream_fd(stream));
            if let Some(op) = op {
                op.end(None);
            }
            stream
        }
    )*};
}

fopen_wrappers! {
    fopen via FOPEN;
    fopen64 via FOPEN64;
}

unsafe extern "C" fn fdopen(fd: c_int, mode: *const c_char) -> *mut File {
    let op = Operation::on_fd(Kind::Metadata, fd);
    // SAFETY: installed with the C library's fdopen.
    let stream = unsafe { original::<unsafe extern "C" fn(c_int, *const c_char) -> *mut File>(&FDOPEN)(fd, mode) };
    if let Some(op) = op {
        op.end(None);
    }
    stream
}

unsafe extern "C" fn fclose(stream: *mut File) -> c_int {
    let fd = stream_fd(stream);
    let op = Operation::on_fd(Kind::Metadata, fd);
    forget(op.as_ref(), fd);
    // SAFETY: installed with the C library's fclose.
    let result = unsafe { original::<unsafe extern "C" fn(*mut File) -> c_int>(&FCLOSE)(stream) };
    if let Some(op) = op {
        op.end(None);
    }
    result
}

unsafe extern "C" fn fflush(stream: *mut File) -> c_int {
    // fflush(NULL) flushes every stream: no one file's call.
    let op = match stream.is_null() {
        true => None,
        false => Operation::on_fd(Kind::Write, stream_fd(stream)),
    };
    // SAFETY: installed with the C library's fflush.
    let result = unsafe { original::<unsafe extern "C" fn(*mut File) -> c_int>(&FFLUSH)(stream) };
    if let Some(op) = op {
        op.end(None);
    }
    result
}

/// Wrappers of `fread` and `fwrite`: the bytes are the items moved times
/// their size.
macro_rules! stdio_transfer_wrappers {
    ($($wrapper:ident($buf:ty) via $original:ident as $kind:ident, $bytes:ident;)*) => {$(
        unsafe extern "C" fn $wrapper(buf: $buf, size: usize, count: usize, stream: *mut File) -> usize {
            let op = Operation::on_fd(Kind::$kind, stream_fd(stream));
            // SAFETY: installed with the C library's function of this type.
            let items = unsafe { original::<unsafe extern "C" fn($buf, usize, usize, *mut File) -> usize>(&$original)(buf, size, count, stream) };
            if let Some(op) = op {
                op.end(moved($bytes, items.saturating_mul(size) as isize));
            }
            items
        }
    )*};
}

stdio_transfer_wrappers! {
    fread(*mut c_void) via FREAD as Read, read_bytes;
    fwrite(*const c_void) via FWRITE as Write, written_bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_give_mount_points_and_file_systems() {
        let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    35 22 0:30 / /mnt/my\\040disk rw - xfs /dev/sdb rw\n\
                    garbage line\n";
        let mounts = parse_mountinfo(text);
        let pairs: Vec<(&str, &str)> = mounts.iter().map(|m| (m.point.as_str(), m.filesystem.as_str())).collect();
        assert_eq!(pairs, [("/", "ext4"), ("/mnt/my disk", "xfs")]);
    }
}
