#!/usr/bin/env bash
# Runs every row's script of the guide's performance page, one after the
# other (never two at once: they would measure each other).
#
#   bench/run-all.sh            the figures (RUNS=5 runs each; minutes)
#   bench/run-all.sh --smoke    each script once at tiny counts, checking
#                               that it printed its figures (for
#                               scripts/test-all.sh; the figures mean nothing)
set -euo pipefail
cd "$(dirname "$0")"
for script in region-rust region-c region-python region-tracing sampling cali-run query memory mpi; do
    echo "== bench/$script.sh $*"
    out=$("./$script.sh" "$@")
    echo "$out"
    # Every line is "LABEL: FIGURE", the figure a number.
    if [ -z "$out" ] || grep -qvE '^[^:]+: [0-9]' <<<"$out"; then
        echo "bench/$script.sh printed no figure where one was due" >&2
        exit 1
    fi
done
