//! CUPTI's C interface, as `cupti.h` declares it (CUDA 11 to 13), loaded
//! with `dlopen` the first time a channel enables `cupti` or `cuptitrace`,
//! so that `libcaliper` never requires CUDA. The library is looked for by
//! the loader's search (`LD_LIBRARY_PATH`), then in the CUDA toolkit's
//! usual places (`$CUDA_HOME`, `/usr/local/cuda`).

use crate::dynlib::{open_first, symbol};
use std::ffi::{CStr, CString, c_char, c_void};
use std::sync::OnceLock;

/// `CUptiResult`.
pub type Status = u32;
/// `CUPTI_SUCCESS`.
pub const SUCCESS: Status = 0;

/// `CUpti_CallbackDomain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u32)]
pub enum Domain {
    /// CUDA driver API calls (`cu*`).
    Driver = 1,
    /// CUDA runtime API calls (`cuda*`).
    Runtime = 2,
    /// Contexts and streams created and destroyed.
    Resource = 3,
    /// Context and stream synchronisations.
    Synchronize = 4,
    /// NVTX calls of the program.
    Nvtx = 5,
}

impl Domain {
    /// The domain of a callback's `domain` argument.
    pub fn from_raw(raw: u32) -> Option<Domain> {
        [Domain::Driver, Domain::Runtime, Domain::Resource, Domain::Synchronize, Domain::Nvtx]
            .into_iter()
            .find(|&d| d as u32 == raw)
    }
}

/// `CUPTI_API_ENTER`: a callback of an API domain before the call.
pub const API_ENTER: u32 = 0;

/// `CUPTI_CBID_RESOURCE_*` of the resource domain.
pub mod resource {
    /// A context was created.
    pub const CONTEXT_CREATED: u32 = 1;
    /// A context is about to be destroyed.
    pub const CONTEXT_DESTROY_STARTING: u32 = 2;
    /// A stream was created.
    pub const STREAM_CREATED: u32 = 3;
    /// A stream is about to be destroyed.
    pub const STREAM_DESTROY_STARTING: u32 = 4;
}

/// `CUPTI_CBID_SYNCHRONIZE_*` of the synchronisation domain.
pub mod synchronize {
    /// A stream synchronisation finished.
    pub const STREAM_SYNCHRONIZED: u32 = 1;
    /// A context synchronisation finished.
    pub const CONTEXT_SYNCHRONIZED: u32 = 2;
}

/// `CUPTI_CBID_NVTX_*` of the NVTX domain that open and close ranges.
pub mod nvtx {
    /// `nvtxRangePushA(message)`.
    pub const RANGE_PUSH_A: u32 = 8;
    /// `nvtxRangePushEx(attributes)`.
    pub const RANGE_PUSH_EX: u32 = 10;
    /// `nvtxRangePop()`.
    pub const RANGE_POP: u32 = 11;
}

/// `CUpti_CallbackData`: what an API callback gets (driver and runtime
/// domains).
#[repr(C)]
pub struct CallbackData {
    /// `CUPTI_API_ENTER` or `CUPTI_API_EXIT`.
    pub site: u32,
    /// The API function's name.
    pub function_name: *const c_char,
    pub function_params: *const c_void,
    pub return_value: *mut c_void,
    /// The kernel's name, for launches; otherwise null.
    pub symbol_name: *const c_char,
    pub context: *mut c_void,
    pub context_uid: u32,
    pub correlation_data: *mut u64,
    pub correlation_id: u32,
}

/// `CUpti_ResourceData`: a context or stream created or destroyed.
#[repr(C)]
pub struct ResourceData {
    pub context: *mut c_void,
    /// The stream, for stream events.
    pub stream: *mut c_void,
    pub descriptor: *mut c_void,
}

/// `CUpti_SynchronizeData`: a context or stream synchronised.
#[repr(C)]
pub struct SynchronizeData {
    pub context: *mut c_void,
    pub stream: *mut c_void,
}

/// `CUpti_NvtxData`: an NVTX call.
#[repr(C)]
pub struct NvtxData {
    pub function_name: *const c_char,
    /// The call's parameters (`nvtxRangePushA_params`: the message;
    /// `nvtxRangePushEx_params`: the event attributes).
    pub function_params: *const c_void,
    pub return_value: *const c_void,
}

/// `nvtxEventAttributes_t` up to its message (NVTX 2 and 3).
#[repr(C)]
pub struct NvtxEventAttributes {
    pub version: u16,
    pub size: u16,
    pub category: u32,
    pub color_type: i32,
    pub color: u32,
    pub payload_type: i32,
    pub reserved0: i32,
    pub payload: u64,
    /// `NVTX_MESSAGE_TYPE_ASCII` (1): `message` is a `char*`.
    pub message_type: i32,
    pub message: *const c_void,
}

/// `NVTX_MESSAGE_TYPE_ASCII`.
pub const NVTX_MESSAGE_ASCII: i32 = 1;

