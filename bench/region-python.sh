#!/usr/bin/env bash
# ns per begin_region/end_region pair from Python, under runtime-report:
# crates/caliper-python/bench/region_pair.py (best of 7 repeats in each
# run, the thread's CPU time) against the floor of two no-op built-in
# calls. The extension module is built with cargo and put beside the
# package's Python sources in a scratch directory, so nothing is installed.
#
#   bench/region-python.sh [--smoke]      (RUNS=5 runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

python=${PYTHON:-python3}
PYO3_PYTHON=$python cargo build --quiet --release -p caliper-python --features pyo3/extension-module
cp -r crates/caliper-python/python/pycaliper "$scratch/"
cp "$target/release/lib_native.so" \
    "$scratch/pycaliper/_native$("$python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"

pairs=$(count 300000 1000)
declare -a region floor
for ((r = 0; r < runs; r++)); do
    out=$(CALI_CONFIG=runtime-report,output=/dev/null PYTHONPATH=$scratch \
        "$python" crates/caliper-python/bench/region_pair.py "$pairs")
    pair=$(sed -n 's|^begin_region/end_region pair  *\([0-9.-]*\) ns$|\1|p' <<<"$out")
    noop=$(sed -n 's|^two no-op built-in calls (floor)  *\([0-9.-]*\) ns$|\1|p' <<<"$out")
    is_number "$pair" "a begin_region/end_region pair"
    is_number "$noop" "two no-op built-in calls"
    region+=("$pair")
    floor+=("$noop")
done
echo "begin_region/end_region pair, runtime-report: $(range 1 "${region[@]}") ns (two no-op built-in calls: $(range 1 "${floor[@]}") ns)"
