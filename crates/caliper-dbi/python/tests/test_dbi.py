"""caliper.dbi against the known-count C program of caliper-dbi's tests:
the same exact counts as cali-run, the include filter, the events, the
errors, and cali-run --script end to end."""

import os
import signal
import subprocess
import sys

import caliperreader
import pytest

import caliper.dbi as dbi
from conftest import CRATE, cali_run, read_flow_data

MODULES = ["counts", "libshared.so", "libplugin.so"]

def measure_counts(**context):
    """Runs ./counts with fcount and arc_count; the process and collectors."""
    proc = dbi.process(["./counts"])
    ctx = dbi.context(proc, **context)
    return proc, dbi.fcount(ctx), dbi.arc_count(ctx)


def test_counts_are_exact_and_the_same_as_cali_run(in_programs, tmp_path):
    proc, calls, arcs = measure_counts(include=MODULES)
    assert proc.run() == 3
    # Some of counts.c's known counts (tests/counts.rs checks them all
    # under cali-run, whose counts these must equal below).
    assert calls.count("hot", "counts") == 1_000_003
    assert calls.count("fib") == 1973
    assert calls.count("lib_fn", "libshared.so") == 11
    assert calls.count("plugin_fn", "libplugin.so") == 13
    assert calls.count("never") == 0
    assert arcs.count("main", "hot") == 1_000_000
    assert arcs.count("thread_fn", "hot") == 3
    assert arcs.count("racer", "shared_hot") == 10_000_000
    assert sorted(a.count for a in arcs if a.caller == "main" and a.callee == "three") == [1, 2]

    reference = tmp_path / "cali-run.dat"
    ran = cali_run("-c", "fcount,arcs", "-i", ",".join(MODULES), "--flow-data", reference, "--", "./counts",
                   cwd=in_programs)
    assert ran.returncode == 3, ran.stderr
    functions, arcs_expected = read_flow_data(reference)
    ours = {(f.module, f.address, f.name): f.count for f in calls}
    assert deterministic(ours) == deterministic(functions)
    ours_arcs = {}
    for a in arcs:
        key = (a.caller_module, a.callsite, a.caller, a.callee_module, a.callee_address, a.callee)
        ours_arcs[key] = ours_arcs.get(key, 0) + a.count
    assert deterministic(ours_arcs) == deterministic(arcs_expected)

    written = tmp_path / "script.dat"
    arcs.write(written)
    assert read_flow_data(written) == (ours, ours_arcs)


def deterministic(counts):
    """Flow-data counts without the lazy-binding stub (PLT0, unnamed: its
    name is its address): the two racing threads of counts.c may both
    bind pthread_barrier_wait through it, or one after the other."""
    return {key: n for key, n in counts.items() if not any(str(k).startswith("0x") for k in key)}


def test_include_narrows_to_one_library(in_programs):
    proc, calls, arcs = measure_counts(include=["libplugin.so"])
    assert proc.run() == 3
    assert {os.path.basename(f.module) for f in calls} == {"libplugin.so"}
    assert calls.count("plugin_fn") == 13
    assert {os.path.basename(a.callee_module) for a in arcs} == {"libplugin.so"}
    assert [(a.caller, a.count) for a in arcs if a.callee == "plugin_fn"] == [("main", 13)]


def test_exclude_and_function_patterns(in_programs):
    proc, calls, _ = measure_counts(include=["counts"], exclude=["hot", "shared_*"])
    proc.run()
    names = {f.name for f in calls}
    assert "fib" in names and "main" in names
    assert not names & {"hot", "shared_hot", "lib_fn", "plugin_fn"}


def test_address_ranges_narrow_to_functions(in_programs):
    proc, calls, _ = measure_counts(include=["counts"])
    proc.run()
    entries = {f.name: f.address for f in calls}
    proc, calls, _ = measure_counts(addresses=[("counts", entries["hot"], entries["hot"] + 1),
                                               ("count*", entries["fib"], entries["fib"] + 1)])
    proc.run()
    assert {(f.name, f.count) for f in calls} == {("hot", 1_000_003), ("fib", 1973)}
    with pytest.raises(dbi.InvalidArgument, match="bad address range 0x20-0x10 of counts: empty"):
        dbi.context(dbi.process(["./counts"]), addresses=[("counts", 0x20, 0x10)])


