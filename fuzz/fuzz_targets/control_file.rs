//! Fuzzes cali-run's control-file parser: any text gives a control or an
//! error whose line and column are inside the text, never a panic.

#![no_main]

use caliper_dbi::control;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = control::parse("fuzz.ctl", text) {
        let line = text.lines().nth(e.line - 1).unwrap_or_else(|| panic!("line {} outside {text:?}", e.line));
        assert!(e.column >= 1 && e.column <= line.len() + 1, "{e} for {line:?}");
    }
});
