#!/usr/bin/env bash
# What annotations cost in memory: crates/caliper-c/tests/c/memory.c built
# against the release libcaliper.so. Many short-lived threads (each doing
# 100 updates) under runtime-report, 800 and ten times as many: the peak
# resident size should not grow with threads that have exited. Many
# distinct region names, each begun and ended once: the peak resident
# size per name over a run with none, by config.
#
#   bench/memory.sh [--smoke]      (RUNS=5 alternating runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-c
gcc -O2 -Icrates/caliper-c/include -o "$scratch/memory" crates/caliper-c/tests/c/memory.c \
    -L"$target/release" -lcaliper -lpthread -Wl,-rpath,"$libdir"
threads=$(count 800 8) names=$(count 200000 100)
configs=(
    "nothing measured|"
    "aggregate,event,timer services|CALI_SERVICES_ENABLE=aggregate,event,timer"
    "runtime-report|CALI_CONFIG=runtime-report,output=/dev/null"
)
# peak ENVIRONMENT ARGS...: the peak resident MB of the program.
peak() {
    local environment=$1 t
    shift
    # shellcheck disable=SC2086 # the environment is words
    t=$(seconds env $environment "$scratch/memory" "$@")
    echo "${t##* }"
}

report=CALI_CONFIG=runtime-report,output=/dev/null
few=() many=()
declare -A per_name
for ((r = 0; r < runs; r++)); do
    few+=("$(peak "$report" threads "$threads")")
    many+=("$(peak "$report" threads $((threads * 10)))")
    for config in "${configs[@]}"; do
        IFS='|' read -r label environment <<<"$config"
        none=$(peak "$environment" names 0)
        all=$(peak "$environment" names "$names")
        per_name[$label]+=" $(awk -v a="$all" -v b="$none" -v n="$names" 'BEGIN { printf "%.0f", (a - b) * 1048576 / n }')"
    done
done
echo "threads, runtime-report: $(range 1 "${few[@]}") MB peak for $threads threads, $(range 1 "${many[@]}") MB for $((threads * 10))"
for config in "${configs[@]}"; do
    label=${config%%|*}
    # shellcheck disable=SC2086 # a list of numbers
    echo "distinct region names, $label: $(range 0 ${per_name[$label]}) bytes per name ($names names)"
done
