#!/usr/bin/env bash
# Runs every fuzz target in fuzz/ for a short fixed time on the stable
# toolchain: the libfuzzer-sys targets are built with the coverage
# instrumentation cargo-fuzz would add (sancov passes, as stable -C flags),
# then run with a seed corpus made from the fixtures. A crash fails the
# script and leaves the input under target/fuzz/artifacts/.
#
# Usage: scripts/fuzz-smoke.sh [SECONDS_PER_TARGET] (default 15).
# Needs a C++ compiler (libfuzzer-sys builds libFuzzer); test-all.sh
# installs g++.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-15}
host=$(rustc -vV | sed -n 's/^host: //p')
out=target/fuzz
# --target keeps these flags off build scripts, which are not linked with
# libFuzzer's coverage callbacks.
RUSTFLAGS="--cfg fuzzing -C debug-assertions -C overflow-checks \
-C passes=sancov-module \
-C llvm-args=-sanitizer-coverage-level=4 \
-C llvm-args=-sanitizer-coverage-inline-8bit-counters \
-C llvm-args=-sanitizer-coverage-pc-table \
-C llvm-args=-sanitizer-coverage-trace-compares" \
    cargo build --quiet --release --manifest-path fuzz/Cargo.toml --target "$host" --target-dir "$out" --bins

# Seeds: the reference's .cali files, and queries from the fixtures'
# README and the report configs; the formatter target takes a query line
# and then a stream.
seeds=$out/seeds
rm -rf "$seeds"
mkdir -p "$seeds/cali_reader" "$seeds/calql_parser" "$seeds/formatters" "$seeds/control_file" "$seeds/elf_functions" \
    "$seeds/cdb_command" "$seeds/module_cache_entry"
# cali-run's control files, and small ELF files of the system.
printf '# the application, the output, the collector\napplication = "a.out"\npbo_out = "flow.dat"\ncollector = "arc_count"\n' >"$seeds/control_file/simplified"
printf 'application = "gzip"\narguments = "-6 -c \x27a b\x27"\ninclude = libz*, main # c\nduration = 2.5\nfollow = fork\n' >"$seeds/control_file/full"
printf 'x/8xg $rsp+16\n' >"$seeds/cdb_command/examine"
printf 'break *0x401136\n' >"$seeds/cdb_command/break"
for f in /bin/true /bin/false /usr/lib/x86_64-linux-gnu/libdl.so.2; do
    [ -f "$f" ] && cp "$f" "$seeds/elf_functions/" || true
done
# cali-run's cache entries of two small modules, written here.
cache=$(mktemp -d)
XDG_CACHE_HOME=$cache cargo run --quiet --release -p caliper-dbi --bin cali-run -- -c fcount -o "$cache/out.cali" -- /bin/true
for f in "$cache"/caliper/dbi/*; do
    if [ "$(stat -c %s "$f")" -lt 200000 ]; then cp "$f" "$seeds/module_cache_entry/"; fi
done
rm -rf "$cache"
queries=(
    "select * format table"
    "select region,count(),sum(time.duration.ns) group by region format table"
    "select sum(sum#sum#time.duration) group by path format tree"
    "select * format json(object,pretty)"
    "select * format json-split"
    "let t=scale(sum#time.duration.ns,1e-9),l=leaf() where l group by path select sum(t) as \"Time (E)\",inclusive_sum(t) format tree(column-width=20)"
    "select count() where not region=main order by count desc format tree"
    "format trace-event(counters=region.count)"
    "format perfetto"
    "select sum#sum#time.duration format flamegraph"
)
for i in "${!queries[@]}"; do
    printf '%s' "${queries[$i]}" >"$seeds/calql_parser/query-$i"
done
i=0
for f in fixtures/reference/*.cali fixtures/repro/*.cali; do
    cp "$f" "$seeds/cali_reader/"
    { printf '%s\n' "${queries[$((i % ${#queries[@]}))]}"; cat "$f"; } >"$seeds/formatters/$(basename "$f")"
    i=$((i + 1))
done

status=0
for target in cali_reader calql_parser formatters control_file elf_functions cdb_command module_cache_entry; do
    corpus=$out/corpus/$target
    mkdir -p "$corpus" "$out/artifacts/$target"
    log=$out/$target.log
    if "$out/$host/release/$target" -max_total_time="$seconds" -seed=1 -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/$target/" "$corpus" "$seeds/$target" >"$log" 2>&1; then
        runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
        echo "fuzz $target: $runs executions in ${seconds}s, no crash"
    else
        echo "fuzz $target: FAILED, see $log and $out/artifacts/$target/"
        tail -n 40 "$log"
        status=1
    fi
done
exit $status
