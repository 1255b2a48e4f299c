# shellcheck shell=bash disable=SC2034 # (the variables are the scripts')
# Shared by the bench/ scripts: the repeat count, the smoke mode, and the
# arithmetic that turns repeated runs into the figures the guide's
# performance page shows. Sourced, never run.
#
# Every script prints its figures as lines "LABEL: FIGURE", FIGURE starting
# with a number, which is what `run-all.sh --smoke` checks for.

set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# --smoke: one run each at tiny counts, so that the scripts are exercised
# by scripts/test-all.sh without costing it minutes. The figures it prints
# mean nothing.
smoke=0
if [ "${1:-}" = "--smoke" ]; then
    smoke=1
fi
# Alternating runs per configuration (the range printed is over them).
runs=${RUNS:-5}
[ "$smoke" = 1 ] && runs=1
target=${CARGO_TARGET_DIR:-target}
scratch=$(mktemp -d "${TMPDIR:-/tmp}/caliper-bench.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# The release libcaliper under its soname (libcaliper.so.2), which cargo
# does not make and a program linked against it looks for: link with
# -L"$target/release" -lcaliper and run with this folder in the rpath.
libdir="$scratch/lib"
mkdir -p "$libdir"
ln -s "$(realpath -m "$target")/release/libcaliper.so" "$libdir/libcaliper.so.2"

# count FULL SMOKE: the count of a run, tiny in smoke mode.
count() {
    if [ "$smoke" = 1 ]; then echo "$2"; else echo "$1"; fi
}

# is_number VALUE WHAT: fails, saying so, unless VALUE is a number (a
# figure parsed from a tool's output, where the output changed shape).
is_number() {
    [[ $1 =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || {
        echo "bench: no figure for $2 (got \"$1\")" >&2
        return 1
    }
}

# range DECIMALS VALUE...: "min–max" of the values (one value: itself).
range() {
    local decimals=$1
    shift
    printf '%s\n' "$@" | sort -g | awk -v d="$decimals" \
        'NR == 1 { lo = $1 } { hi = $1 } END { if (lo == hi) printf "%.*f\n", d, lo; else printf "%.*f–%.*f\n", d, lo, d, hi }'
}

# ratio A B [DECIMALS]: A / B, B taken as at least 0.01 (the resolution of
# the times measured: a smoke run's may be 0).
ratio() {
    awk -v a="$1" -v b="$2" -v d="${3:-2}" 'BEGIN { printf "%.*f\n", d, a / (b < 0.01 ? 0.01 : b) }'
}

# seconds COMMAND...: runs COMMAND (its output discarded) and prints its
# wall seconds, its CPU seconds (user + system, children included) and its
# peak resident size in MB.
seconds() {
    /usr/bin/time -f '%e %U %S %M' -o "$scratch/time" "$@" >/dev/null 2>"$scratch/stderr" || {
        cat "$scratch/stderr" >&2
        return 1
    }
    awk '{ printf "%s %.3f %.1f\n", $1, $2 + $3, $4 / 1024 }' "$scratch/time"
}

# instructions COMMAND...: the instructions COMMAND executes, counted by
# callgrind (valgrind must be present).
instructions() {
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$scratch/callgrind.out" "$@" >/dev/null 2>"$scratch/valgrind" || {
        cat "$scratch/valgrind" >&2
        return 1
    }
    awk '/^(summary|totals):/ { print $2; exit }' "$scratch/callgrind.out"
}

have_valgrind() {
    command -v valgrind >/dev/null 2>&1
}

# per_update PERFTEST CONFIG...: the ns per region update, and where
# valgrind is present the instructions, of an annotation perftest
# (cali-annotation-perftest or c-annotation-perftest: same options) under
# each CONFIG, "LABEL|ENVIRONMENT|OPTIONS" (ENVIRONMENT: NAME=VALUE words
# such as CALI_CONFIG=runtime-report; OPTIONS after -d 10 -w 20 -i N),
# the configs taking turns run after run. Instructions are counted by
# callgrind as the difference between two iteration counts, so that what a
# run pays once (start-up, exit) cancels out; they do not swing with the
# machine's load as times do.
per_update() {
    local binary=$1
    shift
    local config label environment options n figure small large a b
    local -A ns
    # perftest_cmd CONFIG ITERATIONS: the perftest's command line, into `cmd`.
    perftest_cmd() {
        IFS='|' read -r label environment options <<<"$1"
        # shellcheck disable=SC2206 # the environment and options are words
        cmd=(env $environment "$binary" -d 10 -w 20 -i "$2" $options)
    }
    for ((r = 0; r < runs; r++)); do
        for config in "$@"; do
            perftest_cmd "$config" "$(count 500000 200)"
            # "... updates in 0.030 s, 3.0 ns per update[ per thread]"; the
            # aggregate service warns on stderr that it writes nothing.
            n=$("${cmd[@]}" 2>/dev/null | sed -n 's/.*, \([0-9.]*\) ns per update.*/\1/p')
            is_number "$n" "${cmd[*]}"
            ns[$config]+=" $n"
        done
    done
    for config in "$@"; do
        # shellcheck disable=SC2086 # a list of numbers
        figure="$(range 1 ${ns[$config]}) ns per update"
        if have_valgrind; then
            small=$(count 2000 100) large=$(count 4000 200)
            perftest_cmd "$config" "$small"
            a=$(instructions "${cmd[@]}")
            perftest_cmd "$config" "$large"
            b=$(instructions "${cmd[@]}")
            figure+=", $(awk -v a="$a" -v b="$b" -v n=$((20 * (large - small))) 'BEGIN { printf "%.0f", (b - a) / n }') instructions"
        fi
        echo "${config%%|*}: $figure"
    done
}

# overhead LABEL,... -- COMMAND...: runs COMMAND natively and under each
# measuring prefix in turn, RUNS times, and prints per prefix the range of
# its CPU seconds and of their ratio to the native run next to it. Each
# label is "LABEL|PREFIX WORDS" (PREFIX goes before COMMAND).
overhead() {
    local variants=() label prefix t native measured
    local -A cpu ratios
    while [ "$1" != "--" ]; do
        variants+=("$1")
        shift
    done
    shift
    for ((r = 0; r < runs; r++)); do
        for variant in "${variants[@]}"; do
            IFS='|' read -r label prefix <<<"$variant"
            native=$(seconds "$@")
            # shellcheck disable=SC2086 # the prefix is words
            measured=$(seconds $prefix "$@")
            read -r _ t _ <<<"$native"
            cpu[native]+=" $t"
            read -r _ measured _ <<<"$measured"
            cpu[$label]+=" $measured"
            ratios[$label]+=" $(ratio "$measured" "$t")"
        done
    done
    # shellcheck disable=SC2086 # lists of numbers
    echo "without a profiler: $(range 2 ${cpu[native]}) s CPU"
    for variant in "${variants[@]}"; do
        label=${variant%%|*}
        # shellcheck disable=SC2086 # lists of numbers
        echo "$label: $(range 2 ${cpu[$label]}) s CPU, $(range 2 ${ratios[$label]})× the run without"
    done
}
