#!/usr/bin/env bash
# Runs every check and test of the workspace on a fresh machine.
#
# Installs what the tests need first: a Python 3 with the venv module (the
# interoperability tests create target/test-venv and install the reference
# clients, e.g. caliper-reader, into it from PyPI), and the C, C++ and
# Fortran compilers, CMake and pkg-config (the caliper-c tests build the
# examples against `make install`; the fuzz step builds libFuzzer with g++).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in gcc:gcc g++:g++ gfortran:gfortran cmake:cmake pkg-config:pkg-config make:make; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "== installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# Creating a venv with pip is what the tests do; on Debian that needs the
# python3-venv package even where the venv module imports.
venv_probe=$(mktemp -d)
if ! python3 -m venv "$venv_probe/v" >/dev/null 2>&1; then
    echo "== installing python3-venv"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv python3-pip
fi
rm -rf "$venv_probe"

echo "== formatting"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check
echo "== lints"
cargo clippy --workspace --all-targets -- -D warnings
echo "== release build"
cargo build --workspace --release
echo "== tests"
cargo test --workspace
echo "== fuzz targets, 15 s each"
scripts/fuzz-smoke.sh 15
echo "== all tests passed"
