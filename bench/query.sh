#!/usr/bin/env bash
# How fast cali-query reads a trace: an aggregation by region, and the
# conversion to a Perfetto timeline, of a synthetic event trace shaped like
# a real one (caliper-testutil's gen-trace: 2,000,000 records, 108 MB);
# wall time, records per second and peak resident size.
#
#   bench/query.sh [--smoke]      (RUNS=5 alternating runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-testutil --bin gen-trace
cargo build --quiet --release -p caliper-cli --bin cali-query
records=$(count 2000000 2000)
"$target/release/gen-trace" --markers "$records" >"$scratch/trace.cali"
queries=(
    "aggregation|select region,count(),sum(time.duration.ns) group by region format table|"
    "Perfetto timeline|format perfetto|-o $scratch/trace.perfetto-trace"
)
declare -A wall rate peak
for ((r = 0; r < runs; r++)); do
    for query in "${queries[@]}"; do
        IFS='|' read -r label calql options <<<"$query"
        # shellcheck disable=SC2086 # options are words
        t=$(seconds "$target/release/cali-query" -q "$calql" $options "$scratch/trace.cali")
        read -r w _ m <<<"$t"
        wall[$label]+=" $w"
        rate[$label]+=" $(ratio "$(ratio "$records" 1000000 3)" "$w" 1)"
        peak[$label]+=" $m"
    done
done
echo "trace: $records records, $(($(stat -c %s "$scratch/trace.cali") / 1000000)) MB"
for query in "${queries[@]}"; do
    label=${query%%|*}
    # shellcheck disable=SC2086 # lists of numbers
    echo "$label: $(range 2 ${wall[$label]}) s, $(range 1 ${rate[$label]}) M records/s, $(range 1 ${peak[$label]}) MB peak"
done
