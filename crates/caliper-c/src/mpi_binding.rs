//! The runtime's side of libcaliper-mpi (see the `caliper-mpi-abi`
//! crate): the functions its PMPI wrappers call, its [`Binding`] adapted
//! as the runtime's [`MpiLayer`], and collective flushes over one of the
//! program's communicators (`cali_mpi_flush_on`, which the C++
//! `MpiChannelManager` and `CollectiveOutputChannel` build on).
//!
//! The binding registers itself from libcaliper-mpi's constructor, or is
//! found by name ([`discover`]) when this library starts the runtime
//! first: so the configs of `CALI_CONFIG` know they run under MPI however
//! the program was linked.

use crate::entry::guard;
use caliper_mpi_abi::{BINDING_SYMBOL, Binding, MESSAGE_PATTERN, MESSAGE_TRACING};
use runtime::mpi::functions::Begun;
use runtime::mpi::{Comm, Message, MpiLayer, SelfComm};
use std::cell::Cell;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::OnceLock;

/// A registered binding and its functions' names.
struct Layer {
    binding: &'static Binding,
    functions: &'static [&'static str],
}

static LAYER: OnceLock<Layer> = OnceLock::new();

/// Takes `binding` as the process's MPI binding, unless one is already
/// registered. Refuses (logged) a binding of another layout.
///
/// # Safety
/// `binding` is NULL or points to a binding that lives as long as the
/// process, its names valid UTF-8 or not (lossily read).
unsafe fn register(binding: *const Binding) -> bool {
    // SAFETY: per the caller.
    let Some(binding) = (unsafe { binding.as_ref() }) else { return false };
    if binding.size != size_of::<Binding>() {
        runtime::log::error(format_args!(
            "libcaliper-mpi does not match this libcaliper (binding of {} bytes, expected {}): MPI support is off",
            binding.size,
            size_of::<Binding>()
        ));
        return false;
    }
    let mut registered = false;
    LAYER.get_or_init(|| {
        registered = true;
        // SAFETY: per the caller, `function_count` NUL-terminated names.
        let functions = unsafe { names(binding.functions, binding.function_count) };
        Layer { binding, functions: Vec::leak(functions) }
    });
    registered && LAYER.get().is_some_and(|layer| runtime::mpi::register_layer(layer))
}

/// `count` NUL-terminated names, one after the other from `first`.
///
/// # Safety
/// `first` points to `count` such names.
unsafe fn names(first: *const c_char, count: usize) -> Vec<&'static str> {
    let mut at = first;
    (0..count)
        .map(|_| {
            // SAFETY: per the caller, a name starts at `at`.
            let name = unsafe { CStr::from_ptr(at) };
            // SAFETY: the next name follows this one's NUL.
            at = unsafe { at.add(name.to_bytes().len() + 1) };
            &*String::leak(name.to_string_lossy().into_owned())
        })
        .collect()
}

/// Looks for libcaliper-mpi's binding among the program's loaded objects
/// and registers it: before the runtime starts, which may be before
/// libcaliper-mpi's own constructor has run.
pub(crate) fn discover() {
    if LAYER.get().is_some() {
        return;
    }
    // SAFETY: a lookup by a NUL-terminated name.
    let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, BINDING_SYMBOL.as_ptr()) };
    if found.is_null() {
        return;
    }
    // SAFETY: libcaliper-mpi's `cali_mpi_binding`, of this signature; it
    // returns a static binding, usable before its library's constructors.
    let binding = unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn() -> *const Binding>(found)() };
    // SAFETY: as above.
    unsafe { register(binding) };
}

impl MpiLayer for Layer {
    fn functions(&self) -> &'static [&'static str] {
        self.functions
    }

    fn set_enabled(&self, index: usize, on: bool) {
        // SAFETY: the binding's function; it checks the index.
        unsafe { (self.binding.set_enabled)(index, c_int::from(on)) }
    }

    fn is_finalized(&self) -> bool {
        self.state() == 2
    }

    fn world(&self) -> Option<Box<dyn Comm>> {
        if self.state() != 1 {
            return None;
        }
        match FLUSH_COMM.with(Cell::get) {
            None => Some(Box::new(Ranks { binding: self.binding, handle: None })),
            // SAFETY: a handle copied from the program's MPI_Comm.
            Some(h) if unsafe { (self.binding.is_null)(h.as_ptr().cast()) } != 0 => Some(Box::new(SelfComm)),
            Some(h) => Some(Box::new(Ranks { binding: self.binding, handle: Some(h) })),
        }
    }
}

