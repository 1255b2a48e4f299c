//! CUPTI activity records as `cuptitrace` keeps them: decoded from
//! CUPTI's buffers as they complete (kernel names copied, as CUPTI owns
//! its strings), so that a flush needs neither the buffers nor CUPTI.
//!
//! The offsets are those of `cupti_activity.h`; the fields read are at
//! the same places in every version of each record since CUDA 11
//! (`CUpti_ActivityKernel4` to `9`, `CUpti_ActivityMemcpy5` and `6`,
//! `CUpti_ActivityMemset3` and `4`, `CUpti_ActivitySynchronization`
//! and `2`), which CUPTI delivers as its release has them.

use std::ffi::{CStr, c_char};
use std::sync::Arc;

/// `CUpti_ActivityKind` values this service records or reads.
pub mod kind {
    /// `CUPTI_ACTIVITY_KIND_MEMCPY`.
    pub const MEMCPY: u32 = 1;
    /// `CUPTI_ACTIVITY_KIND_MEMSET`.
    pub const MEMSET: u32 = 2;
    /// `CUPTI_ACTIVITY_KIND_KERNEL` (kernels serialised).
    pub const KERNEL: u32 = 3;
    /// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`.
    pub const CONCURRENT_KERNEL: u32 = 10;
    /// `CUPTI_ACTIVITY_KIND_SYNCHRONIZATION`.
    pub const SYNCHRONIZATION: u32 = 38;
}

/// What an activity did, beyond its times.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    /// A kernel ran; its name as the launch gave it (mangled in C++).
    Kernel(Arc<str>),
    /// Memory was copied, in this direction.
    Memcpy { direction: &'static str, bytes: u64 },
    /// Memory was set.
    Memset { bytes: u64 },
    /// The host waited for the device.
    Synchronization,
}

impl Work {
    /// The `cupti.activity.kind` value.
    pub fn kind(&self) -> &'static str {
        match self {
            Work::Kernel(_) => "kernel",
            Work::Memcpy { .. } => "memcpy",
            Work::Memset { .. } => "memset",
            Work::Synchronization => "synchronization",
        }
    }
}

/// An activity on the device, in CUPTI's clock (ns).
#[derive(Clone, Debug, PartialEq)]
pub struct Activity {
    pub work: Work,
    pub start: u64,
    pub end: u64,
    pub device: u32,
    pub context: u32,
    pub stream: u32,
    /// The id of the API call that started it (as the call's callback
    /// saw it), which ties it to the host's context.
    pub correlation: u32,
}

