//! cdb, the debugger of `cali-run debug` and `--debug-on-fault`, driven
//! through a pseudo-terminal and a socket on a small C program whose
//! call chain is known (main -> middle -> work).

mod common;

use common::pty::Terminal;
use common::{cali_run, debuggee_dir};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;

/// The hexadecimal number after `prefix` in `text`.
fn hex_after(text: &str, prefix: &str) -> u64 {
    let start = text.find(prefix).unwrap_or_else(|| panic!("`{prefix}` in:\n{text}")) + prefix.len();
    let digits: String =
        text[start..].trim_start().trim_start_matches("0x").chars().take_while(char::is_ascii_hexdigit).collect();
    u64::from_str_radix(&digits, 16).unwrap()
}

/// The line of `text` that contains `needle`.
fn line_with<'a>(text: &'a str, needle: &str) -> &'a str {
    text.lines().find(|l| l.contains(needle)).unwrap_or_else(|| panic!("no line with `{needle}` in:\n{text}"))
}

/// cali-run with `options` on one of the test programs, in a terminal.
fn in_terminal(options: &[&str], program: &str, args: &[&str]) -> Terminal {
    let mut command = cali_run();
    command.current_dir(debuggee_dir()).args(options).arg("--").arg(program).args(args);
    Terminal::spawn(command)
}

