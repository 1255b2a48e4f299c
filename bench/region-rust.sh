#!/usr/bin/env bash
# ns per region update (one begin or one end) from Rust, by config:
# cali-annotation-perftest opening and closing 10 nested regions named from
# a 10 x 20 table, the configs taking turns run after run. Where valgrind
# is present, also the instructions per update, counted by callgrind as the
# difference between two iteration counts (so that start-up and flush do
# not count), which does not swing with the machine's load.
#
#   bench/region-rust.sh [--smoke]      (RUNS=5 alternating runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-cli --bin cali-annotation-perftest
per_update "$target/release/cali-annotation-perftest" \
    "nothing measured||" \
    "runtime-report|CALI_CONFIG=runtime-report,output=/dev/null|-x 0" \
    "event-trace|CALI_CONFIG=event-trace,output=/dev/null|-x 0" \
    "aggregate,event,timer (fused path)||-P aggregate,event,timer" \
    "aggregate,event,timer,pthread||-P aggregate,event,timer,pthread" \
    "aggregate,event,timer and a region counter (measurement_template)|CALI_MEASUREMENT_TEMPLATE_NAMES=a|-P aggregate,event,timer,measurement_template"

