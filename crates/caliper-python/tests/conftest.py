"""Helpers of the pycaliper tests.

Each test runs its Python program in a fresh interpreter, as Caliper's
configuration is read once per process. The programs import the
installed ``pycaliper`` wheel; ``scripts/test-all.sh`` builds and
installs it into ``target/test-venv`` and builds the tools the tests read
outputs with (``cali-query``) and link C code against (``libcaliper.so``).
"""

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


def tools_dir():
    """The directory holding cali-query and libcaliper.so, and the link
    libcaliper.so.2 (its soname, which C code linked against it needs at
    run time) that cargo does not make and ``make install`` does."""
    candidates = [os.environ.get("CALIPER_TOOLS_DIR"), TARGET / "release", TARGET / "debug"]
    for d in candidates:
        if d and (pathlib.Path(d) / "cali-query").exists() and (pathlib.Path(d) / "libcaliper.so").exists():
            d = pathlib.Path(d).resolve()
            soname = d / "libcaliper.so.2"
            if not soname.exists():
                soname.unlink(missing_ok=True)
                soname.symlink_to("libcaliper.so")
            return d
    pytest.fail("cali-query and libcaliper.so not found in %s: run scripts/test-all.sh" % candidates)


def run_python(code, tmp_path, env=None, check=True, args=()):
    """Runs `code` (dedented) with this interpreter in `tmp_path`, with
    command-line arguments `args`; returns the completed process (text
    output)."""
    script = tmp_path / "program.py"
    script.write_text(textwrap.dedent(code))
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CALI_")}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if check:
        assert proc.returncode == 0, "exit %d\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout, proc.stderr)
    return proc


def cali_query(*args):
    """Runs cali-query; returns its standard output."""
    proc = subprocess.run([str(tools_dir() / "cali-query"), *map(str, args)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def read_records(path):
    """The snapshot records of a .cali file, as cali-query's JSON."""
    return json.loads(cali_query("-q", "select * format json", path))


def read_globals(path):
    """The globals of a .cali file as a dict."""
    line = cali_query("-G", "-e", path).strip()
    return dict(item.split("=", 1) for item in line.split(","))


def report_rows(text):
    """The rows of a runtime-report tree: (indent, name) per region line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Path"))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith("=="):
            break
        name = line.split()[0]
        rows.append((len(line) - len(line.lstrip(" ")), name))
    return rows


@pytest.fixture
def c_compiler():
    """The C compiler, required for the tests that load C code."""
    cc = shutil.which(os.environ.get("CC", "gcc"))
    if cc is None:
        pytest.fail("no C compiler (gcc): run scripts/test-all.sh, which installs it")
    return cc


def build_c_library(cc, tmp_path, source):
    """Builds `source` into tmp_path/libwork.so, linked against libcaliper
    by its soname (no run path: at run time the process's libcaliper is
    the one used)."""
    src = tmp_path / "work.c"
    src.write_text(textwrap.dedent(source))
    lib = tmp_path / "libwork.so"
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-o",
            str(lib),
            str(src),
            "-I",
            str(REPO / "crates" / "caliper-c" / "include"),
            "-L",
            str(tools_dir()),
            "-lcaliper",
        ],
        check=True,
    )
    return lib
