"""Bad input raises Python exceptions, or (where the reference's C API
only logs) prints one `== CALIPER:` line; the interpreter never crashes
and the program's exit code is its own."""

from conftest import report_rows, run_python


def test_bad_arguments_raise_python_exceptions(tmp_path):
    code = """
        from pycaliper.annotation import Annotation
        from pycaliper.config_manager import ConfigManager
        from pycaliper.instrumentation import *
        from pycaliper.loop import Loop
        from pycaliper.types import *
        import pycaliper

        def raises(exc, f, *args):
            try:
                f(*args)
            except exc as e:
                return str(e)
            raise AssertionError("%s%r did not raise %s" % (f.__name__, args, exc.__name__))

        raises(TypeError, begin_region, 42)
        raises(TypeError, begin_region, None)
        raises(TypeError, begin_region)
        assert "NUL" in raises(ValueError, begin_region, "a\\0b")
        raises(ValueError, end_region, "a\\0b")
        raises(ValueError, Attribute, "x", 99)
        raises(ValueError, Attribute, "x", CALI_TYPE_INV)
        raises(TypeError, Attribute, "x", "int")
        raises(ValueError, Attribute, "x", CALI_TYPE_INT, 0, [Attribute("m", CALI_TYPE_INT)], [])
        a = Attribute("typed.int", CALI_TYPE_INT)
        assert "typed.int" in raises(TypeError, a.begin, "text")
        raises(TypeError, a.set, 1.5)
        raises(TypeError, a.begin)          # valueless: true, for boolean attributes only
        raises(TypeError, a.set, True)
        raises(OverflowError, a.set, 2**64)
        u = Attribute("typed.uint", CALI_TYPE_UINT)
        raises(OverflowError, u.set, -1)
        raises(TypeError, set_byname, "x", object())
        raises(TypeError, set_byname, "x", [1, 2])
        raises(ValueError, set_byname, "x", "a\\0b")
        raises(OverflowError, begin_byname, "huge", 2**70)
        raises(ValueError, set_global_byname, "bad\\0name", 1)
        raises(TypeError, Annotation("ann").begin, {"a": 1})
        raises(TypeError, Loop, 3)
        raises(TypeError, Loop("lp").start_iteration, "one")
        raises(TypeError, ConfigManager().add, None)
        raises(ValueError, ConfigManager().add, "runtime-report\\0")
        raises(TypeError, pycaliper.config_preset, 1)
        raises(ValueError, pycaliper.high_level.annotate_function, None, CALI_ATTR_ASVALUE)
        print("survived")
    """
    proc = run_python(code, tmp_path, env={"CALI_CONFIG": "runtime-report"})
    assert proc.stdout == "survived\n"


def test_unbalanced_regions_are_logged_and_the_program_runs_on(tmp_path):
    code = """
        import sys
        from pycaliper.instrumentation import begin_region, end_region, end_byname
        from pycaliper.loop import Loop

        begin_region("outer")
        end_region("not.begun")        # a stack error, logged
        end_byname("no.such.attribute")  # ignored, as in C
        lp = Loop("lp")
        lp.end()
        lp.end()                       # ends once
        end_region("outer")
        end_region("outer")            # nothing open any more
        print("done")
        sys.exit(3)
    """
    proc = run_python(code, tmp_path, env={"CALI_CONFIG": "runtime-report"}, check=False)
    assert proc.returncode == 3 and proc.stdout == "done\n", proc
    messages = [line for line in proc.stderr.splitlines() if line.startswith("== CALIPER: ")]
    # as the reference: the mismatch stops region tracking, and the report is still written
    assert messages[0].startswith("== CALIPER: Stack value mismatch: Trying to end region=not.begun"), proc.stderr
    assert report_rows(proc.stderr) == [], proc.stderr


def test_a_bad_config_string_is_one_line_and_no_crash(tmp_path):
    code = """
        from pycaliper.instrumentation import begin_region, end_region
        begin_region("main")
        end_region("main")
        print("done")
    """
    proc = run_python(code, tmp_path, env={"CALI_CONFIG": "runtime-report,no-such-option=("})
    assert proc.stdout == "done\n"
    assert proc.stderr.startswith("== CALIPER: ") and proc.stderr.count("\n") == 1, proc.stderr