impl Layer {
    /// MPI's state: 0 not initialised, 1 running, 2 finalised.
    fn state(&self) -> c_int {
        // SAFETY: MPI_Initialized and MPI_Finalized may be called at any time.
        unsafe { (self.binding.state)() }
    }
}

/// The bytes of an MPI handle (a pointer or an `int`).
type Handle = [u8; 8];

thread_local! {
    /// The program's communicator for the flush running on this thread
    /// ([`collective_flush`]), if not Caliper's own.
    static FLUSH_COMM: Cell<Option<Handle>> = const { Cell::new(None) };
}

/// Runs `flush` with cross-rank outputs reduced over the program's
/// communicator `comm` (a pointer to its `MPI_Comm`), on this thread.
/// Without a binding, `flush` runs on this rank alone.
///
/// # Safety
/// `comm` points to a valid `MPI_Comm`.
unsafe fn collective_flush(comm: *const c_void, flush: impl FnOnce()) {
    let Some(layer) = LAYER.get() else { return flush() };
    // SAFETY: the binding's answer, at most 8 (its header says so).
    let size = (unsafe { (layer.binding.handle_size)() }).clamp(0, 8) as usize;
    let mut handle = [0u8; 8];
    // SAFETY: the caller's handle is `size` bytes.
    unsafe { std::ptr::copy_nonoverlapping(comm.cast::<u8>(), handle.as_mut_ptr(), size) };
    let previous = FLUSH_COMM.with(|c| c.replace(Some(handle)));
    flush();
    FLUSH_COMM.with(|c| c.set(previous));
}

/// A communicator's ranks: Caliper's own (`None`) or the program's.
struct Ranks {
    binding: &'static Binding,
    handle: Option<Handle>,
}

/// The largest piece of a message sent at once (an MPI count is an `int`).
const PIECE: usize = 1 << 30;

impl Ranks {
    fn comm(&self) -> *const c_void {
        self.handle.as_ref().map_or(std::ptr::null(), |h| h.as_ptr().cast())
    }

    fn send_piece(&self, to: usize, piece: &[u8]) -> Result<(), String> {
        // SAFETY: a buffer of `piece.len()` bytes (at most PIECE) we own.
        match unsafe { (self.binding.send)(self.comm(), to as c_int, piece.as_ptr().cast(), piece.len() as c_int) } {
            0 => Ok(()),
            e => Err(format!("MPI_Send to rank {to} failed ({e})")),
        }
    }

    fn recv_piece(&self, from: usize, piece: &mut [u8]) -> Result<(), String> {
        // SAFETY: as above, written by the receive.
        match unsafe {
            (self.binding.recv)(self.comm(), from as c_int, piece.as_mut_ptr().cast(), piece.len() as c_int)
        } {
            0 => Ok(()),
            e => Err(format!("MPI_Recv from rank {from} failed ({e})")),
        }
    }
}

impl Comm for Ranks {
    fn rank(&self) -> usize {
        // SAFETY: MPI runs (a Ranks exists only then).
        unsafe { (self.binding.rank)(self.comm()) as usize }
    }

    fn size(&self) -> usize {
        // SAFETY: as above.
        unsafe { (self.binding.comm_size)(self.comm()) as usize }
    }

    /// The length (8 bytes), then the data in pieces.
    fn send(&self, to: usize, data: &[u8]) -> Result<(), String> {
        self.send_piece(to, &(data.len() as u64).to_le_bytes())?;
        data.chunks(PIECE).try_for_each(|piece| self.send_piece(to, piece))
    }

    fn recv(&self, from: usize) -> Result<Vec<u8>, String> {
        let mut length = [0u8; 8];
        self.recv_piece(from, &mut length)?;
        let mut data = vec![0u8; u64::from_le_bytes(length) as usize];
        data.chunks_mut(PIECE).try_for_each(|piece| self.recv_piece(from, piece))?;
        Ok(data)
    }
}

/// `cali_mpi_binding_register(binding)`: registers libcaliper-mpi's
/// binding (the first registration counts); non-zero if this one did.
///
/// # Safety
/// `binding` is NULL or a binding that lives as long as the process.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_mpi_binding_register(binding: *const Binding) -> c_int {
    // SAFETY: per the caller.
    guard("cali_mpi_binding_register", 0, || c_int::from(unsafe { register(binding) }))
}

/// `cali_mpi_call_begin(index)`: begins the `mpi.function` region of
/// wrapped function `index`; what it returns goes to the call's
/// `cali_mpi_call_end`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_call_begin(index: usize) -> *const c_void {
    guard("cali_mpi_call_begin", std::ptr::null(), || runtime::mpi::functions::begin(index).into_raw())
}

