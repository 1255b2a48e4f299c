#!/usr/bin/env bash
# ns per region update through the C ABI (CALI_MARK_BEGIN/CALI_MARK_END),
# by config: examples/c/c-annotation-perftest.c, built against the release
# libcaliper.so, with the same table and configs as region-rust.sh.
#
#   bench/region-c.sh [--smoke]      (RUNS=5 alternating runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-c
gcc -O2 -Icrates/caliper-c/include -o "$scratch/c-annotation-perftest" examples/c/c-annotation-perftest.c \
    -L"$target/release" -lcaliper -Wl,-rpath,"$libdir"
per_update "$scratch/c-annotation-perftest" \
    "nothing measured||" \
    "runtime-report|CALI_CONFIG=runtime-report,output=/dev/null|-x 0" \
    "aggregate,event,timer (fused path)||-x 1 -P aggregate,event,timer"
