//! The sweep: real programs from Debian packages (compressors,
//! interpreters, sqlite3, text tools, git, a compiler driver that spawns
//! its compiler and assembler (on a small file and on Lua's `lvm.c`), a threaded compressor, and CPython's main
//! linked against the shared libpython) under each collector.
//!
//! What it checks, per program and collector: the program's standard
//! output, any file it writes and its exit status are those of a run
//! without cali-run, the results file is written, the tool reports no
//! fault of its own on standard error, and the run ends within
//! [`PATIENCE`] (past it, the tool's process group is killed and the case
//! fails as a hang). What it prints and never asserts: a table of program x
//! collector with the time against the native runs next to it (alternating,
//! `CALI_SWEEP_RUNS` pairs each, default 1; with more, the range) and the
//! breakpoint traps the tool reports (`dbi.traps`).
//! (`scripts/test-all.sh` installs the programs.)

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long one run may take before it counts as a hang (each program
/// takes well under a second natively, and a few seconds where every call
/// of a function traps).
const PATIENCE: Duration = Duration::from_secs(45);

const COLLECTORS: [&str; 4] = ["coverage", "fcount", "arcs", "sample"];

/// A program with its arguments, input and working directory.
struct Case {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    stdin: Vec<u8>,
    dir: PathBuf,
    env: Vec<(&'static str, String)>,
    /// A file the program writes (in `dir`), compared with the native run's.
    product: Option<&'static str>,
}

impl Case {
    fn new(name: &'static str, program: impl Into<PathBuf>, args: &[&str], dir: &Path) -> Case {
        Case {
            name,
            program: program.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            stdin: Vec::new(),
            dir: dir.to_path_buf(),
            env: Vec::new(),
            product: None,
        }
    }

    fn stdin(mut self, data: &[u8]) -> Case {
        self.stdin = data.to_vec();
        self
    }
}

/// One run's outcome.
struct Run {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    status: ExitStatus,
    seconds: f64,
    hung: bool,
    product: Option<Vec<u8>>,
}

/// Runs `command` in a process group of its own with `stdin` as its input;
/// past [`PATIENCE`] the group is killed.
fn run_bounded(mut command: Command, case: &Case) -> Run {
    if let Some(product) = case.product {
        let _ = std::fs::remove_file(case.dir.join(product));
    }
    command.current_dir(&case.dir).envs(case.env.iter().map(|(k, v)| (k, v)));
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = command.spawn().unwrap_or_else(|e| panic!("{}: {e}", case.name));
    let group = child.id() as i32;
    let (done, hang_watch) = mpsc::channel::<()>();
    let killer = std::thread::spawn(move || {
        let hung = hang_watch.recv_timeout(PATIENCE).is_err();
        if hung {
            // SAFETY: a signal to the process group this test started.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
        hung
    });
    let mut pipe = child.stdin.take().unwrap();
    let data = case.stdin.clone();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let mut err = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut buffer = Vec::new();
        let _ = err.read_to_end(&mut buffer);
        buffer
    });
    let mut stdout = Vec::new();
    let _ = child.stdout.take().unwrap().read_to_end(&mut stdout);
    let status = child.wait().unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let _ = done.send(());
    let hung = killer.join().unwrap();
    writer.join().unwrap();
    let stderr = errors.join().unwrap();
    let product = case.product.map(|p| std::fs::read(case.dir.join(p)).unwrap_or_default());
    Run { stdout, stderr, status, seconds, hung, product }
}

fn native(case: &Case) -> Run {
    let mut command = Command::new(&case.program);
    command.args(&case.args);
    run_bounded(command, case)
}

fn measured(case: &Case, collector: &str, result: &Path) -> Run {
    let mut command = common::cali_run();
    command.args(["-c", collector, "-o", result.to_str().unwrap(), "--"]).arg(&case.program).args(&case.args);
    run_bounded(command, case)
}

/// What a measured run did wrong against the native one, if anything.
fn fault(case: &Case, plain: &Run, run: &Run, result: &Path) -> Option<String> {
    let describe = |s: &ExitStatus| format!("{:?}/{:?}", s.code(), s.signal());
    let messages = String::from_utf8_lossy(&run.stderr);
    let tool_lines: Vec<&str> = messages.lines().filter(|l| l.starts_with("== CALIPER")).take(3).collect();
    if run.hung {
        return Some(format!("hung: killed after {} s; {tool_lines:?}", PATIENCE.as_secs()));
    }
    if run.status.code() != plain.status.code() || run.status.signal() != plain.status.signal() {
        return Some(format!("exit {} instead of {}; {tool_lines:?}", describe(&run.status), describe(&plain.status)));
    }
    if run.stdout != plain.stdout {
        return Some(format!(
            "different output ({} bytes instead of {}); {tool_lines:?}",
            run.stdout.len(),
            plain.stdout.len()
        ));
    }
    if run.product != plain.product {
        return Some(format!("{} differs; {tool_lines:?}", case.product.unwrap()));
    }
    if !result.exists() {
        return Some(format!("no results written; {tool_lines:?}"));
    }
    // The tool says nothing of its own but what it leaves alone (a
    // 32-bit program a script runs): a message is a fault it met.
    let faults: Vec<&str> =
        messages.lines().filter(|l| l.starts_with("== CALIPER") && !l.ends_with("; not instrumented")).collect();
    if !faults.is_empty() {
        return Some(format!("the tool reported {faults:?}"));
    }
    None
}

/// "1.2x" or "1.1-1.4x" over the runs' ratios.
fn ratios(values: &[f64]) -> String {
    let low = values.iter().cloned().fold(f64::INFINITY, f64::min);
    let high = values.iter().cloned().fold(0.0, f64::max);
    if values.len() < 2 || format!("{low:.1}") == format!("{high:.1}") {
        format!("{high:.1}x")
    } else {
        format!("{low:.1}-{high:.1}x")
    }
}

const PYTHON: &str = "import gc, json, zlib\n\
class P:\n    def __init__(s, i): s.i = i; s.me = s\n\
d = {str(i): [i * i, str(i)] for i in range(20000)}\n\
s = json.dumps(d, sort_keys=True)\n\
ps = [P(i) for i in range(20000)]\ndel ps\n\
print(len(s), zlib.crc32(s.encode()), gc.collect() >= 0, sorted(d)[:3])\n";

const PERL: &str = "my %h; for my $i (1..20000) { $h{\"k$i\"} = $i * $i }\n\
my $s = join(',', map { $h{$_} } sort keys %h);\n\
my $n = () = $s =~ /(\\d)\\1/g;\n\
printf \"%d %d %s\\n\", length($s), $n, uc(substr($s, 0, 12));\n";

const LUA: &str = "local t = {}\n\
for i = 1, 20000 do t[i] = {id = i, name = string.format('item%05d', i)} end\n\
table.sort(t, function(a, b) return a.name > b.name end)\n\
local function counter() local n = 0; return function() n = n + 1; return n end end\n\
local c, words = counter(), {}\n\
for i = 1, 5000 do words[#words + 1] = string.rep('ab', i % 7) .. tostring(c()) end\n\
local s = table.concat(words, ',')\n\
local n = 0\n\
for w in s:gmatch('b(%d+)') do n = n + #w end\n\
collectgarbage('collect')\n\
print(#t, t[1].name, #s, n, s:upper():sub(1, 20))\n";

const SQL: &str = "create table t(a integer primary key, b, c text);\n\
with recursive n(i) as (select 1 union all select i + 1 from n where i < 20000)\n\
insert into t select i, i * i % 1000, printf('row %d', i) from n;\n\
create index tb on t(b);\n\
select count(*), sum(b), max(c) from t;\n\
select b, count(*) from t group by b order by 2 desc, 1 limit 3;\n";

/// A small git repository with a few commits, made by Debian's git.
fn repository(dir: &Path, env: &[(&'static str, String)]) {
    let git = |args: &[&str]| {
        let status = Command::new("/usr/bin/git").args(args).current_dir(dir).envs(env.iter().cloned()).status();
        assert!(status.unwrap().success(), "git {args:?}");
    };
    git(&["init", "-q", "-b", "main"]);
    for round in 0..5 {
        for file in 0..4 {
            let body: String =
                (0..200).map(|l| format!("line {l} of file {file}, round {}\n", l * round % 7)).collect();
            std::fs::write(dir.join(format!("f{file}.txt")), body).unwrap();
        }
        git(&["add", "."]);
        git(&["commit", "-q", "-m", &format!("round {round}")]);
    }
}

fn cases(dir: &Path) -> Vec<Case> {
    let data = common::words(2 << 20);
    let compressed = {
        let mut gzip = Command::new("gzip").arg("-c").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        let mut input = gzip.stdin.take().unwrap();
        let copy = data.clone();
        let writer = std::thread::spawn(move || input.write_all(&copy).unwrap());
        let output = gzip.wait_with_output().unwrap();
        writer.join().unwrap();
        output.stdout
    };
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    std::fs::copy(source.join("attach.c"), dir.join("small.c")).unwrap();
    common::gcc(
        dir,
        &[
            "-O2",
            "-I/usr/include/python3.11",
            "-o",
            "pyshared",
            source.join("pyembed.c").to_str().unwrap(),
            "-lpython3.11",
        ],
    );
    let repo = dir.join("repo");
    std::fs::create_dir(&repo).unwrap();
    let git_env = vec![
        ("HOME", dir.display().to_string()),
        ("GIT_CONFIG_NOSYSTEM", "1".into()),
        ("GIT_AUTHOR_NAME", "A U Thor".into()),
        ("GIT_AUTHOR_EMAIL", "author@example.com".into()),
        ("GIT_COMMITTER_NAME", "A U Thor".into()),
        ("GIT_COMMITTER_EMAIL", "author@example.com".into()),
        ("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z".into()),
        ("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z".into()),
    ];
    repository(&repo, &git_env);

    let mut gcc = Case::new("gcc -c", "/usr/bin/gcc", &["-O2", "-c", "small.c", "-o", "small.o"], dir);
    gcc.product = Some("small.o");
    // A compile of a real source file (Lua's interpreter loop: cc1 makes
    // 133 million calls), where the compiler's run, not its start, is the
    // time.
    let lua = common::lua_sources();
    let include = format!("-I{}", lua.display());
    let lvm = lua.join("lvm.c");
    let mut lvm =
        Case::new("gcc -c lvm.c", "/usr/bin/gcc", &["-O2", "-c", &include, lvm.to_str().unwrap(), "-o", "lvm.o"], dir);
    lvm.product = Some("lvm.o");
    let mut git = Case::new("git log", "/usr/bin/git", &["log", "--stat"], &repo);
    git.env = git_env;
    vec![
        Case::new("gzip -6", "/usr/bin/gzip", &["-6", "-c"], dir).stdin(&data),
        Case::new("gzip -d", "/usr/bin/gzip", &["-d", "-c"], dir).stdin(&compressed),
        Case::new("bzip2", "/usr/bin/bzip2", &["-c"], dir).stdin(&data),
        Case::new("xz -1", "/usr/bin/xz", &["-c", "-1"], dir).stdin(&data),
        Case::new("xz -T2", "/usr/bin/xz", &["-c", "-1", "-T2", "--block-size=512KiB"], dir).stdin(&data),
        Case::new("python3", "/usr/bin/python3", &["-c", PYTHON], dir),
        Case::new("python3 (shared)", dir.join("pyshared"), &["-c", PYTHON], dir),
        Case::new("perl", "/usr/bin/perl", &["-e", PERL], dir),
        Case::new("lua5.4", "/usr/bin/lua5.4", &["-e", LUA], dir),
        Case::new("sqlite3", "/usr/bin/sqlite3", &[":memory:"], dir).stdin(SQL.as_bytes()),
        Case::new("grep", "/usr/bin/grep", &["-c", "-E", "alpha (beta|gamma)+ [a-e]"], dir).stdin(&data),
        Case::new("sed", "/usr/bin/sed", &["-e", "s/alpha/ALPHA/g;s/[aeiou]\\+/-/2"], dir).stdin(&data),
        Case::new(
            "gawk",
            "/usr/bin/gawk",
            &["{ for (i = 1; i <= NF; i++) n[$i]++ } END { PROCINFO[\"sorted_in\"] = \"@ind_str_asc\"; for (w in n) print w, n[w] }"],
            dir,
        )
        .stdin(&data),
        git,
        gcc,
        lvm,
    ]
}

#[test]
fn real_programs_run_as_without_the_tool_under_each_collector() {
    for program in ["gzip", "bzip2", "xz", "python3", "perl", "lua5.4", "sqlite3", "grep", "sed", "gawk", "git", "gcc"]
    {
        common::require(Path::new("/usr/bin").join(program));
    }
    let runs: usize = std::env::var("CALI_SWEEP_RUNS").ok().and_then(|n| n.parse().ok()).unwrap_or(1).max(1);
    let dir = tempfile::tempdir().unwrap();
    let cases = cases(dir.path());
    let results = tempfile::tempdir().unwrap();
    let mut table: BTreeMap<(usize, usize), String> = BTreeMap::new();
    let mut failures = Vec::new();
    for (row, case) in cases.iter().enumerate() {
        for (column, collector) in COLLECTORS.iter().enumerate() {
            let mut seen = Vec::new();
            let mut cell = None;
            for attempt in 0..runs {
                let plain = native(case);
                assert!(!plain.hung, "{} hangs without the tool", case.name);
                let result = results.path().join(format!("{row}-{column}-{attempt}.cali"));
                let run = measured(case, collector, &result);
                if let Some(why) = fault(case, &plain, &run, &result) {
                    failures.push(format!("{} under {collector}: {why}", case.name));
                    cell = Some(if run.hung { "HANG".to_string() } else { "FAIL".to_string() });
                    break;
                }
                let extra_ms = (run.seconds - plain.seconds) * 1e3;
                seen.push((run.seconds / plain.seconds.max(1e-3), extra_ms, common::traps(&result)));
            }
            let cell = cell.unwrap_or_else(|| {
                let ratio: Vec<f64> = seen.iter().map(|s| s.0).collect();
                let extra_ms = seen.iter().map(|s| s.1).fold(f64::INFINITY, f64::min);
                let traps = seen.iter().map(|s| s.2).max().unwrap();
                format!("ok {} {extra_ms:+.0}ms {traps}", ratios(&ratio))
            });
            table.insert((row, column), cell);
        }
    }
    let mut out = format!("{:<18}", "program");
    for collector in COLLECTORS {
        let _ = write!(out, " | {collector:<27}");
    }
    out.push('\n');
    for (row, case) in cases.iter().enumerate() {
        let _ = write!(out, "{:<18}", case.name);
        for column in 0..COLLECTORS.len() {
            let _ = write!(out, " | {:<27}", table[&(row, column)]);
        }
        out.push('\n');
    }
    println!("ok: output and exit as native; time against native, and the least time over it; breakpoint traps\n{out}");
    assert!(failures.is_empty(), "{} failures:\n{}\n{out}", failures.len(), failures.join("\n"));
}