def test_coverage_lists_uncalled_functions(in_programs):
    proc = dbi.process(["./counts"])
    cover = dbi.coverage(dbi.context(proc, include=["counts"]))
    proc.run()
    covered = {f.name: f.covered for f in cover}
    assert covered["main"] and covered["child_only"]
    assert covered["never"] is False
    assert "never" not in {f.name for f in cover.covered()}


def test_events_exit_library_load_and_signal(in_programs):
    proc, calls, _ = measure_counts(include=MODULES)
    exits, loads, signals, hot_at_sigchld = [], [], [], []
    proc.on_exit(lambda pid, status, sig: exits.append((pid, status, sig)))
    proc.on_library_load(lambda path, pid: loads.append(os.path.basename(path)))

    def on_signal(sig, pid, tid):
        signals.append(sig)
        if sig == signal.SIGCHLD:
            # The counts so far, read in the callback.
            hot_at_sigchld.append(calls.count("hot"))

    proc.on_signal(on_signal)
    assert proc.run() == 3
    assert [(status, sig) for _, status, sig in exits] == [(5, None), (3, None)], "the child's, then main's"
    assert "libshared.so" in loads and "libplugin.so" in loads
    assert loads.index("libshared.so") < loads.index("libplugin.so")
    assert signal.SIGCHLD in signals, "the forked child's end"
    assert hot_at_sigchld == [1_000_003]


def test_a_timer_fires_and_reads_the_counts_so_far(in_programs):
    proc = dbi.process(["./spin"])
    calls = dbi.fcount(dbi.context(proc, include=["spin"]))
    seen, slow = [], []
    proc.on_timer(50, lambda: seen.append(calls.count("outer")))
    proc.on_timer(100, lambda: slow.append(1))
    assert proc.run() == 6
    assert seen and seen[-1] == 1, "outer is running all along"
    assert len(slow) <= len(seen)


def test_stop_from_a_callback_lets_the_program_go(in_programs):
    proc, calls, _ = measure_counts(include=MODULES)
    exits = []
    proc.on_exit(lambda *e: exits.append(e))
    proc.on_library_load(lambda path, pid: proc.stop() if path.endswith("libplugin.so") else None)
    assert proc.run() == 3, "the program runs on to its end"
    assert calls.count("hot") == 1_000_000, "main's calls, before the stop; thread_fn's come after"
    assert calls.count("lib_fn") == 11
    assert calls.count("child_only") == 0, "not measured after the stop"
    assert exits == [], "its processes were let go before they ended"


def test_an_exception_in_a_callback_stops_and_is_raised(in_programs):
    proc, calls, _ = measure_counts(include=MODULES)

    def fail(path, pid):
        raise RuntimeError("callback failed on " + os.path.basename(path))

    proc.on_library_load(fail)
    with pytest.raises(RuntimeError, match="callback failed on lib"):
        proc.run()
    assert proc.status == 3


def test_sampler_sees_the_busy_function(in_programs):
    proc = dbi.process(["./spin"])
    stacks = dbi.sampler(proc)
    assert proc.run() == 6
    total = sum(s.samples for s in stacks)
    in_spin = sum(s.samples for s in stacks if s.frames[-3:] == ("main", "outer", "spin"))
    assert total > 0 and in_spin * 10 >= total * 8, list(stacks)


def test_attach_and_stop_on_a_timer(programs):
    program = subprocess.Popen([str(programs / "attach"), "2"], stdout=subprocess.PIPE, text=True)
    try:
        assert program.stdout.readline() == "ready\n"
        proc = dbi.process(pid=program.pid)
        calls = dbi.fcount(dbi.context(proc, include=["attach"]))
        proc.on_timer(300, proc.stop)
        assert proc.run() is None, "let go running"
        assert calls.count("tick") > 0
    finally:
        assert program.wait(timeout=30) == 4