/// `cali_mpi_call_end(begun)`: ends the region of the wrapped call that
/// `cali_mpi_call_begin` began on this thread.
///
/// # Safety
/// `begun` is what this thread's `cali_mpi_call_begin` of the same call
/// returned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_mpi_call_end(begun: *const c_void) {
    // SAFETY: per the caller.
    guard("cali_mpi_call_end", (), || runtime::mpi::functions::end(unsafe { Begun::from_raw(begun) }))
}

/// `cali_mpi_initialized()`: after `MPI_Init`, `mpi.rank` and
/// `mpi.world.size`.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_initialized() {
    guard("cali_mpi_initialized", (), runtime::mpi::on_init)
}

/// `cali_mpi_finalizing()`: before `MPI_Finalize`, the outputs due.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_finalizing() {
    guard("cali_mpi_finalizing", (), runtime::mpi::finalize::on_finalize)
}

/// `cali_mpi_message_flags()`: whether the wrappers report messages
/// (`CALI_MPI_MESSAGE_TRACING`, `CALI_MPI_MESSAGE_PATTERN` bits).
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_message_flags() -> c_int {
    let tracing = if runtime::mpi::message_tracing() { MESSAGE_TRACING } else { 0 };
    let pattern = if runtime::mpi::message_pattern() { MESSAGE_PATTERN } else { 0 };
    tracing | pattern
}

/// `cali_mpi_message_sent(dst, tag, bytes)`: a completed send.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_message_sent(dst: i64, tag: i64, bytes: i64) {
    guard("cali_mpi_message_sent", (), || runtime::mpi::messages::record(Message::Sent { dst, tag, bytes }))
}

/// `cali_mpi_message_received(src, tag, bytes)`: a completed receive.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_message_received(src: i64, tag: i64, bytes: i64) {
    guard("cali_mpi_message_received", (), || runtime::mpi::messages::record(Message::Received { src, tag, bytes }))
}

/// `cali_mpi_message_collective(kind, root, bytes)`: a completed
/// collective (`root` negative: none).
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_message_collective(kind: i64, root: i64, bytes: i64) {
    guard("cali_mpi_message_collective", (), || {
        runtime::mpi::messages::record(Message::Collective { kind, root: (root >= 0).then_some(root), bytes })
    })
}

/// `cali_mpi_irecv_wait_gap(gap_ns)`: a posted receive completed `gap_ns`
/// after it was posted.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_irecv_wait_gap(gap_ns: u64) {
    guard("cali_mpi_irecv_wait_gap", (), || runtime::mpi::messages::irecv_wait_gap(gap_ns))
}

/// `cali_mpi_now_ns()`: now, on the runtime's clock.
#[unsafe(no_mangle)]
pub extern "C" fn cali_mpi_now_ns() -> u64 {
    guard("cali_mpi_now_ns", 0, runtime::mpi::messages::now_ns)
}

/// `cali_mpi_flush_on(comm, flush, arg)`: runs `flush(arg)` (which flushes
/// channels) with their cross-rank outputs reduced over the program's
/// communicator `*comm` instead of `MPI_COMM_WORLD` (`MPI_COMM_NULL`: this
/// rank alone).
///
/// # Safety
/// `comm` points to a valid `MPI_Comm`; `flush` is a valid function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_mpi_flush_on(
    comm: *const c_void,
    flush: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
) {
    let Some(flush) = flush.filter(|_| !comm.is_null()) else { return };
    // SAFETY: the caller's communicator and callback.
    guard("cali_mpi_flush_on", (), || unsafe { collective_flush(comm, || flush(arg)) })
}

/// `cali_mpi_flush_to_stream(comm, flush, arg, write, stream)`: as
/// `cali_mpi_flush_on`, with the outputs that `flush(arg)` writes (on the
/// rank that writes them: rank 0 of `*comm`) handed to
/// `write(stream, text, length)` instead of their streams or files.
///
/// # Safety
/// As `cali_mpi_flush_on`; `write` is a valid function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cali_mpi_flush_to_stream(
    comm: *const c_void,
    flush: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize)>,
    stream: *mut c_void,
) {
    let (Some(flush), Some(write)) = (flush.filter(|_| !comm.is_null()), write) else { return };
    guard("cali_mpi_flush_to_stream", (), || {
        // SAFETY: the caller's communicator and callback.
        let text = runtime::capture_output(|| unsafe { collective_flush(comm, || flush(arg)) });
        if !text.is_empty() {
            // SAFETY: the caller's callback, given our buffer and its length.
            unsafe { write(stream, text.as_ptr().cast(), text.len()) };
        }
    })
}