#[test]
fn a_breakpoint_stops_an_instrumented_function_and_shows_its_state() {
    // Lazily patched: the first call of a function instruments it.
    let mut cdb = in_terminal(&["debug", "--lazy"], "./debuggee", &[]);
    let entry = cdb.expect("(cdb) ");
    assert!(entry.contains("The program is stopped at its entry"), "{entry}");
    assert!(entry.contains("_start+0x0 (debuggee)"), "{entry}");

    let set = cdb.run("break work");
    let work = hex_after(&set, "Breakpoint 1 at ");
    assert!(set.contains("work+0x0 (debuggee)"), "{set}");

    // The first call: the engine's int3 is still at the entry.
    let stop = cdb.run("continue");
    assert!(stop.contains("Breakpoint 1, thread"), "{stop}");
    assert!(stop.contains(&format!("{work:#x} in work+0x0")), "{stop}");
    assert!(stop.contains("work: not called yet"), "{stop}");

    let bt = cdb.run("bt");
    let (work_at, middle_at, main_at) = (bt.find("#0").unwrap(), bt.find("in middle+").unwrap(), bt.find("in main+"));
    assert!(bt[work_at..].starts_with(&format!("#0  {work:#x} in work+0x0")), "{bt}");
    assert!(work_at < middle_at && Some(middle_at) < main_at, "innermost first: {bt}");
    assert!(line_with(&bt, "in middle+").starts_with("#1"), "{bt}");

    let regs = cdb.run("regs");
    assert_eq!(hex_after(line_with(&regs, "rip "), "rip"), work, "{regs}");
    let rsp = hex_after(line_with(&regs, "rsp "), "rsp");

    // The return address into middle is on top of the stack.
    let dump = cdb.run("x/2xg $rsp");
    let row = line_with(&dump, &format!("{rsp:#x}:"));
    let words: Vec<&str> = row.split_whitespace().skip(1).collect();
    assert_eq!(words.len(), 2, "{dump}");
    let ret = hex_after(line_with(&bt, "in middle+"), "#1  ");
    assert_eq!(u64::from_str_radix(words[0].trim_start_matches("0x"), 16).unwrap(), ret, "{dump}");

    let listing = cdb.run("disassemble work");
    let header = line_with(&listing, "original code");
    assert!(header.trim_end().ends_with("instrumented code"), "{listing}");
    let column = header.find("instrumented code").unwrap();
    let entry_now = line_with(&listing, &format!("{work:#x}  int3"));
    assert!(entry_now.ends_with("; the first call instruments it"), "{listing}");
    assert!(entry_now.find("0x") == Some(column), "in the instrumented column: {listing}");
    assert!(line_with(&listing, "  ret").ends_with("(unchanged)"), "{listing}");

    // The second call runs the trampoline the first call built; the
    // breakpoint stays over its jump.
    let stop = cdb.run("c");
    assert!(stop.contains("Breakpoint 1, thread"), "{stop}");
    assert!(stop.contains("work: trampoline at 0x"), "{stop}");
    let trampoline = hex_after(&stop, "work: trampoline at ");

    let listing = cdb.run("disassemble work");
    assert!(listing.contains(&format!("int3 over jmp {trampoline:#x}")), "{listing}");
    let probe = line_with(&listing, "; probe");
    assert!(probe.trim_start().starts_with(&format!("{trampoline:#x}  ")), "{listing}");
    let moved = line_with(&listing, &format!("{work:#x}  mov rax"));
    assert!(moved.len() > column && moved[column..].starts_with("0x"), "both columns: {listing}");
    assert!(listing.contains("; back into the function"), "{listing}");

    // The bytes the jump replaced take no breakpoint; nor does a page of no module.
    let refused = cdb.run(&format!("break *{:#x}", work + 1));
    assert!(refused.contains(&format!("error: inside the jump that replaced the entry at {work:#x}")), "{refused}");
    assert!(cdb.run("break *0x10").contains("error: 0x10 is not in the code of a loaded module"));
    assert!(cdb.run("x/4xb 0").contains("error: cannot read memory at 0x0"));

    let list = cdb.run("info instrumented work");
    let row = line_with(&list, "work (debuggee)");
    assert!(row.starts_with(&format!("{work:#x}")), "{list}");
    assert!(row.contains("calls 1") && row.contains(&format!("trampoline at {trampoline:#x}")), "{list}");
    assert!(row.contains("a breakpoint of yours"), "{list}");
    let called = cdb.run("info instrumented");
    assert!(called.contains("middle (debuggee)") && called.contains("functions called so far"), "{called}");

    // A single step at the entry goes on in the trampoline.
    let step = cdb.run("stepi");
    assert!(step.contains(&format!("sends the thread to {trampoline:#x} in the trampoline of work")), "{step}");
    assert!(step.contains("in the trampoline of work+0x0 (debuggee): the instruction moved from work+0x0"), "{step}");
    let bt = cdb.run("bt");
    assert!(line_with(&bt, "#0").contains("in work+0x0"), "unwound as at the moved instruction: {bt}");
    assert!(line_with(&bt, "#1").contains("in middle+"), "{bt}");

    let threads = cdb.run("info threads");
    assert!(line_with(&threads, "* 1").contains("trampoline of work"), "{threads}");
    let breakpoints = cdb.run("info breakpoints");
    assert!(line_with(&breakpoints, "work at").starts_with("1    2 "), "{breakpoints}");
    let error = cdb.run("frobnicate");
    assert!(error.contains("error: unknown command `frobnicate`"), "{error}");

    let help = cdb.run("help");
    assert!(help.contains("disassemble [FUNC]") && help.contains("info instrumented [PAT]"), "{help}");

    // nexti steps over the call in main (whose return address #2 is).
    let ret = hex_after(line_with(&bt, "#2 "), "#2  ");
    cdb.run("delete 1");
    let set = cdb.run(&format!("break *{:#x}", ret - 5));
    assert!(set.contains("Breakpoint 2 at") && set.contains("in main+"), "{set}");
    let stop = cdb.run("c");
    assert!(stop.contains("Breakpoint 2, thread"), "{stop}");
    let over = cdb.run("nexti");
    assert!(over.contains(&format!("at {ret:#x} in main+")), "{over}");
    cdb.run("delete");
    cdb.send("continue");
    cdb.expect("The program exited with code 7.");
    let status = cdb.child.wait().unwrap();
    assert_eq!(status.code(), Some(7), "{}", cdb.transcript());
    assert!(cdb.transcript().contains("total 9"), "the program's own output");
}

