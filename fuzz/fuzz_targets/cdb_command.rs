//! Fuzzes the command parser of cdb (`cali-run debug`): any line gives a
//! command or an error with a message, never a panic.

#![no_main]

use caliper_dbi::debugger::command;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    if let Err(e) = command::parse(line) {
        assert!(!e.to_string().is_empty(), "an empty message for {line:?}");
    }
});
