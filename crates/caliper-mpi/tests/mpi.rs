//! libcaliper-mpi under `mpirun -np 4`: installed with `make install-mpi`
//! into a prefix, programs built against it (C and C++ through
//! pkg-config, C through CMake, Fortran, and a program that never calls
//! Caliper, preloaded), their cross-rank reports checked against values
//! computed from per-rank files of the same run, one output per job or per
//! rank, a rank that is done early, and a program that never calls
//! `MPI_Finalize`; `mpi-report`; `mpi-caliquery`.
//!
//! Open MPI, the compilers and CMake are installed by
//! `scripts/test-all.sh`; without them the tests fail, naming the script.

use caliper_testutil::install::{self, make_install, must, require_tools};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const TOOLS: &[&str] = &["mpicc", "mpicxx", "mpif90", "mpirun", "cmake", "pkg-config", "make"];

/// `make install-mpi PREFIX=target/mpi-tests/prefix`, once per test run.
fn prefix() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        require_tools(TOOLS);
        make_install("mpi-tests", "install-mpi")
    })
}

/// A fresh scratch directory.
fn scratch(name: &str) -> PathBuf {
    install::scratch("mpi-tests", name)
}

fn source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}

/// `pkg-config --cflags --libs caliper-mpi` against the prefix.
fn pkg_config() -> Vec<String> {
    let out = must(
        Command::new("pkg-config")
            .args(["--cflags", "--libs", "caliper-mpi"])
            .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")),
    );
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(str::to_string).collect()
}

/// Compiles `source` with an MPI compiler wrapper, linked with
/// libcaliper-mpi through pkg-config.
fn build(compiler: &str, source: &Path, out: &Path) -> PathBuf {
    let mut cmd = Command::new(compiler);
    cmd.arg("-O2").arg("-o").arg(out).arg(source).args(pkg_config());
    cmd.arg(format!("-Wl,-rpath,{}", prefix().join("lib").display()));
    must(&mut cmd);
    out.to_path_buf()
}

/// The annotated C test program, built once.
fn app() -> &'static Path {
    static APP: OnceLock<PathBuf> = OnceLock::new();
    APP.get_or_init(|| build("mpicc", &source("c/mpi-app.c"), &scratch("app").join("mpi-app")))
}

/// `mpirun -np <ranks> <program> <args>` in `dir` with `env`.
fn mpirun(ranks: usize, dir: &Path, env: &[(&str, &str)], program: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", &ranks.to_string()]).current_dir(dir);
    for (key, value) in env {
        cmd.env(key, value).args(["-x", key]);
    }
    must(cmd.arg(program).args(args))
}

/// `cali-query -q <query>` of the prefix over `files`, as `expand` lines of
/// `attribute=value` maps.
fn query(files: &[PathBuf], query: &str) -> Vec<BTreeMap<String, String>> {
    let out = must(Command::new(prefix().join("bin/cali-query")).arg("-q").arg(query).args(files));
    String::from_utf8(out.stdout).unwrap().lines().map(expand_line).collect()
}

/// One `expand` line (`a=1,b=x`) as a map.
fn expand_line(line: &str) -> BTreeMap<String, String> {
    line.split(',').filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// The files of `dir` whose names start with `prefix`, sorted.
fn files_starting(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix))
        .collect();
    files.sort();
    files
}

/// The `mpireport` of a channel and the same channel's per-rank `.cali`
/// files, written by the same flush: the cross-rank minimum, maximum,
/// total and count per region equal those computed from the files.
#[test]
fn mpireport_equals_what_the_per_rank_files_give() {
    let dir = scratch("mpireport");
    let cross = "select region,min(sum#time.duration.ns),max(sum#time.duration.ns),sum(sum#time.duration.ns),count() \
                 group by region format expand";
    mpirun(
        4,
        &dir,
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,timer,mpi,mpireport,recorder"),
            ("CALI_CHANNEL_FLUSH_ON_EXIT", "false"),
            ("CALI_RECORDER_FILENAME", "rank-%mpi.rank%.cali"),
            ("CALI_MPIREPORT_FILENAME", "cross.txt"),
            ("CALI_MPIREPORT_CONFIG", cross),
        ],
        app(),
        &["10"],
    );
    let ranks = files_starting(&dir, "rank-");
    assert_eq!(ranks.len(), 4, "one file per rank: {ranks:?}");
    // Per region: (min, max, sum, count) over every rank's records.
    let mut expected: BTreeMap<String, (i64, i64, i64, u64)> = BTreeMap::new();
    for file in &ranks {
        // Every record has the aggregation's `count` (of snapshots, which
        // count() adds up); not all have a time.
        for rec in query(std::slice::from_ref(file), "select region,sum#time.duration.ns,count format expand") {
            let region = rec.get("region").cloned().unwrap_or_default();
            let e = expected.entry(region).or_insert((i64::MAX, i64::MIN, 0, 0));
            e.3 += rec["count"].parse::<u64>().unwrap();
            if let Some(t) = rec.get("sum#time.duration.ns") {
                let t: i64 = t.parse().unwrap();
                *e = (e.0.min(t), e.1.max(t), e.2 + t, e.3);
            }
        }
    }
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    let mut seen = BTreeMap::new();
    for rec in report.lines().map(expand_line) {
        let region = rec.get("region").cloned().unwrap_or_default();
        let value = |k: &str| rec[k].parse::<i64>().unwrap();
        seen.insert(
            region,
            (
                value("min#sum#time.duration.ns"),
                value("max#sum#time.duration.ns"),
                value("sum#sum#time.duration.ns"),
                value("count") as u64,
            ),
        );
    }
    assert_eq!(seen, expected, "report:\n{report}");
    assert!(expected.contains_key("main/ring") && expected["main/work"].3 == 4, "{expected:?}");
    assert!(expected[""].3 > 4 * 20, "the loop's snapshots, outside any region: {expected:?}");
}

