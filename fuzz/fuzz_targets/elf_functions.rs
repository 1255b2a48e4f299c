//! Fuzzes cali-run's function discovery: any bytes read as an ELF file
//! give its functions (from symbols, unwind tables and the PLT) and their
//! branch targets, or an error, never a panic.

#![no_main]

use caliper_dbi::discover;
use caliper_dbi::relocate::BranchTargets;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(info) = discover::discover(data) {
        let code = [(0u64, data)];
        let targets = BranchTargets::scan(&code, info.functions.iter().map(|f| (f.address, f.size)));
        let _ = targets.into_range(0, 5);
    }
});
