//! Entries that cannot take a 5-byte jump (too short, or a branch target
//! in their first bytes, as the C library's memmove is of mempcpy, or a
//! loop's head) are counted by a trampoline reached through a short jump
//! into padding: the counts are exact and the program stops for the tool
//! about as often at a thousand calls as at a hundred thousand.

mod common;

use common::{build, read_result, run_in, traps};
use std::path::Path;
use std::sync::OnceLock;

/// The directory holding `short_entry`, `memcpy_loop` (built with
/// `-fno-builtin`, so that each copy is a call of the C library's) and
/// `packed` with `libpacked.so` (built with `-Os`).
fn programs() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        build(dir.path(), "short_entry", &[]);
        build(dir.path(), "memcpy_loop", &["-fno-builtin"]);
        let packed = common::source("packed.c");
        let packed = packed.to_str().unwrap();
        common::gcc(dir.path(), &["-Os", "-shared", "-fPIC", "-DLIBRARY", "-o", "libpacked.so", packed]);
        common::gcc(dir.path(), &["-Os", "-o", "packed", packed, "-L.", "-lpacked", "-Wl,-rpath,$ORIGIN"]);
        dir
    })
    .path()
}

/// Runs `program calls` under `collect` in the programs' directory: its
/// output, the result rows and the traps.
fn measure(
    collect: &str,
    program: &str,
    calls: u64,
) -> (String, std::collections::HashMap<(String, String), common::Row>, u64) {
    let out = tempfile::tempdir().unwrap();
    let file = out.path().join("result.cali");
    let calls = calls.to_string();
    let output = run_in(programs(), &["-c", collect, "-o", file.to_str().unwrap()], program, &[&calls]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{program} {calls}: {stderr}");
    (String::from_utf8_lossy(&output.stdout).into_owned(), read_result(&file), traps(&file))
}

/// Checks that the traps of a run of 100,000 calls are those of a run of
/// 1,000 (a trap per call would add 99,000 or more). The C library's own
/// start-up calls a function or two more or less as the address layout
/// falls (`mmap` beside `brk`), each a first-call trap, hence the slack.
fn assert_no_trap_per_call(traps: &[u64]) {
    let (few, many) = (traps[0], traps[1]);
    assert!(many.abs_diff(few) <= 8, "{few} traps at 1,000 calls, {many} at 100,000");
}

/// What `short_entry N` prints.
fn short_entry_sum(calls: u64) -> i64 {
    let calls: i64 =
        (0..calls as i64).map(|i| i & 1023).map(|x| (x + 1) + (x + 5) + (x + 2 + 3) + (x + 3) + (x + 7)).sum();
    // count_down returns 0; big and big2 (of 0) 61 and 120.
    calls + 61 + 120
}

#[test]
fn short_and_shared_entries_count_every_call_without_a_trap_each() {
    let mut traps_per_run = Vec::new();
    for calls in [1000, 100_000] {
        let (stdout, rows, traps) = measure("fcount", "./short_entry", calls);
        assert_eq!(stdout, format!("{}\n", short_entry_sum(calls)), "the program's own result");
        for function in ["inc4", "add5", "shared_plus", "shared", "pick", "count_down"] {
            let row = &rows[&("short_entry".into(), function.into())];
            assert_eq!(row.count, Some(calls), "{function}: {row:?}");
            assert_eq!(row.instrumentation, "trampoline", "{function}");
        }
        traps_per_run.push(traps);
    }
    assert_no_trap_per_call(&traps_per_run);
}

#[test]
fn arcs_of_short_and_shared_entries_are_counted_in_their_trampolines() {
    let mut traps_per_run = Vec::new();
    for calls in [1000, 100_000] {
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("arcs.cali");
        let calls_arg = calls.to_string();
        let output = run_in(programs(), &["-c", "arcs", "-o", file.to_str().unwrap()], "./short_entry", &[&calls_arg]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        for function in ["inc4", "shared", "count_down"] {
            let arcs = common::query(
                &file,
                &format!("select dbi.count where dbi.caller=main,dbi.function={function} format expand"),
            );
            assert_eq!(arcs.trim(), format!("dbi.count={calls}"), "main -> {function}");
        }
        traps_per_run.push(traps(&file));
    }
    assert_no_trap_per_call(&traps_per_run);
}

#[test]
fn memcpy_counts_every_call_without_a_trap_each() {
    let mut traps_per_run = Vec::new();
    for calls in [1000, 100_000] {
        let (_, rows, traps) = measure("fcount", "./memcpy_loop", calls);
        assert_eq!(rows[&("memcpy_loop".into(), "memcpy@plt".into())].count, Some(calls));
        // The C library's memcpy, whichever the processor selects.
        let copies: Vec<_> =
            rows.iter().filter(|((module, _), row)| module == "libc.so.6" && row.count == Some(calls)).collect();
        assert_eq!(copies.len(), 1, "one C library function called for each copy: {copies:?}");
        assert_eq!(copies[0].1.instrumentation, "trampoline", "{copies:?}");
        traps_per_run.push(traps);
    }
    assert_no_trap_per_call(&traps_per_run);
}

/// The hexadecimal number after `prefix` in `text`.
fn hex_after(text: &str, prefix: &str) -> u64 {
    let start = text.find(prefix).unwrap_or_else(|| panic!("`{prefix}` in:\n{text}")) + prefix.len();
    let digits: String = text[start..].trim_start_matches("0x").chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).unwrap()
}

#[test]
fn a_breakpoint_on_a_shared_entry_stops_each_call_and_the_listing_shows_the_short_jump() {
    let mut command = common::cali_run();
    command.current_dir(programs()).args(["debug", "--", "./short_entry", "10"]);
    let mut cdb = common::pty::Terminal::spawn(command);
    cdb.expect("(cdb) ");
    let shared = hex_after(&cdb.run("break shared"), "Breakpoint 1 at ");
    assert!(cdb.run("continue").contains("Breakpoint 1, thread"), "the first call");
    let stop = cdb.run("continue");
    assert!(stop.contains("Breakpoint 1, thread"), "the second, through the trampoline: {stop}");
    let listing = cdb.run("disassemble shared");
    let stub = hex_after(&listing, &format!("{shared:#x}  int3 over jmp "));
    assert!(stub.abs_diff(shared + 2) <= 128, "the padding within a short jump's reach: {listing}");
    let trampoline = hex_after(&listing, "; to padding that jumps to the trampoline ");
    assert!(stop.contains(&format!("shared: trampoline at {trampoline:#x}")), "{stop}\n{listing}");
    // The padding's jump takes no breakpoint.
    let refused = cdb.run(&format!("break *{:#x}", stub + 1));
    assert!(
        refused.contains(&format!("error: inside the jump to a trampoline that the padding at {stub:#x}")),
        "{refused}"
    );
    // Without the breakpoint, the short jump is back and the calls count on.
    cdb.run("delete");
    assert!(cdb.run("disassemble shared").contains(&format!("{shared:#x}  jmp {stub:#x}")));
    cdb.send("continue");
    cdb.expect("The program exited with code 0.");
    assert!(cdb.transcript().contains(&format!("{}\r\n", short_entry_sum(10))), "{}", cdb.transcript());
}

#[test]
fn one_byte_functions_are_counted_where_they_are_called() {
    let mut traps = Vec::new();
    for calls in [1_000, 100_000] {
        let (output, rows, run_traps) = measure("fcount", "./packed", calls);
        assert_eq!(output.trim(), ((1..=calls as i64).sum::<i64>()).to_string());
        let nothing = &rows[&("packed".into(), "nothing".into())];
        assert_eq!(nothing.count, Some(calls + 3), "the direct calls and the three through a pointer");
        assert!(nothing.instrumentation.starts_with("callers sent to a trampoline"), "{}", nothing.instrumentation);
        let in_library = &rows[&("libpacked.so".into(), "lib_nothing".into())];
        assert_eq!(in_library.count, Some(calls), "the calls through the PLT");
        assert!(
            in_library.instrumentation.starts_with("callers sent to a trampoline"),
            "{}",
            in_library.instrumentation
        );
        traps.push(run_traps);
    }
    assert_no_trap_per_call(&traps);
}

#[test]
fn arcs_of_one_byte_functions_are_counted_where_they_are_called() {
    let mut traps_per_run = Vec::new();
    for calls in [1_000, 100_000] {
        let out = tempfile::tempdir().unwrap();
        let file = out.path().join("arcs.cali");
        let calls_arg = calls.to_string();
        let output = run_in(programs(), &["-c", "arcs", "-o", file.to_str().unwrap()], "./packed", &[&calls_arg]);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        // The loop's call of each, the library's through its PLT entry; the
        // three calls through a pointer, each from a site of its own.
        for (function, expected) in [("nothing", vec![1, 1, 1, calls]), ("lib_nothing", vec![calls])] {
            let query = format!("select dbi.count where dbi.caller=main,dbi.function={function} format expand");
            let mut counts: Vec<u64> = common::query(&file, &query)
                .lines()
                .filter_map(|l| l.strip_prefix("dbi.count=")?.parse().ok())
                .collect();
            counts.sort_unstable();
            assert_eq!(counts, expected, "main -> {function}");
        }
        traps_per_run.push(traps(&file));
    }
    assert_no_trap_per_call(&traps_per_run);
}