#[test]
fn a_fault_stops_at_the_prompt_with_debug_on_fault() {
    let mut cdb = in_terminal(&["--debug-on-fault"], "./debuggee", &["crash"]);
    let stop = cdb.expect("(cdb) ");
    assert!(stop.contains("The program received SIGSEGV, fault address 0x10"), "{stop}");
    assert!(stop.contains("crash: trampoline at 0x"), "the instrumentation there: {stop}");
    let bt = cdb.run("bt");
    assert!(line_with(&bt, "#1").contains("in main+"), "{bt}");
    let code = cdb.run("x/1i $pc");
    assert!(code.contains("mov dword ptr [0x10], 1"), "{code}");
    // Continuing delivers the signal: the program dies of it, and so does cali-run.
    cdb.send("c");
    cdb.expect("The program was killed by SIGSEGV.");
    let status = cdb.child.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGSEGV), "{}", cdb.transcript());
}

#[test]
fn an_instrumentation_failure_stops_at_the_prompt_and_the_program_runs_on() {
    let mut cdb = in_terminal(&["--debug-on-fault"], "./limited", &[]);
    let stop = cdb.expect("(cdb) ");
    assert!(stop.contains("Instrumentation failure: lib_step is no longer counted: cannot relocate:"), "{stop}");
    assert!(stop.contains("in lib_step+0x0 (liblimited.so)"), "{stop}");
    let bt = cdb.run("bt");
    assert!(line_with(&bt, "#1").contains("in main+"), "{bt}");
    let list = cdb.run("info instrumented lib_step");
    assert!(line_with(&list, "lib_step (liblimited.so)").contains("uncounted (cannot relocate:"), "{list}");
    cdb.send("c");
    cdb.expect("lib_step 42");
    cdb.expect("The program exited with code 0.");
    assert_eq!(cdb.child.wait().unwrap().code(), Some(0), "{}", cdb.transcript());
}

#[test]
fn without_the_option_a_fault_kills_the_program_as_before() {
    let out = cali_run()
        .current_dir(debuggee_dir())
        .args(["--", "./debuggee", "crash"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.signal(), Some(libc::SIGSEGV));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("(cdb)"));
}

/// `cali-run debug` of the debuggee's `echo` (which reads a line of
/// standard input), the prompt served on `socket`, once the socket is
/// there.
fn debug_echo_on_socket(socket: &std::path::Path) -> std::process::Child {
    let mut program = cali_run()
        .current_dir(debuggee_dir())
        .args(["debug", "-x", "libc*", "--debug-socket", socket.to_str().unwrap(), "--", "./debuggee", "echo"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while !socket.exists() {
        assert!(program.try_wait().unwrap().is_none(), "cali-run ended early");
        std::thread::yield_now();
    }
    program
}

#[test]
fn the_prompt_is_served_on_a_socket_while_the_program_reads_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cdb.sock");
    let mut program = debug_echo_on_socket(&socket);
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "only its owner may control the program");
    let mut client = cali_run()
        .args(["debug", "--connect", socket.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    client.stdin.take().unwrap().write_all(b"break work\ncontinue\nbt\ndelete 1\ncontinue\n").unwrap();
    // The program's input is its own.
    program.stdin.take().unwrap().write_all(b"hello from the terminal\n").unwrap();
    let transcript = String::from_utf8(client.wait_with_output().unwrap().stdout).unwrap();
    let out = program.wait_with_output().unwrap();
    assert!(transcript.contains("The program is stopped at its entry"), "{transcript}");
    assert!(transcript.contains("Breakpoint 1, thread"), "{transcript}");
    assert!(line_with(&transcript, "#1 ").contains("in middle+"), "{transcript}");
    // The C library is not instrumented (-x), and its frames are named by offset.
    assert!(line_with(&transcript, "#3 ").contains("in libc.so.6+0x"), "{transcript}");
    assert!(transcript.contains("The program exited with code 7."), "{transcript}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("echo: hello from the terminal") && stdout.contains("total 9"), "{stdout}");
    assert_eq!(out.status.code(), Some(7));
    assert!(!socket.exists(), "the socket is removed at the end");
}

#[test]
fn a_sigterm_while_waiting_for_a_socket_client_lets_the_program_run_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("cdb.sock");
    let mut program = debug_echo_on_socket(&socket);
    // The tool is in its wait for a client once the socket listens; a
    // SIGTERM a moment later finds it there.
    std::thread::sleep(std::time::Duration::from_millis(200));
    // SAFETY: kill has no memory preconditions.
    assert_eq!(unsafe { libc::kill(program.id() as i32, libc::SIGTERM) }, 0);
    program.stdin.take().unwrap().write_all(b"no debugger came\n").unwrap();
    // A tool that goes on waiting is killed after a minute, and fails.
    let tool = program.id() as i32;
    let (done, watch) = std::sync::mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        if watch.recv_timeout(std::time::Duration::from_secs(60)).is_err() {
            // SAFETY: a signal to the tool this test started.
            unsafe { libc::kill(tool, libc::SIGKILL) };
        }
    });
    let out = program.wait_with_output().unwrap();
    let _ = done.send(());
    killer.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("echo: no debugger came") && stdout.contains("total 9"), "{stdout}");
    assert_eq!(out.status.code(), Some(7), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!socket.exists(), "the socket is removed at the end");
}

