"""Helpers of the caliper.dbi tests: the C test programs of caliper-dbi's
Rust tests (built once per pytest run with gcc), the engine library and
cali-run of a cargo build, and reading cali-run's flow data.

``scripts/test-all.sh`` installs the package into ``target/test-venv`` and
builds the release library and cali-run; ``CALIPER_TOOLS_DIR`` names the
directory holding them (else target/release, then target/debug).
"""

import os
import pathlib
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[4]
CRATE = REPO / "crates" / "caliper-dbi"
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
SOURCES = CRATE / "tests" / "c"


def tools_dir():
    """The directory holding cali-run and libcaliper_dbi.so."""
    candidates = [os.environ.get("CALIPER_TOOLS_DIR"), TARGET / "release", TARGET / "debug"]
    for d in candidates:
        if d and (pathlib.Path(d) / "cali-run").exists() and (pathlib.Path(d) / "libcaliper_dbi.so").exists():
            return pathlib.Path(d).resolve()
    pytest.fail("cali-run and libcaliper_dbi.so not found in %s: run scripts/test-all.sh" % candidates)


# The package loads the library at import: point it at the build's.
os.environ.setdefault("CALI_DBI_LIBRARY", str(tools_dir() / "libcaliper_dbi.so"))


def gcc(directory, *args):
    try:
        subprocess.run(["gcc", *map(str, args)], cwd=directory, check=True)
    except FileNotFoundError:
        pytest.fail("gcc not found: run scripts/test-all.sh, which installs it")


@pytest.fixture(scope="session")
def programs(tmp_path_factory):
    """A directory with ``counts`` (linked with libshared.so, dlopens
    libplugin.so; exits 3 after a child that exits 5), ``spin`` (half a
    second of CPU in main > outer > spin) and ``attach`` (calls tick for
    argv[1] seconds after printing "ready")."""
    d = tmp_path_factory.mktemp("programs")
    gcc(d, "-O2", "-shared", "-fPIC", "-o", "libshared.so", SOURCES / "shared.c")
    gcc(d, "-O2", "-shared", "-fPIC", "-o", "libplugin.so", SOURCES / "plugin.c")
    gcc(d, "-O2", "-o", "counts", SOURCES / "counts.c", "-L.", "-lshared", "-Wl,-rpath,$ORIGIN", "-ldl", "-lpthread")
    gcc(d, "-O2", "-fno-omit-frame-pointer", "-o", "spin", SOURCES / "spin.c")
    gcc(d, "-O2", "-o", "attach", SOURCES / "attach.c")
    return d


@pytest.fixture
def in_programs(programs, monkeypatch):
    """Runs the test in the programs' directory."""
    monkeypatch.chdir(programs)
    return programs


def cali_run(*args, cwd):
    """Runs cali-run with ``args``; the completed process (text output)."""
    return subprocess.run(
        [str(tools_dir() / "cali-run"), *map(str, args)],
        cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
    )


def read_flow_data(path):
    """A flow-data file as (functions, arcs): {(module, address, name):
    calls} and {(caller module, call site, caller, callee module, callee
    entry, callee): calls}."""
    lines = pathlib.Path(path).read_text().splitlines()
    assert lines[0] == "# cali-run flow data 1"
    functions, arcs = {}, {}
    for line in lines[1:]:
        kind, calls, *key = line.split("\t")
        table = functions if kind == "F" else arcs
        key = tuple(int(k, 16) if k.startswith("0x") and i % 3 == 1 else k for i, k in enumerate(key))
        table[key] = table.get(key, 0) + int(calls)
    return functions, arcs