/// The inclusive time of each path in a profile's `expand` records
/// (`region`, `sum#sum#time.duration`): its own and its descendants'.
fn inclusive_times(records: &[BTreeMap<String, String>]) -> BTreeMap<String, f64> {
    let mut times = BTreeMap::new();
    for rec in records {
        let (Some(path), Some(t)) = (rec.get("region"), rec.get("sum#sum#time.duration")) else { continue };
        let t: f64 = t.parse().unwrap();
        let parts: Vec<&str> = path.split('/').collect();
        for depth in 1..=parts.len() {
            *times.entry(parts[..depth].join("/")).or_insert(0.0) += t;
        }
    }
    times
}

/// The rows of a `runtime-report` tree (read by caliper-testutil's
/// reader) by their region's name: the programs here name each region
/// once.
fn report_rows(report: &str) -> BTreeMap<String, Vec<f64>> {
    caliper_testutil::report::columns(report)
        .into_iter()
        .map(|(path, numbers)| (path.rsplit('/').next().unwrap_or(&path).to_string(), numbers))
        .collect()
}

/// `runtime-report` across 4 ranks prints the reference's columns, and
/// each region's min/max/avg time per rank are those of the per-rank
/// profiles written in the same run (another channel, so within the few
/// microseconds its timer reads apart); `runtime-profile` writes one file
/// per rank with `use.mpi=false`, one for the job otherwise.
#[test]
fn runtime_report_has_the_min_max_and_average_of_the_per_rank_profiles() {
    let dir = scratch("runtime-report");
    let config = "runtime-report(output=cross.txt,region.count),\
                  runtime-profile(use.mpi=false,output=rank-%mpi.rank%.cali),\
                  runtime-profile(output=job-%mpi.rank%.cali)";
    let out = mpirun(4, &dir, &[("CALI_CONFIG", config)], app(), &["10"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("== CALIPER"), "no complaint (e.g. about the key mpi.rank):\n{stderr}");
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    let header = report.lines().next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        header.starts_with("Path Min time/rank Max time/rank Avg time/rank Time % Calls/rank (min)"),
        "report:\n{report}"
    );
    let rows = report_rows(&report);

    let ranks = files_starting(&dir, "rank-");
    assert_eq!(ranks.len(), 4, "one file per rank: {ranks:?}");
    let per_rank: Vec<BTreeMap<String, f64>> = ranks
        .iter()
        .map(|f| inclusive_times(&query(std::slice::from_ref(f), "select region,sum#sum#time.duration format expand")))
        .collect();
    for region in ["main", "work", "even", "ring"] {
        let path = if region == "main" { "main".to_string() } else { format!("main/{region}") };
        let times: Vec<f64> = per_rank.iter().filter_map(|t| t.get(&path).copied()).collect();
        let min = times.iter().copied().fold(f64::INFINITY, f64::min);
        let max = times.iter().copied().fold(0.0, f64::max);
        let avg = times.iter().sum::<f64>() / times.len() as f64;
        let row = &rows[region];
        for (got, want, what) in [(row[0], min, "min"), (row[1], max, "max"), (row[2], avg, "avg")] {
            assert!((got - want).abs() <= 2e-4 + want * 0.02, "{region} {what}: report {got}, files {want}\n{report}");
        }
        let calls = if region == "even" { 2.0 } else { 4.0 };
        assert_eq!(row.last(), Some(&calls), "{region}: Calls (total)\n{report}");
    }
    // The work of rank r takes (r + 1) * 5 ms: the ranks differ.
    assert!(rows["work"][1] > rows["work"][0] + 0.01, "{report}");

    let job = files_starting(&dir, "job-");
    assert_eq!(job, [dir.join("job-0.cali")], "one file for the job, named by rank 0");
    let records = query(&job, "select mpi.rank,region,sum#sum#time.duration format expand");
    let ranks_in_job: std::collections::BTreeSet<&str> =
        records.iter().filter_map(|r| r.get("mpi.rank")).map(String::as_str).collect();
    assert_eq!(ranks_in_job.into_iter().collect::<Vec<_>>(), ["0", "1", "2", "3"]);
}

/// A rank that leaves the ring early and waits in `MPI_Finalize`: the
/// report still comes, with that rank's regions counted where it had them.
#[test]
fn a_rank_done_early_still_reports() {
    let dir = scratch("early");
    mpirun(4, &dir, &[("CALI_CONFIG", "runtime-report(output=cross.txt,region.count)")], app(), &["20", "2"]);
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    let rows = report_rows(&report);
    assert_eq!(rows["ring"].last(), Some(&3.0), "three ranks in the ring\n{report}");
    assert_eq!(rows["main"].last(), Some(&4.0), "{report}");
}