/// Waits until the program cali-run (process `tool`) runs is asleep in
/// a system call, not stopped by its tracer.
fn wait_until_blocked_reading(tool: u32) {
    // (state, parent) of a process, from the fields after its name.
    let status = |pid: &str| -> Option<(char, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let mut fields = stat.rsplit_once(") ")?.1.split(' ');
        Some((fields.next()?.chars().next()?, fields.next()?.parse().ok()?))
    };
    loop {
        let processes = std::fs::read_dir("/proc").unwrap().flatten();
        let states: Vec<char> = processes
            .filter_map(|e| status(e.file_name().to_str()?))
            .filter(|&(_, parent)| parent == tool)
            .map(|(state, _)| state)
            .collect();
        if states == ['S'] {
            return;
        }
        assert_ne!(status(&tool.to_string()).map(|s| s.0), Some('Z'), "cali-run ended");
        std::thread::yield_now();
    }
}

#[test]
fn ctrl_c_stops_the_program_without_killing_it() {
    let mut cdb = in_terminal(&["debug"], "./debuggee", &["echo"]);
    cdb.expect("(cdb) ");
    cdb.send("c");
    // Ctrl-C at the terminal, once the program waits for a line, stops it
    // (typed earlier, it would discard the `c` not read yet).
    wait_until_blocked_reading(cdb.child.id());
    cdb.type_keys("\u{3}");
    let stop = cdb.expect("(cdb) ");
    assert!(stop.contains("The program received SIGINT; `continue` does not deliver it"), "{stop}");
    let threads = cdb.run("thread 1");
    assert!(threads.contains("thread "), "{threads}");
    assert!(cdb.run("thread 2").contains("error: no thread 2"));
    cdb.send("c");
    cdb.expect("c\r\n");
    cdb.send("a line");
    cdb.expect("echo: a line");
    cdb.expect("The program exited with code 7.");
    assert_eq!(cdb.child.wait().unwrap().code(), Some(7), "{}", cdb.transcript());
}

#[test]
fn detach_lets_the_program_finish_and_kill_ends_it() {
    let mut cdb = in_terminal(&["debug"], "./debuggee", &[]);
    cdb.expect("(cdb) ");
    cdb.run("break work");
    cdb.run("c");
    cdb.send("detach");
    cdb.expect("Detached: the program runs on without instrumentation.");
    cdb.expect("total 9");
    assert_eq!(cdb.child.wait().unwrap().code(), Some(7), "{}", cdb.transcript());

    let mut cdb = in_terminal(&["debug"], "./debuggee", &[]);
    cdb.expect("(cdb) ");
    cdb.send("kill");
    cdb.expect("The program was killed by SIGKILL.");
    assert_eq!(cdb.child.wait().unwrap().signal(), Some(libc::SIGKILL), "{}", cdb.transcript());
    assert!(!cdb.transcript().contains("total 9"));
}
