"""Python threads have blackboards of their own."""

from conftest import read_records, report_rows, run_python

CODE = """
    import threading
    from pycaliper.instrumentation import begin_region, end_region, set_byname

    both_begun = threading.Barrier(2)
    main_begun = threading.Event()

    def worker(name):
        main_begun.wait()
        begin_region(name)
        set_byname("worker.name", name)
        both_begun.wait()         # each region is open while the other begins
        begin_region("inner")
        end_region("inner")
        both_begun.wait()
        end_region(name)

    begin_region("main")
    threads = [threading.Thread(target=worker, args=("t%d" % i,)) for i in range(2)]
    for t in threads:
        t.start()
    main_begun.set()
    for t in threads:
        t.join()
    end_region("main")
"""


def test_threads_regions_do_not_nest_in_each_other(tmp_path):
    run_python(CODE, tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    records = read_records(tmp_path / "trace.cali")
    inner = sorted((r["path"], r["worker.name"]) for r in records if r.get("event.end#region") == "inner")
    assert inner == [("t0/inner", "t0"), ("t1/inner", "t1")], records
    main_end = [r for r in records if r.get("event.end#region") == "main"]
    assert len(main_end) == 1 and main_end[0]["path"] == "main" and "worker.name" not in main_end[0]


def test_runtime_report_shows_each_threads_tree(tmp_path):
    proc = run_python(CODE, tmp_path, env={"CALI_CONFIG": "runtime-report"})
    rows = report_rows(proc.stderr)
    assert sorted(rows) == [(0, "main"), (0, "t0"), (0, "t1"), (2, "inner"), (2, "inner")], proc.stderr


def test_threads_still_annotating_at_exit_do_not_break_the_report(tmp_path):
    code = """
        import threading, sys
        from pycaliper.instrumentation import begin_region, end_region

        started = threading.Event()

        def spin():
            while True:
                begin_region("spin")
                started.set()
                end_region("spin")

        threading.Thread(target=spin, daemon=True).start()
        started.wait()
        begin_region("main")
        end_region("main")
        print("exiting")
        sys.exit(5)
    """
    proc = run_python(code, tmp_path, env={"CALI_CONFIG": "runtime-report"}, check=False)
    assert proc.returncode == 5 and proc.stdout == "exiting\n", proc
    assert sorted(report_rows(proc.stderr)) == [(0, "main"), (0, "spin")], proc.stderr


def test_a_forked_child_annotates_and_the_parent_reports_its_own_regions(tmp_path):
    code = """
        import os
        from pycaliper.instrumentation import begin_region, end_region

        begin_region("parent")
        pid = os.fork()
        if pid == 0:
            begin_region("child")
            end_region("child")
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7, status
        end_region("parent")
        print("parent done")
    """
    proc = run_python(code, tmp_path, env={"CALI_CONFIG": "runtime-report"})
    assert proc.stdout == "parent done\n", proc
    assert report_rows(proc.stderr) == [(0, "parent")], proc.stderr