/// `profile.mpi`: the MPI functions are regions, inside the program's own;
/// `mpi.exclude` leaves one out.
#[test]
fn profile_mpi_shows_the_mpi_functions_as_regions() {
    let dir = scratch("profile-mpi");
    let config = "runtime-report(output=cross.txt,profile.mpi,mpi.exclude=\"MPI_Init,MPI_Comm_rank,MPI_Comm_size\")";
    mpirun(4, &dir, &[("CALI_CONFIG", config)], app(), &["10"]);
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    let lines: Vec<&str> = report.lines().collect();
    let indent = |name: &str| {
        let line = lines
            .iter()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name}:\n{report}"));
        line.len() - line.trim_start().len()
    };
    assert_eq!(indent("MPI_Send"), indent("ring") + 2, "{report}");
    assert_eq!(indent("MPI_Recv"), indent("ring") + 2, "{report}");
    assert!(!report.contains("MPI_Init") && !report.contains("MPI_Comm_rank"), "excluded:\n{report}");
}

/// Message tracing: each completed send and receive is a snapshot with
/// its size and a count, summed per MPI function across the ranks.
#[test]
fn message_tracing_counts_and_sizes_messages() {
    let dir = scratch("messages");
    let (report, rows) = traced_messages(&dir, app(), &["10"], "MPI_Send,MPI_Recv", &[]);
    // 4 ranks, 10 rounds of the ring: 40 messages of one int each way.
    let send = &rows["MPI_Send"];
    assert_eq!(send["sum#mpi.send.count"], "40", "{report}");
    assert_eq!(send["sum#mpi.msg.size"], "160", "{report}");
    let recv = &rows["MPI_Recv"];
    assert_eq!(recv["sum#mpi.recv.count"], "40", "{report}");
    assert_eq!(recv["sum#mpi.msg.size"], "160", "{report}");

    // Receives posted with MPI_Irecv count where MPI_Wait completes them.
    let (report, rows) = traced_messages(&dir, app(), &["10"], "MPI_Send,MPI_Irecv,MPI_Wait", &[("APP_IRECV", "1")]);
    assert_eq!(rows["MPI_Wait"]["sum#mpi.recv.count"], "40", "{report}");
    assert_eq!(rows["MPI_Wait"]["sum#mpi.msg.size"], "160", "{report}");
    assert!(!rows["MPI_Irecv"].contains_key("sum#mpi.recv.count"), "{report}");
}

/// Runs `program` on 4 ranks in `dir` (with `env` besides) tracing the
/// messages of `functions`; returns the cross-rank report and its rows by
/// MPI function: the sums of `mpi.send.count`, `mpi.recv.count`,
/// `mpi.coll.count` and `mpi.msg.size` over the ranks.
fn traced_messages(
    dir: &Path,
    program: &Path,
    args: &[&str],
    functions: &str,
    env: &[(&str, &str)],
) -> (String, BTreeMap<String, BTreeMap<String, String>>) {
    let cross = "select mpi.function,sum(mpi.send.count),sum(mpi.recv.count),sum(mpi.coll.count),sum(mpi.msg.size) \
                 group by mpi.function format expand";
    let tracing = [
        ("CALI_SERVICES_ENABLE", "aggregate,event,timer,mpi,mpireport"),
        ("CALI_MPI_MSG_TRACING", "true"),
        ("CALI_MPI_WHITELIST", functions),
        ("CALI_MPIREPORT_FILENAME", "messages.txt"),
        ("CALI_MPIREPORT_CONFIG", cross),
    ];
    let _ = std::fs::remove_file(dir.join("messages.txt"));
    mpirun(4, dir, &[&tracing[..], env].concat(), program, args);
    let report = std::fs::read_to_string(dir.join("messages.txt")).unwrap();
    let rows = report.lines().map(expand_line).filter_map(|r| Some((r.get("mpi.function")?.clone(), r))).collect();
    (report, rows)
}

/// The message test program (`tests/c/mpi-messages.c`), built once.
fn messages_app() -> &'static Path {
    static APP: OnceLock<PathBuf> = OnceLock::new();
    APP.get_or_init(|| build("mpicc", &source("c/mpi-messages.c"), &scratch("messages-app").join("mpi-messages")))
}

