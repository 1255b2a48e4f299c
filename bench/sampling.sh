#!/usr/bin/env bash
# What sampling costs a program without annotations: gzip -6 of about 80 MB
# of text with the release libcaliper.so preloaded under sample-report at
# 1 kHz (five times its default) against gzip alone, the two taking turns;
# CPU time.
#
#   bench/sampling.sh [--smoke]      (RUNS=5 alternating pairs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-c
seq 1 "$(count 10000000 10000)" >"$scratch/data"
overhead "sample-report, preloaded|env LD_PRELOAD=$(realpath "$target/release/libcaliper.so") CALI_CONFIG=sample-report,sample.frequency=1000,output=/dev/null" \
    -- gzip -6 -c "$scratch/data"