/// `CUpti_CallbackFunc`.
pub type Callback = unsafe extern "C" fn(userdata: *mut c_void, domain: u32, cbid: u32, data: *const c_void);
/// `CUpti_BuffersCallbackRequestFunc`.
pub type BufferRequest = unsafe extern "C" fn(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize);
/// `CUpti_BuffersCallbackCompleteFunc`.
pub type BufferComplete =
    unsafe extern "C" fn(context: *mut c_void, stream: u32, buffer: *mut u8, size: usize, valid: usize);

/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED`: flush incomplete buffers too.
pub const FLUSH_FORCED: u32 = 1;

/// The library's functions this runtime calls.
pub struct Cupti {
    subscribe: unsafe extern "C" fn(*mut *mut c_void, Callback, *mut c_void) -> Status,
    enable_domain: unsafe extern "C" fn(u32, *mut c_void, u32) -> Status,
    result_string: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
    activity_enable: unsafe extern "C" fn(u32) -> Status,
    register_callbacks: unsafe extern "C" fn(BufferRequest, BufferComplete) -> Status,
    flush_all: unsafe extern "C" fn(u32) -> Status,
    next_record: unsafe extern "C" fn(*mut u8, usize, *mut *mut u8) -> Status,
    /// Optional, as the functions below it: a release without them still
    /// records what the others give.
    dropped_records: Option<unsafe extern "C" fn(*mut c_void, u32, *mut usize) -> Status>,
    timestamp: unsafe extern "C" fn(*mut u64) -> Status,
    context_id: unsafe extern "C" fn(*mut c_void, *mut u32) -> Status,
    device_id: unsafe extern "C" fn(*mut c_void, *mut u32) -> Status,
    /// `cuptiGetStreamIdEx` (CUDA 11.3 on), else `cuptiGetStreamId`
    /// (deprecated since).
    stream_id: StreamId,
}

/// The function that names a stream.
#[derive(Clone, Copy)]
enum StreamId {
    Ex(unsafe extern "C" fn(*mut c_void, *mut c_void, u8, *mut u32) -> Status),
    Plain(unsafe extern "C" fn(*mut c_void, *mut c_void, *mut u32) -> Status),
    Missing,
}

/// A subscription's handle (`CUpti_SubscriberHandle`).
#[derive(Clone, Copy)]
pub struct Subscriber(*mut c_void);

// SAFETY: an opaque handle CUPTI takes from any thread.
unsafe impl Send for Subscriber {}
// SAFETY: as above.
unsafe impl Sync for Subscriber {}

/// Where CUDA toolkits put CUPTI, below their root.
const TOOLKIT_DIRS: [&str; 3] = ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"];

/// The names `libcupti` is looked for by: the loader's search first, then
/// the toolkit's directories.
fn library_names() -> Vec<CString> {
    let mut names: Vec<CString> =
        [c"libcupti.so", c"libcupti.so.13", c"libcupti.so.12", c"libcupti.so.11"].map(CStr::to_owned).into();
    let roots = ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"].iter().filter_map(std::env::var_os).map(Into::into);
    for root in roots.chain([std::path::PathBuf::from("/usr/local/cuda")]) {
        for dir in TOOLKIT_DIRS {
            if let Ok(path) = CString::new(root.join(dir).join("libcupti.so").into_os_string().into_encoded_bytes()) {
                names.push(path);
            }
        }
    }
    names
}

impl Cupti {
    /// CUPTI, loaded on the first call; later calls get the same library,
    /// or the same reason it is not there.
    pub fn get() -> Result<&'static Cupti, String> {
        static CUPTI: OnceLock<Result<Cupti, String>> = OnceLock::new();
        CUPTI.get_or_init(Cupti::load).as_ref().map_err(String::clone)
    }

    fn load() -> Result<Cupti, String> {
        let names = library_names();
        let (handle, _) = open_first(names.iter().map(CString::as_c_str))
            .ok_or("CUPTI library (libcupti.so) not found: add CUDA's extras/CUPTI/lib64 to LD_LIBRARY_PATH")?;
        let lib = "libcupti";
        // SAFETY: each name with its signature in cupti.h.
        unsafe {
            Ok(Cupti {
                subscribe: symbol(handle, c"cuptiSubscribe", lib)?,
                enable_domain: symbol(handle, c"cuptiEnableDomain", lib)?,
                result_string: symbol(handle, c"cuptiGetResultString", lib)?,
                activity_enable: symbol(handle, c"cuptiActivityEnable", lib)?,
                register_callbacks: symbol(handle, c"cuptiActivityRegisterCallbacks", lib)?,
                flush_all: symbol(handle, c"cuptiActivityFlushAll", lib)?,
                next_record: symbol(handle, c"cuptiActivityGetNextRecord", lib)?,
                dropped_records: symbol(handle, c"cuptiActivityGetNumDroppedRecords", lib).ok(),
                timestamp: symbol(handle, c"cuptiGetTimestamp", lib)?,
                context_id: symbol(handle, c"cuptiGetContextId", lib)?,
                device_id: symbol(handle, c"cuptiGetDeviceId", lib)?,
                stream_id: match symbol(handle, c"cuptiGetStreamIdEx", lib) {
                    Ok(ex) => StreamId::Ex(ex),
                    Err(_) => symbol(handle, c"cuptiGetStreamId", lib).map_or(StreamId::Missing, StreamId::Plain),
                },
            })
        }
    }

    /// CUPTI's words for `status`, with the function that returned it.
    pub fn error(&self, function: &str, status: Status) -> String {
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI writes a pointer to a static string.
        let known = unsafe { (self.result_string)(status, &mut text) } == SUCCESS && !text.is_null();
        let text = if known {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        } else {
            format!("error {status}")
        };
        format!("{function}: {text}")
    }

    fn check(&self, function: &str, status: Status) -> Result<(), String> {
        if status == SUCCESS { Ok(()) } else { Err(self.error(function, status)) }
    }

    /// Subscribes `callback` (CUPTI takes one subscriber per process).
    pub fn subscribe(&self, callback: Callback) -> Result<Subscriber, String> {
        let mut handle = std::ptr::null_mut();
        // SAFETY: a place for the handle and a callback of CUPTI's signature.
        self.check("cuptiSubscribe", unsafe { (self.subscribe)(&mut handle, callback, std::ptr::null_mut()) })?;
        Ok(Subscriber(handle))
    }

    /// Makes CUPTI call the subscriber for every function of `domain`.
    pub fn enable_domain(&self, subscriber: Subscriber, domain: Domain) -> Result<(), String> {
        // SAFETY: a handle `subscribe` returned.
        self.check("cuptiEnableDomain", unsafe { (self.enable_domain)(1, subscriber.0, domain as u32) })
    }

    /// Hands CUPTI the functions that give it buffers and take them back
    /// full.
    pub fn register_buffers(&self, request: BufferRequest, complete: BufferComplete) -> Result<(), String> {
        // SAFETY: two callbacks of CUPTI's signatures.
        self.check("cuptiActivityRegisterCallbacks", unsafe { (self.register_callbacks)(request, complete) })
    }

    /// Starts recording activities of `kind` (`CUpti_ActivityKind`).
    pub fn enable_activity(&self, kind: u32) -> Result<(), String> {
        // SAFETY: a plain value.
        self.check("cuptiActivityEnable", unsafe { (self.activity_enable)(kind) })
    }

    /// Hands every buffer with records to the completion callback, before
    /// returning.
    pub fn flush_all(&self) -> Result<(), String> {
        // SAFETY: a plain flag.
        self.check("cuptiActivityFlushAll", unsafe { (self.flush_all)(FLUSH_FORCED) })
    }

    /// The records of a completed buffer's first `valid` bytes.
    ///
    /// # Safety
    /// `buffer` must be a buffer CUPTI completed, with `valid` bytes of
    /// records, alive for the iteration.
    pub unsafe fn records(&self, buffer: *mut u8, valid: usize) -> impl Iterator<Item = *const u8> + '_ {
        let mut record: *mut u8 = std::ptr::null_mut();
        std::iter::from_fn(move || {
            // SAFETY: the caller's buffer; CUPTI moves `record` along it.
            let status = unsafe { (self.next_record)(buffer, valid, &mut record) };
            (status == SUCCESS && !record.is_null()).then_some(record.cast_const())
        })
    }

    /// The records CUPTI dropped for want of buffer space, in `context`'s
    /// `stream` (a completed buffer's).
    pub fn dropped(&self, context: *mut c_void, stream: u32) -> usize {
        let Some(dropped_records) = self.dropped_records else { return 0 };
        let mut dropped = 0;
        // SAFETY: the context and stream of a completed buffer.
        let status = unsafe { dropped_records(context, stream, &mut dropped) };
        if status == SUCCESS { dropped } else { 0 }
    }

    /// CUPTI's clock, in ns: the clock of the activities' start and end.
    pub fn timestamp(&self) -> u64 {
        let mut now = 0;
        // SAFETY: a place for the time.
        unsafe { (self.timestamp)(&mut now) };
        now
    }

    /// The ids of `context` and its device.
    pub fn context_ids(&self, context: *mut c_void) -> (u32, u32) {
        let (mut context_id, mut device_id) = (0, 0);
        // SAFETY: a context CUPTI handed to a callback, places for the ids.
        unsafe {
            (self.context_id)(context, &mut context_id);
            (self.device_id)(context, &mut device_id);
        }
        (context_id, device_id)
    }

    /// The id of `stream` in `context`.
    pub fn stream_id(&self, context: *mut c_void, stream: *mut c_void) -> u32 {
        let mut id = 0;
        // SAFETY: a context and stream CUPTI handed to a callback (not a
        // per-thread default stream: the callbacks name it by handle).
        unsafe {
            match self.stream_id {
                StreamId::Ex(ex) => ex(context, stream, 0, &mut id),
                StreamId::Plain(plain) => plain(context, stream, &mut id),
                StreamId::Missing => SUCCESS,
            }
        };
        id
    }
}