/// Message tracing of receives posted with `MPI_Irecv` and completed by
/// `MPI_Waitany`, `MPI_Waitsome`, `MPI_Testany` or `MPI_Testsome`, and of
/// the `v` collectives: exact counts and bytes, summed over 4 ranks.
#[test]
fn message_tracing_covers_completions_and_v_collectives() {
    let dir = scratch("messages-complete");
    let functions = "MPI_Waitany,MPI_Waitsome,MPI_Testany,MPI_Testsome,\
                     MPI_Gatherv,MPI_Scatterv,MPI_Allgatherv,MPI_Alltoallv,MPI_Reduce_scatter";
    let (report, rows) = traced_messages(&dir, messages_app(), &[], functions, &[]);
    // Each rank receives an int and two ints per completion function.
    for function in ["MPI_Waitany", "MPI_Waitsome", "MPI_Testany", "MPI_Testsome"] {
        let row = &rows[function];
        assert_eq!((row["sum#mpi.recv.count"].as_str(), row["sum#mpi.msg.size"].as_str()), ("8", "48"), "{report}");
    }
    // Bytes of the 4 ranks: ranks send or receive (r + 1) ints in the
    // first three; each sends 10 ints in MPI_Alltoallv, and contributes 4
    // to MPI_Reduce_scatter.
    for (function, bytes) in [
        ("MPI_Gatherv", "40"),
        ("MPI_Scatterv", "40"),
        ("MPI_Allgatherv", "40"),
        ("MPI_Alltoallv", "160"),
        ("MPI_Reduce_scatter", "64"),
    ] {
        let row = &rows[function];
        assert_eq!((row["sum#mpi.coll.count"].as_str(), row["sum#mpi.msg.size"].as_str()), ("4", bytes), "{report}");
    }
}

/// Message tracing of a Fortran program's calls (which the MPI library's
/// Fortran bindings pass to `PMPI_*` directly, past the C wrappers): the
/// same counts and bytes as C's, summed over 4 ranks.
#[test]
fn message_tracing_covers_fortran_calls() {
    let dir = scratch("messages-fortran");
    let program = build("mpif90", &source("fortran/mpi-messages.f90"), &dir.join("mpi-messages-fortran"));
    let functions = "MPI_Send,MPI_Recv,MPI_Irecv,MPI_Waitany,MPI_Waitsome,MPI_Waitall,MPI_Gatherv,MPI_Allreduce";
    let (report, rows) = traced_messages(&dir, &program, &[], functions, &[]);
    let counted = |function: &str, counter: &str| {
        let row = &rows[function];
        (row[&format!("sum#mpi.{counter}.count")].as_str(), row["sum#mpi.msg.size"].as_str())
    };
    assert_eq!(counted("MPI_Send", "send"), ("28", "160"), "{report}");
    assert_eq!(counted("MPI_Recv", "recv"), ("4", "16"), "{report}");
    for function in ["MPI_Waitany", "MPI_Waitsome", "MPI_Waitall"] {
        assert_eq!(counted(function, "recv"), ("8", "48"), "{function}\n{report}");
    }
    assert!(!rows["MPI_Irecv"].contains_key("sum#mpi.recv.count"), "{report}");
    assert_eq!(counted("MPI_Gatherv", "coll"), ("4", "40"), "{report}");
    assert_eq!(counted("MPI_Allreduce", "coll"), ("4", "16"), "{report}");
}

/// The value in column `label` of the row of region `name` in a report
/// tree (numbers end where their column's label does); `None` if the cell
/// is empty.
fn cell(report: &str, name: &str, label: &str) -> Option<f64> {
    let header = report.lines().next()?;
    let end = header.find(label).unwrap_or_else(|| panic!("no column {label}:\n{report}")) + label.len();
    let row = report
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name}:\n{report}"));
    let upto = row.get(..end)?;
    if upto.ends_with(' ') {
        return None;
    }
    upto.split_whitespace().last()?.parse().ok()
}

/// `comm.stats`: what each comm region communicated, across 4 ranks, in
/// the reference's columns; MPI_Irecv's wait gaps where they were waited
/// for.
#[test]
fn comm_stats_reports_each_comm_regions_communication() {
    let dir = scratch("comm-stats");
    mpirun(4, &dir, &[("CALI_CONFIG", "runtime-report(output=comm.txt,comm.stats)")], messages_app(), &[]);
    let report = std::fs::read_to_string(dir.join("comm.txt")).unwrap();
    let expect = |region: &str, label: &str, want: f64| {
        assert_eq!(cell(&report, region, label), Some(want), "{region}: {label}\n{report}");
    };
    for (region, messages, bytes, peers, collectives) in
        [("exchange", 8.0, 48.0, 1.0, 4.0), ("spread", 3.0, 12.0, 3.0, 0.0)]
    {
        for (what, n) in [("Sends", messages), ("Recvs", messages), ("Bytes sent", bytes), ("Bytes recvd", bytes)] {
            expect(region, &format!("{what} (min)"), n);
            expect(region, &format!("{what} (max)"), n);
            expect(region, &format!("{what} (total)"), 4.0 * n);
        }
        for what in ["Dest ranks", "Src ranks"] {
            for statistic in ["min", "avg", "max"] {
                expect(region, &format!("{what} ({statistic})"), peers);
            }
        }
        expect(region, "Collectives (max)", collectives);
    }
    expect("colls", "Collectives (max)", 5.0);
    expect("colls", "Sends (total)", 0.0);
    let gap = cell(&report, "MPI_Waitany", "Irecv gap (max)");
    assert!(gap.is_some_and(|g| g >= 0.0), "{report}");
    assert_eq!(cell(&report, "spread", "Irecv gap (max)"), None, "no MPI_Irecv there\n{report}");
}

