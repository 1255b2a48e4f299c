"""Regions from Python and from C code it calls share one runtime and
one context tree, whichever of them loads libcaliper first."""

import os
import subprocess

from conftest import build_c_library, read_records, report_rows, run_python, tools_dir

C_SOURCE = """
    #include <caliper/cali.h>

    void c_begin(void) { CALI_MARK_BEGIN("c.work"); }
    void c_end(void) { CALI_MARK_END("c.work"); }
"""

PROGRAM = """
    import ctypes, os, sys
    LOAD_FIRST = {load_first!r}
    if LOAD_FIRST:
        work = ctypes.CDLL(sys.argv[0].replace("program.py", "libwork.so"))
    import pycaliper
    from pycaliper.instrumentation import begin_region, end_region
    if not LOAD_FIRST:
        work = ctypes.CDLL(os.path.abspath("libwork.so"))

    begin_region("py.outer")
    work.c_begin()
    begin_region("py.inner")
    end_region("py.inner")
    work.c_end()
    end_region("py.outer")

    maps = open("/proc/self/maps").read()
    runtimes = sorted({{line.split()[-1] for line in maps.splitlines()
                       if "libcaliper.so" in line or "pycaliper/_native" in line}})
    print(pycaliper._native._library_path())
    print(",".join(runtimes))
"""


def check_one_tree(tmp_path):
    records = read_records(tmp_path / "trace.cali")
    ends = [(r["event.end#region"], r["path"]) for r in records if "event.end#region" in r]
    assert ends == [
        ("py.inner", "py.outer/c.work/py.inner"),
        ("c.work", "py.outer/c.work"),
        ("py.outer", "py.outer"),
    ], ends


def test_a_c_library_loaded_after_import_uses_the_modules_runtime(tmp_path, c_compiler):
    build_c_library(c_compiler, tmp_path, C_SOURCE)
    proc = run_python(PROGRAM.format(load_first=False), tmp_path, env={"CALI_CONFIG": "event-trace,output=trace.cali"})
    library, mapped = proc.stdout.splitlines()
    assert "pycaliper/_native" in library and mapped == library, proc.stdout
    check_one_tree(tmp_path)


def test_a_libcaliper_loaded_before_import_is_the_one_used(tmp_path, c_compiler):
    build_c_library(c_compiler, tmp_path, C_SOURCE)
    env = {"CALI_CONFIG": "event-trace,output=trace.cali", "LD_LIBRARY_PATH": str(tools_dir())}
    proc = run_python(PROGRAM.format(load_first=True), tmp_path, env=env)
    library = proc.stdout.splitlines()[0]
    assert os.path.samefile(library, tools_dir() / "libcaliper.so"), proc.stdout
    check_one_tree(tmp_path)


def test_a_preloaded_libcaliper_writes_the_only_report(tmp_path, c_compiler):
    build_c_library(c_compiler, tmp_path, C_SOURCE)
    env = {"CALI_CONFIG": "runtime-report", "LD_PRELOAD": str(tools_dir() / "libcaliper.so")}
    proc = run_python(PROGRAM.format(load_first=False), tmp_path, env=env)
    assert os.path.samefile(proc.stdout.splitlines()[0], tools_dir() / "libcaliper.so"), proc.stdout
    assert proc.stderr.count("Path ") == 1, proc.stderr
    assert report_rows(proc.stderr) == [(0, "py.outer"), (2, "c.work"), (4, "py.inner")], proc.stderr


def test_a_libcaliper_without_the_functions_fails_the_import_with_their_name(tmp_path, c_compiler):
    src = tmp_path / "fake.c"
    src.write_text('const char* cali_caliper_version(void) { return "other"; }\n')
    fake = tmp_path / "libcaliper.so"
    subprocess.run([c_compiler, "-shared", "-fPIC", "-o", str(fake), str(src)], check=True)
    code = """
        try:
            import pycaliper
        except ImportError as e:
            print(e)
    """
    proc = run_python(code, tmp_path, env={"LD_PRELOAD": str(fake)})
    assert proc.stdout.startswith("pycaliper: %s: libcaliper has no cali_init" % fake), proc.stdout