/// The direction names of `CUpti_ActivityMemcpyKind`, by value.
const MEMCPY_KINDS: [&str; 11] =
    ["<unknown>", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"];

fn u32_at(record: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(record.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(record: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(record.get(at..at + 8)?.try_into().ok()?))
}

/// The bytes of a record of kind `kind` that [`decode`] reads.
pub fn size_read(kind: u32) -> usize {
    match kind {
        kind::KERNEL | kind::CONCURRENT_KERNEL => 112,
        kind::MEMCPY | kind::MEMSET => 48,
        kind::SYNCHRONIZATION => 36,
        _ => 4,
    }
}

/// Where a record's fields are.
struct Layout {
    start: usize,
    /// `None`: the record has no device id.
    device: Option<usize>,
    context: usize,
    stream: usize,
    correlation: usize,
}

const KERNEL: Layout = Layout { start: 16, device: Some(40), context: 44, stream: 48, correlation: 92 };
/// Copies and sets.
const MEMORY: Layout = Layout { start: 16, device: Some(32), context: 36, stream: 40, correlation: 44 };
const SYNCHRONIZATION: Layout = Layout { start: 8, device: None, context: 28, stream: 32, correlation: 24 };

impl Layout {
    fn activity(&self, record: &[u8], work: Work) -> Option<Activity> {
        Some(Activity {
            work,
            start: u64_at(record, self.start)?,
            end: u64_at(record, self.start + 8)?,
            device: match self.device {
                Some(at) => u32_at(record, at)?,
                None => u32::MAX,
            },
            context: u32_at(record, self.context)?,
            stream: u32_at(record, self.stream)?,
            correlation: u32_at(record, self.correlation)?,
        })
    }
}

/// Decodes the first [`size_read`] bytes of a record; `None` for kinds
/// this service does not record.
///
/// # Safety
/// A kernel record's name field must be null or point to a NUL-terminated
/// string (as in CUPTI's records).
pub unsafe fn decode(record: &[u8]) -> Option<Activity> {
    match u32_at(record, 0)? {
        kind::KERNEL | kind::CONCURRENT_KERNEL => {
            // Checked before the name is read: a short record has none.
            u32_at(record, KERNEL.correlation)?;
            let name = u64_at(record, 104)? as usize as *const c_char;
            let name: Arc<str> = if name.is_null() {
                Arc::from("<unknown>")
            } else {
                // SAFETY: the caller's promise.
                Arc::from(unsafe { CStr::from_ptr(name) }.to_string_lossy())
            };
            KERNEL.activity(record, Work::Kernel(name))
        }
        kind::MEMCPY => {
            let direction = MEMCPY_KINDS.get(usize::from(*record.get(4)?)).copied().unwrap_or(MEMCPY_KINDS[0]);
            MEMORY.activity(record, Work::Memcpy { direction, bytes: u64_at(record, 8)? })
        }
        kind::MEMSET => MEMORY.activity(record, Work::Memset { bytes: u64_at(record, 8)? }),
        kind::SYNCHRONIZATION => SYNCHRONIZATION.activity(record, Work::Synchronization),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `size` bytes of kind `kind`, with `fields` (offset,
    /// bytes) written in.
    fn record(kind: u32, size: usize, fields: &[(usize, &[u8])]) -> Vec<u8> {
        let mut r = vec![0u8; size];
        r[..4].copy_from_slice(&kind.to_ne_bytes());
        for &(at, bytes) in fields {
            r[at..at + bytes.len()].copy_from_slice(bytes);
        }
        r
    }

    #[test]
    fn a_kernel_record_gives_its_times_ids_and_name() {
        // CUpti_ActivityKernel9 (208 bytes) as CUPTI 12.9 writes it.
        let name = c"_Z6scalePfi";
        let r = record(
            kind::CONCURRENT_KERNEL,
            208,
            &[
                (16, &1_000u64.to_ne_bytes()),
                (24, &4_500u64.to_ne_bytes()),
                (40, &1u32.to_ne_bytes()),
                (44, &2u32.to_ne_bytes()),
                (48, &7u32.to_ne_bytes()),
                (92, &42u32.to_ne_bytes()),
                (104, &(name.as_ptr() as u64).to_ne_bytes()),
            ],
        );
        let decoded = unsafe { decode(&r[..size_read(kind::CONCURRENT_KERNEL)]) };
        assert_eq!(
            decoded,
            Some(Activity {
                work: Work::Kernel(Arc::from("_Z6scalePfi")),
                start: 1_000,
                end: 4_500,
                device: 1,
                context: 2,
                stream: 7,
                correlation: 42,
            })
        );
    }

    #[test]
    fn a_memcpy_record_gives_its_direction_and_bytes() {
        // CUpti_ActivityMemcpy6: copyKind at 4, bytes at 8.
        let r = record(
            kind::MEMCPY,
            96,
            &[
                (4, &[2]),
                (8, &(1u64 << 20).to_ne_bytes()),
                (16, &10u64.to_ne_bytes()),
                (24, &30u64.to_ne_bytes()),
                (32, &0u32.to_ne_bytes()),
                (36, &1u32.to_ne_bytes()),
                (40, &13u32.to_ne_bytes()),
                (44, &9u32.to_ne_bytes()),
            ],
        );
        let Some(a) = (unsafe { decode(&r) }) else { panic!("not decoded") };
        assert_eq!(a.work, Work::Memcpy { direction: "DtoH", bytes: 1 << 20 });
        assert_eq!((a.start, a.end, a.device, a.context, a.stream, a.correlation), (10, 30, 0, 1, 13, 9));
        assert_eq!(a.work.kind(), "memcpy");
    }

    #[test]
    fn an_unknown_copy_direction_is_named_unknown() {
        let r = record(kind::MEMCPY, 96, &[(4, &[200])]);
        let Some(a) = (unsafe { decode(&r) }) else { panic!("not decoded") };
        assert_eq!(a.work, Work::Memcpy { direction: "<unknown>", bytes: 0 });
    }

    #[test]
    fn a_synchronization_record_has_its_context_and_stream() {
        // CUpti_ActivitySynchronization2: start 8, end 16, correlationId 24, contextId 28, streamId 32.
        let r = record(
            kind::SYNCHRONIZATION,
            56,
            &[
                (8, &5u64.to_ne_bytes()),
                (16, &9u64.to_ne_bytes()),
                (24, &3u32.to_ne_bytes()),
                (28, &1u32.to_ne_bytes()),
                (32, &4u32.to_ne_bytes()),
            ],
        );
        let Some(a) = (unsafe { decode(&r) }) else { panic!("not decoded") };
        assert_eq!((a.start, a.end, a.correlation, a.context, a.stream), (5, 9, 3, 1, 4));
    }

    #[test]
    fn other_kinds_and_short_records_are_skipped() {
        assert_eq!(unsafe { decode(&record(5, 40, &[])) }, None);
        assert_eq!(unsafe { decode(&record(kind::MEMCPY, 20, &[])) }, None);
        assert_eq!(unsafe { decode(&[1, 0]) }, None);
    }
}