/// `loop-report` across the ranks: one summary and one time series for
/// the job, with the loop's iterations (each rank's 20, the maximum).
#[test]
fn loop_report_summarizes_the_loops_of_all_ranks() {
    let dir = scratch("loop-report");
    mpirun(4, &dir, &[("CALI_CONFIG", "loop-report(output=loops.txt,iteration_interval=5)")], app(), &["2"]);
    let report = std::fs::read_to_string(dir.join("loops.txt")).unwrap();
    let summary: Vec<&str> = report.lines().find(|l| l.starts_with("steps")).unwrap().split_whitespace().collect();
    assert_eq!(summary[1], "20", "iterations\n{report}");
    assert!(report.contains("Iteration summary (steps):"), "{report}");
    assert_eq!(report.matches("Loop summary:").count(), 1, "one report for the job\n{report}");
    let blocks = report.split("Iteration summary (steps):").nth(1).unwrap();
    // Rows of a block: its first iteration, iterations, time, rate.
    let rows: Vec<&str> = blocks
        .lines()
        .filter(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.len() == 4 && words[0].parse::<u32>().is_ok()
        })
        .collect();
    assert_eq!(rows.len(), 4, "20 iterations in blocks of 5\n{report}");
}

/// `spot` across the ranks: one file for the job, with each region's time
/// over the ranks and the loop's time series.
#[test]
fn spot_writes_one_file_for_the_job() {
    let dir = scratch("spot");
    let config = "spot(output=spot-%mpi.rank%.cali,timeseries,timeseries.iteration_interval=5)";
    mpirun(4, &dir, &[("CALI_CONFIG", config)], app(), &["2"]);
    assert_eq!(files_starting(&dir, "spot-"), [dir.join("spot-0.cali")], "written by rank 0 only");
    let records = query(
        &[dir.join("spot-0.cali")],
        "select spot.channel,region,block,min#inclusive#sum#time.duration,max#inclusive#sum#time.duration,\
         sum#sum#rc.count,max#sum#loop.iterations format expand",
    );
    let work = records.iter().find(|r| r.get("region").map(String::as_str) == Some("main/work")).unwrap();
    let (min, max): (f64, f64) = (
        work["min#inclusive#sum#time.duration"].parse().unwrap(),
        work["max#inclusive#sum#time.duration"].parse().unwrap(),
    );
    // Each rank sleeps (rank + 1) * 5 ms and measures at least that: a
    // loaded machine wakes rank 0 late (15.8 ms was seen), so how far apart
    // the two are is not known, only their floors and their order.
    assert!(min >= 0.005 && max >= 0.02 && max > min, "rank 0 sleeps 5 ms, rank 3 20 ms: {work:?}");
    assert_eq!(work["sum#sum#rc.count"], "4", "{work:?}");
    let blocks: Vec<&BTreeMap<String, String>> =
        records.iter().filter(|r| r.get("spot.channel").map(String::as_str) == Some("timeseries")).collect();
    assert_eq!(blocks.len(), 4, "20 iterations in blocks of 5: {blocks:?}");
    assert!(blocks.iter().all(|b| b["max#sum#loop.iterations"] == "5"), "{blocks:?}");
}

/// `sample-report` across the ranks: the sampled time per rank and in
/// total, in whole samples (1 ms each at 1000 Hz).
#[test]
fn sample_report_has_the_time_per_rank_and_in_total() {
    let dir = scratch("sample-report");
    mpirun(2, &dir, &[("CALI_CONFIG", "sample-report(output=samples.txt,sample.frequency=1000)")], app(), &["100"]);
    let report = std::fs::read_to_string(dir.join("samples.txt")).unwrap();
    let header = report.lines().next().unwrap().split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(header.ends_with("Min time/rank Max time/rank Avg time/rank Total time Time %"), "{report}");
    let mut samples = 0.0;
    for line in report.lines().skip(1) {
        let numbers: Vec<f64> = line.split_whitespace().filter_map(|w| w.parse().ok()).collect();
        if let [min, max, avg, total, _percent] = numbers[..] {
            assert!(min <= avg && avg <= max && max <= total, "{line}\n{report}");
            assert!((total * 1000.0 - (total * 1000.0).round()).abs() < 1e-6, "whole samples: {line}");
            samples += total * 1000.0;
        }
    }
    assert!(samples >= 20.0, "the ranks ran for 20 ms at least: {samples} samples\n{report}");
}

