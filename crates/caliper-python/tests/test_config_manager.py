"""ConfigManager from Python."""

from conftest import read_records, report_rows, run_python


def test_a_config_started_and_flushed_from_python_writes_its_report(tmp_path):
    code = """
        from pycaliper.config_manager import ConfigManager
        from pycaliper.instrumentation import begin_region, end_region

        mgr = ConfigManager()
        assert mgr.add("runtime-report(output=report.txt)"), mgr.err_msg()
        assert not mgr.error() and mgr.err_msg() == ""
        mgr.start()
        begin_region("main")
        begin_region("solve")
        end_region("solve")
        end_region("main")
        mgr.flush()
        print(open("report.txt").read().count("solve"))
    """
    proc = run_python(code, tmp_path)
    assert proc.stdout.strip() == "1", proc.stdout
    assert report_rows((tmp_path / "report.txt").read_text()) == [(0, "main"), (2, "solve")]


def test_two_configs_and_the_constructor_argument(tmp_path):
    code = """
        from pycaliper.config_manager import ConfigManager
        from pycaliper.instrumentation import begin_region, end_region

        mgr = ConfigManager("event-trace(output=trace.cali)")
        assert mgr.add("runtime-report,output=report.txt")
        mgr.start()
        begin_region("main")
        end_region("main")
        mgr.stop()
        begin_region("after.stop")
        end_region("after.stop")
        mgr.flush()
    """
    run_python(code, tmp_path)
    records = read_records(tmp_path / "trace.cali")
    assert [r["event.begin#region"] for r in records if "event.begin#region" in r] == ["main"], records
    assert report_rows((tmp_path / "report.txt").read_text()) == [(0, "main")]


def test_errors_are_reported_as_by_the_reference(tmp_path):
    code = """
        from pycaliper.config_manager import ConfigManager

        mgr = ConfigManager()
        assert not mgr.add("no-such-config")
        assert mgr.error()
        print(mgr.err_msg())
        print(repr(mgr.check("runtime-report")), repr(mgr.check("runtime-report,bogus=1")))
        mgr.start()     # nothing to start: no crash
        mgr.flush()
    """
    proc = run_python(code, tmp_path)
    first, second = proc.stdout.splitlines()
    assert first == "Unknown config or parameter: no-such-config", proc.stdout
    assert second.startswith("'' ") and "bogus" in second, second


def test_specs_documentation_and_defaults(tmp_path):
    code = """
        import json
        from pycaliper.config_manager import ConfigManager
        from pycaliper.instrumentation import begin_region, end_region

        mgr = ConfigManager()
        specs = mgr.available_config_specs()
        assert "runtime-report" in specs and "event-trace" in specs, specs
        assert mgr.get_documentation_for_spec("runtime-report").startswith("runtime-report")
        mgr.add_config_spec(json.dumps({
            "name": "my-trace",
            "description": "regions traced to a file",
            "services": ["event", "trace", "recorder"],
            "config": {"CALI_RECORDER_FILENAME": "mine.cali"},
        }))
        assert "my-trace" in mgr.available_config_specs()
        mgr.set_default_parameter("output", "report.txt")
        assert mgr.add("my-trace,runtime-report"), mgr.err_msg()
        mgr.start()
        begin_region("custom")
        end_region("custom")
        mgr.flush()
    """
    run_python(code, tmp_path)
    records = read_records(tmp_path / "mine.cali")
    assert [r.get("event.end#region") for r in records if "event.end#region" in r] == ["custom"]
    assert report_rows((tmp_path / "report.txt").read_text()) == [(0, "custom")]


def test_a_manager_without_flush_writes_nothing(tmp_path):
    code = """
        from pycaliper.config_manager import ConfigManager
        from pycaliper.instrumentation import begin_region, end_region

        mgr = ConfigManager("runtime-report,output=report.txt")
        mgr.start()
        begin_region("main")
        end_region("main")
    """
    run_python(code, tmp_path)
    assert not (tmp_path / "report.txt").exists()
