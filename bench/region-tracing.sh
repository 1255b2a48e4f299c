#!/usr/bin/env bash
# ns per span enter/exit through caliper_tracing::CaliperLayer, next to a
# region! begin/end pair in the same process, with nothing measured and
# under aggregate,event,timer: the criterion bench
# crates/caliper-tracing/benches/layer.rs, built once and run RUNS times,
# each run's median estimate taken.
#
#   bench/region-tracing.sh [--smoke]      (RUNS=5 runs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

if [ "$smoke" = 1 ]; then
    timing=(--warm-up-time 0.01 --measurement-time 0.01 --sample-size 10)
else
    timing=(--warm-up-time 1 --measurement-time 2)
fi
bench=$(cargo bench --quiet --no-run -p caliper-tracing --bench layer --message-format=json |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p')
benches=(span_enter_exit/no_channel region_pair/no_channel
    span_enter_exit/aggregate_event_timer region_pair/aggregate_event_timer)
declare -A ns
for ((r = 0; r < runs; r++)); do
    # A name on its own line when long, then "time:   [low unit median unit high unit]".
    while read -r name median; do
        is_number "$median" "$name"
        ns[$name]+=" $median"
    done < <("$bench" --bench "${timing[@]}" \
        "^(span_enter_exit|region_pair)/(no_channel|aggregate_event_timer)\$" 2>/dev/null |
        awk '/^[a-z_]+\/[a-z_]+/ { name = $1 }
             /time:/ { sub(/.*time: *\[/, ""); v = $3; if ($4 == "ps") v /= 1000; if ($4 == "µs") v *= 1000; print name, v }')
done
for name in "${benches[@]}"; do
    first=${ns[$name]:-}
    first=${first# }
    is_number "${first%% *}" "$name"
    # shellcheck disable=SC2086 # a list of numbers
    echo "$name: $(range 1 ${ns[$name]}) ns"
done
