//! Containing a fault in one service: a panic while a service writes its
//! output (a formatter given data it did not expect, say) must cost that
//! output only, not the other services' outputs nor the host program, and
//! must read as one `== CALIPER: ` line, not as Rust's panic report.

use crate::log;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex};

thread_local! {
    /// Set while the calling thread runs contained work: the panic hook
    /// keeps the message in [`MESSAGE`] instead of printing it. (No
    /// destructor: at exit, the flush runs after the exiting thread's
    /// thread-locals with destructors are gone.)
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// The message of the last contained panic.
static MESSAGE: Mutex<Option<String>> = Mutex::new(None);

/// Runs `work`; a panic in it is caught and logged as one line,
/// `<what>: internal error: <panic message>`, and gives `None`.
pub fn contain<R>(what: &str, work: impl FnOnce() -> R) -> Option<R> {
    let hook = QuietHook::install();
    let outer = CONTAINED.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(work));
    CONTAINED.with(|c| c.set(outer));
    drop(hook);
    match result {
        Ok(r) => Some(r),
        Err(_) => {
            let message = MESSAGE.lock().map(|mut m| m.take()).ok().flatten().unwrap_or_default();
            log::error(format_args!("{what}: internal error: {message}"));
            None
        }
    }
}

/// A panic as one line: its message (newlines made spaces) and where it
/// happened, ` at file:line`.
pub fn describe_panic(info: &std::panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
    format!("{}{location}", text.replace('\n', " "))
}

type Hook = Box<dyn Fn(&std::panic::PanicHookInfo<'_>) + Sync + Send + 'static>;

/// A panic hook in front of the one in place (the host program's, or
/// Rust's default) for as long as it lives: panics outside contained work
/// reach that one unchanged. Put in place for each piece of contained work
/// rather than once, because the host may set its own hook at any time.
struct QuietHook {
    previous: Option<Arc<Hook>>,
}

impl QuietHook {
    fn install() -> QuietHook {
        // The hook cannot be changed while the thread panics.
        if std::thread::panicking() {
            return QuietHook { previous: None };
        }
        let previous = Arc::new(std::panic::take_hook());
        let chained = previous.clone();
        std::panic::set_hook(Box::new(move |info| {
            if !CONTAINED.with(Cell::get) {
                return chained(info);
            }
            if let Ok(mut message) = MESSAGE.try_lock() {
                *message = Some(describe_panic(info));
            }
        }));
        QuietHook { previous: Some(previous) }
    }
}

impl Drop for QuietHook {
    fn drop(&mut self) {
        let Some(previous) = self.previous.take() else { return };
        if std::thread::panicking() {
            return;
        }
        // Dropping this hook drops its share of the previous one.
        drop(std::panic::take_hook());
        if let Ok(previous) = Arc::try_unwrap(previous) {
            std::panic::set_hook(previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_none_and_work_that_succeeds_returns_its_value() {
        assert_eq!(contain("test", || 42), Some(42));
        let caught: Option<()> = contain("test", || panic!("formatter fault"));
        assert_eq!(caught, None);
        // The message was taken for the log line, not left for the next one.
        assert!(MESSAGE.lock().unwrap().is_none());
        // Nested contained work restores the outer state.
        assert_eq!(contain("outer", || contain("inner", || panic!("inner fault")).is_none()), Some(true));
        assert!(!CONTAINED.with(Cell::get));
    }
}
