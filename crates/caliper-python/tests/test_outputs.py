"""A Python program's regions, loops and decorated functions in the
reports and traces of the built-in configs."""

from conftest import REPO, read_globals, read_records, report_rows, run_python

EXAMPLE = """
    import pycaliper
    from pycaliper.high_level import annotate_function
    from pycaliper.instrumentation import begin_region, end_region, set_global_byname
    from pycaliper.loop import Loop

    @annotate_function()
    def foo(i):
        return i * 2

    set_global_byname("iterations", 4)
    set_global_byname("problem", "sedov")
    begin_region("main")
    begin_region("init")
    end_region("init")
    main_loop = Loop("mainloop")
    for i in range(4):
        main_loop.start_iteration(i)
        foo(i)
        main_loop.end_iteration()
    main_loop.end()
    end_region("main")
"""


def test_runtime_report_prints_the_region_tree(tmp_path):
    proc = run_python(EXAMPLE, tmp_path, env={"CALI_CONFIG": "runtime-report"})
    assert report_rows(proc.stderr) == [(0, "main"), (2, "init"), (2, "mainloop"), (4, "foo")], proc.stderr


def test_runtime_report_to_a_file_sums_inclusive_times(tmp_path):
    run_python(EXAMPLE, tmp_path, env={"CALI_CONFIG": "runtime-report,calc.inclusive,output=report.txt"})
    text = (tmp_path / "report.txt").read_text()
    assert report_rows(text) == [(0, "main"), (2, "init"), (2, "mainloop"), (4, "foo")], text


def test_event_trace_records_every_begin_and_end_with_its_path(tmp_path):
    run_python(EXAMPLE, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    events = []
    for r in records:
        for key, value in r.items():
            if key.startswith("event.begin#") or key.startswith("event.end#"):
                events.append((key, str(value), r.get("path", "")))
    assert events[:4] == [
        ("event.begin#region", "main", ""),
        ("event.begin#region", "init", "main"),
        ("event.end#region", "init", "main/init"),
        ("event.begin#loop", "mainloop", "main"),
    ], events
    foo_ends = [(r["path"], r["iteration#mainloop"]) for r in records if r.get("event.end#region") == "foo"]
    assert foo_ends == [("main/mainloop/foo", i) for i in range(4)], foo_ends
    assert events[-2:] == [
        ("event.end#loop", "mainloop", "main/mainloop"),
        ("event.end#region", "main", "main"),
    ], events
    assert all(r["time.duration.ns"] >= 0 for r in records)


def test_loop_iterations_are_values_of_the_iteration_attribute(tmp_path):
    run_python(EXAMPLE, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    begun = [r["event.begin#iteration#mainloop"] for r in records if "event.begin#iteration#mainloop" in r]
    ended = [r["event.end#iteration#mainloop"] for r in records if "event.end#iteration#mainloop" in r]
    assert begun == [0, 1, 2, 3] and ended == [0, 1, 2, 3], records


def test_globals_from_python_are_run_metadata(tmp_path):
    run_python(EXAMPLE, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    globals_ = read_globals(tmp_path / "trace.cali")
    assert globals_["iterations"] == "4" and globals_["problem"] == "sedov", globals_


def test_the_decorator_names_regions_and_ends_them_on_exceptions(tmp_path):
    code = """
        from pycaliper.high_level import annotate_function

        @annotate_function("custom name")
        def named():
            return 1

        @annotate_function()
        def failing():
            raise KeyError("expected")

        assert named() == 1 and named.__name__ == "named"
        try:
            failing()
        except KeyError:
            pass
        else:
            raise AssertionError("the exception was swallowed")
    """
    run_python(code, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    ends = [(r["event.end#region"], r["path"]) for r in records if "event.end#region" in r]
    assert ends == [("custom name", "custom name"), ("failing", "failing")], ends


def test_phases_and_comm_regions_nest_with_regions(tmp_path):
    code = """
        from pycaliper.instrumentation import *

        begin_phase("setup")
        begin_region("work")
        begin_comm_region("halo")
        end_comm_region("halo")
        end_region("work")
        end_phase("setup")
    """
    run_python(code, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    halo = [r for r in records if r.get("event.end#comm.region") == "halo"]
    assert len(halo) == 1 and halo[0]["path"] == "setup/work/halo", records


def test_nothing_is_written_without_a_config(tmp_path):
    proc = run_python(EXAMPLE, tmp_path)
    assert proc.stderr == "" and proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["program.py"]


def test_the_example_program_prints_its_report_and_rejects_a_bad_config(tmp_path):
    example = REPO / "examples" / "python" / "py-example.py"
    proc = run_python(example.read_text(), tmp_path)
    assert report_rows(proc.stderr) == [(0, "main"), (2, "init"), (2, "mainloop"), (4, "foo")], proc.stderr
    bad = run_python(example.read_text() + "\n", tmp_path, args=["no-such-config"], check=False)
    assert bad.returncode == 1 and bad.stderr == "Caliper config error: Unknown config or parameter: no-such-config\n"
