#!/usr/bin/env bash
# Runs every check and test of the workspace on a fresh machine.
#
# Installs what the tests need first (the tests themselves install nothing,
# and fail naming this script when something is missing): the C, C++ and
# Fortran compilers, CMake and pkg-config (the caliper-c tests build the
# examples against `make install`; the fuzz step builds libFuzzer with g++),
# `script` (cali-query's progress bar is tested under the terminal it makes),
# Debian's Open MPI (caliper-mpi builds against it; its tests run mpirun)
# and libclang (the `mpi` crate of caliper-mpi's `rsmpi` feature generates
# its bindings with it), Debian's Kokkos (libtrilinos-kokkos-dev: a real
# Kokkos program runs with libcaliper as its tool), Debian's PAPI
# (libpapi-dev: the papi service loads libpapi at run time, and its test
# program registers events with libsde), clang and LLVM's OpenMP
# runtime (libomp-dev: OpenMP programs run with libcaliper as their OMPT tool),
# and a Python virtualenv at target/test-venv (or under $CARGO_TARGET_DIR)
# with the reference's clients from crates/caliper-testutil/py/requirements.txt
# (the interoperability tests run them), maturin and pytest from
# crates/caliper-python/requirements-test.txt (the pycaliper wheel is
# built with maturin, installed there, and tested with pytest; so is the
# pure-Python caliper.dbi package of crates/caliper-dbi/python, whose tests
# read .cali files with caliper-reader), and the
# Debian programs that cali-run's tests measure (gzip, bzip2, xz, sqlite3,
# python3, gawk, perl, lua5.4, git, and libpython3.11-dev for a CPython on
# the shared libpython; strip and nm from binutils), GNU time (bench/'s
# scripts time their runs with it), and mdbook (into target/tools, to build
# the user guide). $PYTHON picks the Python.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in gcc:gcc g++:g++ gfortran:gfortran cmake:cmake pkg-config:pkg-config make:make script:bsdutils \
    mpirun:openmpi-bin mpicc:libopenmpi-dev \
    gzip:gzip bzip2:bzip2 xz:xz-utils sqlite3:sqlite3 /usr/bin/python3:python3 strip:binutils nm:binutils \
    /usr/bin/time:time \
    /usr/bin/gawk:gawk /usr/bin/perl:perl /usr/bin/lua5.4:lua5.4 /usr/bin/git:git \
    x86_64-linux-gnu-python3.11-config:libpython3.11-dev clang:clang; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || missing+=(libclang-dev)
[ -e /usr/include/trilinos/Kokkos_Core.hpp ] || missing+=(libtrilinos-kokkos-dev)
[ -e /usr/include/sde_lib.h ] || missing+=(libpapi-dev)
ls /usr/lib/llvm-*/lib/libomp.so >/dev/null 2>&1 || missing+=(libomp-dev)
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# On Debian a venv with pip needs the python3-venv package even where the
# venv module imports.
python=${PYTHON:-python3}
venv=${CARGO_TARGET_DIR:-target}/test-venv
if [ ! -x "$venv/bin/python" ] && ! "$python" -m venv "$venv" >/dev/null 2>&1; then
    echo "== installing python3-venv"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
echo "== Python test clients in $venv"
"$venv/bin/python" -m pip install --quiet -r crates/caliper-testutil/py/requirements.txt \
    -r crates/caliper-python/requirements-test.txt

echo "== formatting"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
echo "== lints"
cargo clippy --workspace --all-targets -- -D warnings
cargo clippy -p caliper-mpi --all-targets --features rsmpi -- -D warnings
echo "== API docs (a broken or private link, or a missing doc, fails)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps
echo "== user guide (mdbook build docs into target/book; a warning, a missing include or a broken link fails)"
mdbook=${CARGO_TARGET_DIR:-target}/tools/bin/mdbook
[ -x "$mdbook" ] || cargo install --quiet --locked mdbook --version 0.4.52 --root "${CARGO_TARGET_DIR:-target}/tools"
# mdbook logs a missing {{#include}} file as an error and still exits 0.
mdbook_log=$("$mdbook" build docs 2>&1) || { echo "$mdbook_log"; exit 1; }
if grep -E '\[(WARN|ERROR)\]' <<<"$mdbook_log"; then
    exit 1
fi
scripts/check-book-links.sh target/book
echo "== the performance page's bench scripts, at tiny counts (bench/run-all.sh --smoke)"
bench/run-all.sh --smoke
echo "== release build"
cargo build --workspace --release
# The guide's Python examples (crates/caliper-c/tests/docs_examples) run
# with the pycaliper wheel of this tree.
echo "== pycaliper: the wheel, built with maturin and installed in $venv"
target=${CARGO_TARGET_DIR:-target}
rm -rf "$target/wheels/pycaliper"
"$venv/bin/maturin" build --quiet --release -m crates/caliper-python/Cargo.toml \
    -i "$venv/bin/python" -o "$target/wheels/pycaliper"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps "$target"/wheels/pycaliper/*.whl
echo "== tests"
cargo test --workspace
cargo build -p caliper-mpi --features rsmpi --example rsmpi
cargo test -p caliper-mpi --features rsmpi --test mpi rust_programs_on_the_mpi_crate
echo "== pycaliper: its tests"
CALIPER_TOOLS_DIR="$target/release" "$venv/bin/python" -m pytest -q crates/caliper-python/tests
echo "== caliper.dbi: the package installed in $venv, its tests on the release libcaliper_dbi.so and cali-run"
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps crates/caliper-dbi/python
CALIPER_TOOLS_DIR="$target/release" "$venv/bin/python" -m pytest -q crates/caliper-dbi/python/tests
echo "== fuzz targets, 15 s each"
scripts/fuzz-smoke.sh 15
echo "== all tests passed"
