#!/usr/bin/env bash
# What cali-run costs an unmodified program: gzip -6 of about 20 MB of text
# under each collector (fcount, arcs, sample) against gzip alone, and the
# start-up of a compiler (gcc -O2 -c of a small file: the driver, cc1's
# 45,000 functions and the assembler instrumented) and a compile of a real
# source file (Lua's lvm.c, from the lua-src crate the tests use: cc1 makes
# 133 million calls) under fcount and arcs, and the cost of a call through
# a trampoline: a program calling 2,000 functions in turn through a table
# (30 million calls: the code of 2,000 trampolines and their entries of the
# table of call arcs touched in no order), each measured run beside a
# native one; CPU time, the tool's included.
#
#   bench/cali-run.sh [--smoke]      (RUNS=5 alternating pairs)
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

cargo build --quiet --release -p caliper-dbi --bin cali-run
seq 1 "$(count 3000000 10000)" >"$scratch/data"
cali_run=$target/release/cali-run
overhead "fcount|$cali_run -c fcount -o $scratch/out.cali --" \
    "arcs|$cali_run -c arcs -o $scratch/out.cali --" \
    "sample|$cali_run -c sample -o $scratch/out.cali --" \
    -- gzip -6 -c "$scratch/data"
printf 'static int f(int x) { return 2 * x + 1; }\nint main(void) { return f(3); }\n' >"$scratch/small.c"
overhead "fcount|$cali_run -c fcount -o $scratch/out.cali --" \
    "arcs|$cali_run -c arcs -o $scratch/out.cali --" \
    -- gcc -O2 -c "$scratch/small.c" -o "$scratch/small.o"
# Lua's sources, where cargo unpacked the lua-src crate (the metadata of
# this platform's packages: those of others are not in the cache offline).
host=$(rustc -vV | sed -n 's/^host: //p')
lua=$(cargo metadata --format-version 1 --offline --filter-platform "$host" |
    python3 -c 'import json, sys, pathlib
crate = next(p for p in json.load(sys.stdin)["packages"] if p["name"] == "lua-src")
print(sorted(pathlib.Path(crate["manifest_path"]).parent.glob("lua-5.4*"))[-1])')
overhead "fcount|$cali_run -c fcount -o $scratch/out.cali --" \
    "arcs|$cali_run -c arcs -o $scratch/out.cali --" \
    -- gcc -O2 -c -I"$lua" "$lua/lvm.c" -o "$scratch/lvm.o"
# 2,000 functions called through a table, in an order no cache foresees.
{
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    for i in $(seq 0 1999); do
        echo "__attribute__((noinline)) long f$i(long x) { __asm__ volatile(\"\"); return x + $i; }"
    done
    echo "long (*volatile table[])(long) = {$(seq -s, -f 'f%g' 0 1999)};"
    echo 'int main(int argc, char **argv) {'
    echo '    long n = atol(argv[1]), s = 0;'
    echo '    for (long i = 0; i < n; i++) s = table[(i * 7919) % 2000](s);'
    echo '    printf("%ld\n", s);'
    echo '    return 0;'
    echo '}'
} >"$scratch/calls.c"
gcc -O2 "$scratch/calls.c" -o "$scratch/calls"
overhead "fcount|$cali_run -c fcount -o $scratch/out.cali --" \
    "arcs|$cali_run -c arcs -o $scratch/out.cali --" \
    -- "$scratch/calls" "$(count 30000000 100000)"
