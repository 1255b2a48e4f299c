//! Real programs from Debian packages under `--collect fcount,arcs`: their
//! output and exit codes are those of a run without cali-run, and the
//! counts of a few known functions are what the programs do.
//! (`scripts/test-all.sh` installs gzip, bzip2, xz-utils, sqlite3 and python3.)

mod common;

use common::{Row, read_result};
use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A deterministic, compressible input of about 4 MB.
fn input() -> Vec<u8> {
    common::words(4 << 20)
}

fn run(command: &mut Command, stdin: &[u8]) -> Output {
    use std::io::Write;
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    output
}

/// Runs `program args` plainly and under `cali-run -c fcount,arcs`; asserts the
/// same output and exit code, and returns the result records.
fn compare(program: &str, args: &[&str], stdin: &[u8]) -> HashMap<(String, String), Row> {
    common::require(program);
    let plain = run(Command::new(program).args(args), stdin);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("result.cali");
    let measured = run(
        common::cali_run().args(["-c", "fcount,arcs", "-o", file.to_str().unwrap(), "--", program]).args(args),
        stdin,
    );
    assert!(plain.stdout == measured.stdout, "{program}: the same output");
    let messages = String::from_utf8_lossy(&measured.stderr);
    assert_eq!(plain.status.code(), measured.status.code(), "{program}: {}", &messages[..messages.len().min(2000)]);
    assert_eq!(
        String::from_utf8_lossy(&plain.stderr),
        String::from_utf8_lossy(&measured.stderr),
        "{program}: the same messages"
    );
    read_result(&file)
}

/// The calls of `function` in the module whose file name starts with `module`.
fn calls(rows: &HashMap<(String, String), Row>, module: &str, function: &str) -> u64 {
    rows.iter()
        .filter(|((m, f), _)| m.starts_with(module) && f == function)
        .map(|(_, r)| r.count.expect("fcount"))
        .sum()
}

#[test]
fn gzip_compresses_and_fails_as_without_instrumentation() {
    let data = input();
    let rows = compare("gzip", &["-6", "-c"], &data);
    // gzip has no symbols of its own: its hottest function (found through
    // its unwind tables) runs for every few bytes.
    let hottest = rows.iter().filter(|((m, _), _)| m == "gzip").filter_map(|(_, r)| r.count).max().unwrap();
    assert!(hottest > 100_000, "{hottest}");
    assert!(calls(&rows, "libc.so", "write") >= 1);
    let compressed = run(Command::new("gzip").arg("-c"), &data).stdout;
    let rows = compare("gzip", &["-d", "-c"], &compressed);
    assert!(calls(&rows, "libc.so", "read") >= 1);
    // A corrupt input: the same message and exit code.
    compare("gzip", &["-d", "-c"], b"this is not gzip data");
}

#[test]
fn bzip2_opens_and_closes_one_stream() {
    let rows = compare("bzip2", &["-c"], &input());
    assert_eq!(calls(&rows, "libbz2", "BZ2_bzWriteOpen"), 1);
    assert_eq!(calls(&rows, "libbz2", "BZ2_bzWriteClose64"), 1);
    assert!(calls(&rows, "libbz2", "BZ2_bzCompress") > 10);
}

#[test]
fn xz_creates_one_encoder() {
    let rows = compare("xz", &["-c", "-1"], &input());
    assert_eq!(calls(&rows, "liblzma", "lzma_stream_encoder"), 1);
    assert!(calls(&rows, "liblzma", "lzma_code") > 10);
}

#[test]
fn xz_with_two_threads_compresses_as_without_instrumentation() {
    // Each thread encodes its own blocks: trampolines built while the
    // program had one thread are made atomic when the second starts.
    let mut data = input();
    data.extend(input());
    let rows = compare("xz", &["-c", "-1", "-T2", "--block-size=1MiB"], &data);
    assert!(calls(&rows, "liblzma", "lzma_code") > 10);
}

#[test]
fn sqlite3_opens_one_database() {
    let script = b"create table t(a, b);\nwith recursive n(i) as (select 1 union all select i + 1 from n where i < 1000) insert into t select i, i * i from n;\nselect count(*), sum(b) from t;\nselect a from t where a % 250 = 0;\n";
    let rows = compare("sqlite3", &[":memory:"], script);
    assert_eq!(calls(&rows, "libsqlite3", "sqlite3_open_v2"), 1);
    assert_eq!(calls(&rows, "libsqlite3", "sqlite3_close"), 1);
    assert!(calls(&rows, "libsqlite3", "sqlite3_step") >= 4);
}

#[test]
fn python_runs_a_script() {
    let python = ["/usr/bin/python3", "python3"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("python3");
    let script = "import json, zlib\nd = {str(i): i * i for i in range(2000)}\ns = json.dumps(d, sort_keys=True)\nprint(len(s), zlib.crc32(s.encode()))\n";
    let rows = compare(python, &["-c", script], b"");
    assert_eq!(calls(&rows, "python3", "Py_RunMain"), 1);
    assert_eq!(calls(&rows, "python3", "Py_InitializeFromConfig"), 1);
    assert!(calls(&rows, "libz", "crc32") >= 1);
}