/// Bad settings cost the output, not the program: a cross-rank query that
/// does not parse and an unknown MPI function name are one-line messages,
/// and the program runs to its end with its exit status. (The messages
/// come before MPI_Init, so without the rank.)
#[test]
fn bad_settings_leave_the_program_alone() {
    let dir = scratch("bad-settings");
    let out = mpirun(
        2,
        &dir,
        &[
            ("CALI_SERVICES_ENABLE", "aggregate,event,timer,mpi,mpireport"),
            ("CALI_MPIREPORT_CONFIG", "select count( group by"),
            ("CALI_MPI_WHITELIST", "MPI_Send,MPI_Sned"),
        ],
        app(),
        &["2"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("== CALIPER: default: mpireport: config parse error"), "{stderr}");
    assert!(stderr.contains("Unknown MPI function MPI_Sned in MPI function whitelist"), "{stderr}");
}

/// `mpi-report`: time per MPI function across the ranks; each rank sends
/// and receives once per round of the ring.
#[test]
fn mpi_report_tabulates_the_mpi_functions() {
    let dir = scratch("mpi-report");
    mpirun(4, &dir, &[("CALI_CONFIG", "mpi-report(output=mpi.txt)")], app(), &["7"]);
    let report = std::fs::read_to_string(dir.join("mpi.txt")).unwrap();
    let header = report.lines().next().unwrap();
    assert!(header.starts_with("Function") && header.contains("Count (min)") && header.contains("Time %"), "{report}");
    for function in ["MPI_Send", "MPI_Recv"] {
        let row: Vec<&str> = report.lines().find(|l| l.starts_with(function)).unwrap().split_whitespace().collect();
        assert_eq!(row[1..3], ["7", "7"], "{function}: count min and max\n{report}");
    }
}

/// `mpi-caliquery` over 4 per-rank files gives what `cali-query` gives
/// over the same files, on 3 ranks (one reads two files) and on 5 (one
/// reads none, and sends an empty profile up the tree).
#[test]
fn mpi_caliquery_equals_cali_query() {
    let dir = scratch("mpi-caliquery");
    mpirun(4, &dir, &[("CALI_CONFIG", "runtime-profile(use.mpi=false,output=rank-%mpi.rank%.cali)")], app(), &["5"]);
    let files = files_starting(&dir, "rank-");
    assert_eq!(files.len(), 4);
    let query =
        "select region,count(),sum(sum#sum#time.duration),max(sum#sum#time.duration) group by region format expand";
    let mut expected = query_text(&files, query);
    expected.sort();
    for ranks in [3, 5] {
        let out = mpirun(ranks, &dir, &[], &prefix().join("bin/mpi-caliquery"), &["-q", query, "."]);
        let mut got: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect();
        got.sort();
        assert_eq!(got, expected, "{ranks} ranks");
        assert!(got.iter().any(|l| l.contains("region=main/ring") && l.contains("count=4")), "{got:?}");
    }
}

/// `mpi-caliquery` names a malformed input's file, line and column and
/// exits non-zero, the other ranks unharmed; a bad query is refused.
#[test]
fn mpi_caliquery_rejects_bad_input() {
    let dir = scratch("mpi-caliquery-errors");
    std::fs::write(dir.join("good.cali"), "").unwrap();
    std::fs::write(dir.join("bad.cali"), "__rec=node,id=1,attr=8,data=x\n__rec=ctx,ref=77\n").unwrap();
    let run = |args: &[&str]| {
        Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
            .arg(prefix().join("bin/mpi-caliquery"))
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    let out = run(&["-q", "select count() group by path", "good.cali", "bad.cali"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("mpi-caliquery: error: bad.cali:1:15: malformed attribute"), "{stderr}");
    let out = run(&["-q", "select count( group by", "good.cali"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("mpi-caliquery: Invalid query"), "{stderr}");
}

/// `cali-query -q <query> <files>`'s output lines.
fn query_text(files: &[PathBuf], query: &str) -> Vec<String> {
    let out = must(Command::new(prefix().join("bin/cali-query")).arg("-q").arg(query).args(files));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

/// A program that never calls Caliper, preloaded: its MPI calls are
/// profiled; a Fortran program and a C++ one, linked, the same.
#[test]
fn preloaded_fortran_and_cxx_programs_are_profiled() {
    let dir = scratch("languages");
    let plain = dir.join("plain");
    must(Command::new("mpicc").arg("-o").arg(&plain).arg(source("c/mpi-plain.c")));
    let lib = prefix().join("lib/libcaliper-mpi.so");
    let preload = format!("LD_PRELOAD={}", lib.display());
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "4", "-x", &preload, "-x", "CALI_CONFIG"])
        .env("CALI_CONFIG", "runtime-report(output=plain.txt,profile.mpi)")
        .current_dir(&dir)
        .arg(&plain);
    must(&mut cmd);
    let report = std::fs::read_to_string(dir.join("plain.txt")).unwrap();
    assert!(report.contains("MPI_Barrier") && report.contains("MPI_Allreduce"), "{report}");

    let fortran = build("mpif90", &source("fortran/mpi-app.f90"), &dir.join("fortran"));
    mpirun(4, &dir, &[("CALI_CONFIG", "runtime-report(output=fortran.txt,profile.mpi)")], &fortran, &[]);
    let report = std::fs::read_to_string(dir.join("fortran.txt")).unwrap();
    assert!(report.contains("MPI_Bcast") && report.contains("MPI_Barrier"), "{report}");

    // The same Fortran program built without Caliper, preloaded.
    let plain_fortran = dir.join("plain-fortran");
    must(Command::new("mpif90").arg("-o").arg(&plain_fortran).arg(source("fortran/mpi-app.f90")));
    let mut cmd = Command::new("mpirun");
    cmd.args(["--allow-run-as-root", "--oversubscribe", "-np", "4", "-x", &preload, "-x", "CALI_CONFIG"])
        .env("CALI_CONFIG", "runtime-report(output=plain-fortran.txt,profile.mpi)")
        .current_dir(&dir)
        .arg(&plain_fortran);
    must(&mut cmd);
    let report = std::fs::read_to_string(dir.join("plain-fortran.txt")).unwrap();
    assert!(report.contains("MPI_Bcast") && report.contains("MPI_Comm_set_name"), "{report}");

    let cxx = build("mpicxx", &source("cxx/mpi-app.cpp"), &dir.join("cxx"));
    mpirun(4, &dir, &[], &cxx, &["cxx.txt"]);
    let report = std::fs::read_to_string(dir.join("cxx.txt")).unwrap();
    assert!(report.contains("Min time/rank") && report.contains("solve"), "{report}");
    // MpiChannelManager: one report per half of the ranks, by its rank 0
    // (world ranks 0 and 1), each over its two ranks.
    for first in ["0", "1"] {
        let report = std::fs::read_to_string(dir.join(format!("sub-{first}.txt"))).unwrap();
        assert_eq!(report_rows(&report)["solve"].last(), Some(&2.0), "half of rank {first}:\n{report}");
    }
    assert!(!dir.join("sub-2.txt").exists() && !dir.join("sub-3.txt").exists());
    // CollectiveOutputChannel::collective_flush(std::ostream&, comm): the
    // report of all four ranks in rank 0's stream, nothing in the others'.
    let streamed = std::fs::read_to_string(dir.join("stream-0.txt")).unwrap();
    assert!(streamed.starts_with("Path") && streamed.contains("Min time/rank"), "{streamed}");
    assert_eq!(report_rows(&streamed)["solve"].last(), Some(&4.0), "{streamed}");
    for rank in 1..4 {
        assert_eq!(std::fs::read_to_string(dir.join(format!("stream-{rank}.txt"))).unwrap(), "", "rank {rank}");
    }
}

/// Built through CMake's `find_package(caliper)` and the `caliper-mpi`
/// target.
#[test]
fn cmake_target_links_libcaliper_mpi() {
    let dir = scratch("cmake");
    std::fs::write(
        dir.join("CMakeLists.txt"),
        format!(
            "cmake_minimum_required(VERSION 3.18)\nproject(app C)\nfind_package(MPI REQUIRED)\n\
             find_package(caliper REQUIRED)\nadd_executable(app {})\n\
             target_link_libraries(app PRIVATE caliper-mpi MPI::MPI_C)\n",
            source("c/mpi-app.c").display()
        ),
    )
    .unwrap();
    let build_dir = dir.join("build");
    install::cmake_build(&dir, &build_dir, prefix(), &[]);
    mpirun(2, &dir, &[("CALI_CONFIG", "runtime-report(output=cross.txt)")], &build_dir.join("app"), &["2"]);
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    assert!(report.starts_with("Path") && report.contains("Min time/rank"), "{report}");
}

/// Configures and builds the CMake project of `lists` (the body of a
/// CMakeLists.txt) in `dir` against the prefix, with the linker flag of
/// the distributions that link `--as-needed` by default.
fn cmake_build(dir: &Path, lists: &str) -> PathBuf {
    std::fs::write(dir.join("CMakeLists.txt"), lists).unwrap();
    let build_dir = dir.join("build");
    install::cmake_build(dir, &build_dir, prefix(), &["-DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed"]);
    build_dir
}

/// The report of `runtime-report,profile.mpi` over two ranks of `program`,
/// checked to come with nothing on standard error (no second runtime
/// complaining that it has no MPI).
fn profile_mpi_report(dir: &Path, program: &Path, name: &str) -> String {
    let config = format!("runtime-report(output={name}.txt),profile.mpi");
    let out = mpirun(2, dir, &[("CALI_CONFIG", &config)], program, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("== CALIPER"), "{name}: {stderr}");
    std::fs::read_to_string(dir.join(format!("{name}.txt"))).unwrap()
}

/// The paths of a runtime report, indented as printed (the names here
/// have no spaces).
fn report_paths(report: &str) -> Vec<String> {
    report
        .lines()
        .skip(1)
        .filter_map(|l| {
            let name = l.split_whitespace().next()?;
            Some(format!("{}{name}", " ".repeat(l.len() - l.trim_start().len())))
        })
        .collect()
}

/// A C++ application that links both CMake targets, `caliper` and
/// `caliper-mpi`, in either order, or both pkg-config packages: one
/// runtime, so one cross-rank report holds the program's regions and the
/// MPI functions nested in them, and no line says that MPI is missing.
#[test]
fn an_application_linking_caliper_and_caliper_mpi_has_one_runtime() {
    let dir = scratch("both-targets");
    let lists = format!(
        "cmake_minimum_required(VERSION 3.18)\nproject(app CXX)\nfind_package(MPI REQUIRED)\n\
         find_package(caliper REQUIRED)\n\
         add_executable(caliper-first {src})\ntarget_link_libraries(caliper-first PRIVATE caliper caliper-mpi MPI::MPI_CXX)\n\
         add_executable(mpi-first {src})\ntarget_link_libraries(mpi-first PRIVATE caliper-mpi caliper MPI::MPI_CXX)\n",
        src = source("cxx/mpi-both.cpp").display()
    );
    let build_dir = cmake_build(&dir, &lists);
    let mut programs = vec![build_dir.join("caliper-first"), build_dir.join("mpi-first")];
    for (name, packages) in
        [("pkg-caliper-first", ["caliper", "caliper-mpi"]), ("pkg-mpi-first", ["caliper-mpi", "caliper"])]
    {
        let flags = must(
            Command::new("pkg-config")
                .arg("--cflags")
                .arg("--libs")
                .args(packages)
                .env("PKG_CONFIG_PATH", prefix().join("lib/pkgconfig")),
        );
        let exe = dir.join(name);
        let mut cmd = Command::new("mpicxx");
        cmd.arg("-Wl,--as-needed").arg("-o").arg(&exe).arg(source("cxx/mpi-both.cpp"));
        cmd.args(String::from_utf8(flags.stdout).unwrap().split_whitespace());
        must(cmd.arg(format!("-Wl,-rpath,{}", prefix().join("lib").display())));
        programs.push(exe);
    }
    for program in &programs {
        let name = program.file_name().unwrap().to_string_lossy().into_owned();
        let report = profile_mpi_report(&dir, program, &name);
        assert!(report.starts_with("Path") && report.contains("Min time/rank"), "{name}:\n{report}");
        let paths = report_paths(&report);
        for expected in ["solve", "  exchange", "    MPI_Allreduce", "  MPI_Barrier"] {
            assert!(paths.iter().any(|p| p == expected), "{name}: no {expected:?} in\n{report}");
        }
    }
}

/// A Fortran MPI program annotated through `caliper_mod`, built with
/// CMake's `find_package(caliper)` and the targets `caliper` and
/// `caliper-mpi` under `--as-needed`: it links, and its report has its
/// region with the MPI call inside.
#[test]
fn a_fortran_mpi_program_links_through_cmake_with_default_flags() {
    let dir = scratch("fortran-cmake");
    let lists = format!(
        "cmake_minimum_required(VERSION 3.18)\nproject(app Fortran)\nfind_package(MPI REQUIRED)\n\
         find_package(caliper REQUIRED)\nadd_executable(app {})\n\
         target_link_libraries(app PRIVATE caliper caliper-mpi MPI::MPI_Fortran)\n",
        source("fortran/mpi-annotated.f90").display()
    );
    let build_dir = cmake_build(&dir, &lists);
    let report = profile_mpi_report(&dir, &build_dir.join("app"), "fortran");
    let paths = report_paths(&report);
    assert!(paths.iter().any(|p| p == "solve") && paths.iter().any(|p| p == "  MPI_Allreduce"), "{report}");
}

/// A static program links libcaliper-mpi.a alone (it carries the runtime):
/// the MPI calls nest in the program's regions, across the ranks.
#[test]
fn a_static_program_links_libcaliper_mpi_a_alone() {
    let dir = scratch("static");
    let exe = dir.join("app");
    let mut cmd = Command::new("mpicc");
    cmd.arg("-o").arg(&exe).arg(source("c/mpi-app.c")).arg(format!("-I{}", prefix().join("include").display()));
    cmd.arg(prefix().join("lib/libcaliper-mpi.a")).args(["-lgcc_s", "-lutil", "-lrt", "-lpthread", "-lm", "-ldl"]);
    must(&mut cmd);
    let needed = must(Command::new("readelf").arg("-d").arg(&exe));
    assert!(!String::from_utf8_lossy(&needed.stdout).contains("libcaliper"), "linked statically");
    let report = profile_mpi_report(&dir, &exe, "static");
    let paths = report_paths(&report);
    assert!(paths.iter().any(|p| p == "main") && paths.iter().any(|p| p == "    MPI_Recv"), "{report}");
}

/// Without `MPI_Finalize` the report comes at exit (one rank: mpirun
/// would end the job when the first rank leaves without finalizing).
#[test]
fn a_program_that_never_finalizes_still_reports() {
    let dir = scratch("no-finalize");
    let out = must(
        Command::new(app())
            .current_dir(&dir)
            .env("APP_NO_FINALIZE", "1")
            .env("CALI_CONFIG", "runtime-report(output=cross.txt)")
            .arg("3"),
    );
    assert!(out.status.success());
    let report = std::fs::read_to_string(dir.join("cross.txt")).unwrap();
    assert!(report.contains("Min time/rank") && report.contains("ring"), "{report}");
}

/// A Rust program on the `mpi` crate (feature `rsmpi`; `scripts/test-all.sh`
/// runs this with it): its MPI calls are regions, and its report is made
/// across the ranks over the program's own communicator.
#[cfg(feature = "rsmpi")]
#[test]
fn rust_programs_on_the_mpi_crate() {
    let exe = std::env::current_exe().unwrap();
    let example = exe.parent().unwrap().parent().unwrap().join("examples/rsmpi");
    assert!(example.exists(), "{} not built", example.display());
    let dir = scratch("rsmpi");
    mpirun(4, &dir, &[], &example, &["rust.txt"]);
    let report = std::fs::read_to_string(dir.join("rust.txt")).unwrap();
    let rows = report_rows(&report);
    assert_eq!(rows["work"].last(), Some(&4.0), "{report}");
    assert_eq!(rows["MPI_Barrier"].last(), Some(&4.0), "{report}");
}
