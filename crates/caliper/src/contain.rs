//! Containing a fault in one service: a panic while a service writes its
//! output (a formatter given data it did not expect, say) must cost that
//! output only, not the other services' outputs nor the host program, and
//! must read as one `== CALIPER: ` line, not as Rust's panic report.

use crate::log;
use std::cell::{Cell, RefCell};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

thread_local! {
    /// Set while the calling thread runs contained work: the panic hook
    /// keeps the message here instead of printing it.
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
    static MESSAGE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `work`; a panic in it is caught and logged as one line,
/// `<what>: internal error: <panic message>`, and gives `None`.
pub fn contain<R>(what: &str, work: impl FnOnce() -> R) -> Option<R> {
    install_hook();
    let outer = CONTAINED.with(|c| c.replace(true));
    let result = catch_unwind(AssertUnwindSafe(work));
    CONTAINED.with(|c| c.set(outer));
    match result {
        Ok(r) => Some(r),
        Err(_) => {
            let message = MESSAGE.with(|m| m.borrow_mut().take()).unwrap_or_default();
            log::error(&format!("{what}: internal error: {message}"));
            None
        }
    }
}

/// Chains a hook in front of the one in place (the host program's, or
/// Rust's default): panics outside contained work reach it unchanged.
fn install_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CONTAINED.with(Cell::get) {
                return previous(info);
            }
            let payload = info.payload();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let location = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
            let _ = MESSAGE.try_with(|m| *m.borrow_mut() = Some(format!("{}{location}", text.replace('\n', " "))));
        }));
    });
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
        assert!(MESSAGE.with(|m| m.borrow().is_none()));
        // Nested contained work restores the outer state.
        assert_eq!(contain("outer", || contain("inner", || panic!("inner fault")).is_none()), Some(true));
        assert!(!CONTAINED.with(Cell::get));
    }
}