def test_write_formats(in_programs, tmp_path):
    proc, calls, arcs = measure_counts(include=["counts"])
    proc.run()
    both = dbi.measurement_set(calls, arcs)
    both.write(tmp_path / "both.cali")
    reader = caliperreader.CaliperReader()
    reader.read(str(tmp_path / "both.cali"))
    assert reader.globals["dbi.collect"] == "fcount,arcs"
    hot = [r for r in reader.records if r.get("dbi.function") == "hot" and "dbi.caller" not in r]
    assert [r["dbi.count"] for r in hot] == ["1000003"]
    main_hot = [r["dbi.count"] for r in reader.records if r.get("dbi.caller") == "main" and r["dbi.function"] == "hot"]
    assert main_hot == ["1000000"]
    calls.write(tmp_path / "calls.cali")
    reader = caliperreader.CaliperReader()
    reader.read(str(tmp_path / "calls.cali"))
    assert reader.globals["dbi.collect"] == "fcount"
    assert not any("dbi.caller" in r for r in reader.records)
    calls.write(tmp_path / "report", format="text")
    report = (tmp_path / "report").read_text()
    assert "1000003 hot" in " ".join(report.split())
    arcs.write(tmp_path / "arcs.txt")
    assert "== call arcs" in (tmp_path / "arcs.txt").read_text()


def test_errors_raise_clear_exceptions(in_programs, tmp_path):
    with pytest.raises(dbi.StartError, match="cannot run ./no-such-program: No such file"):
        dbi.process(["./no-such-program"]).run()
    proc = dbi.process(["./counts"])
    for bad in ["", "a,b", " counts"]:
        with pytest.raises(dbi.InvalidArgument, match="bad pattern"):
            dbi.context(proc, include=[bad])
    with pytest.raises(dbi.InvalidArgument, match="unknown `spoon`"):
        dbi.context(proc, follow=["spoon"])
    with pytest.raises(dbi.InvalidArgument, match="not a positive number of seconds"):
        dbi.context(proc, duration=-1)
    with pytest.raises(dbi.InvalidArgument):
        dbi.process()
    with pytest.raises(dbi.InvalidArgument, match="no program"):
        dbi.process([])
    with pytest.raises(dbi.InvalidArgument, match="positive number of milliseconds"):
        proc.on_timer(0, print)
    calls = dbi.fcount(proc)
    with pytest.raises(dbi.StateError, match="a context already"):
        dbi.context(proc)
    with pytest.raises(dbi.StateError, match="no results before the run"):
        list(calls)
    proc.run()
    with pytest.raises(dbi.InvalidArgument, match="give format="):
        calls.write(tmp_path / "calls.xyz")
    with pytest.raises(dbi.WriteError, match="cannot write"):
        calls.write(tmp_path / "no-such-dir" / "calls.cali")
    with pytest.raises(dbi.StateError, match="already run"):
        proc.run()
    with pytest.raises(dbi.StateError, match="already run"):
        dbi.arc_count(proc)


def test_cali_run_script_end_to_end(programs, tmp_path):
    flow = tmp_path / "flow.dat"
    script = CRATE / "examples" / "arc_count.py"
    env_args = ["--include", "counts", "--include", "libshared.so", "--output", flow]
    ran = cali_run("--script", script, *env_args, "--", "./counts", cwd=programs)
    assert ran.returncode == 3, ran.stderr
    assert ran.stdout == "child exit 5\ndone\n"
    reference = tmp_path / "reference.dat"
    cali_run("-c", "arcs", "-i", "counts,libshared.so", "--flow-data", reference, "--", "./counts", cwd=programs)
    ours, reference = read_flow_data(flow), read_flow_data(reference)
    assert [deterministic(t) for t in ours] == [deterministic(t) for t in reference]

    argv = tmp_path / "argv.py"
    argv.write_text("import sys\nprint(sys.argv[1:])\nsys.exit(7)\n")
    ran = cali_run("--script", argv, "--", "./counts", "-x", cwd=programs)
    assert (ran.returncode, ran.stdout) == (7, "['./counts', '-x']\n")

    ran = cali_run("--script", tmp_path / "missing.py", cwd=programs)
    assert ran.returncode == 2
    assert ran.stderr.startswith("== CALIPER: cali-run: cannot read the script")
