#!/usr/bin/env bash
# Measures cali-run: the cost of one call of an instrumented function (its
# trampoline in place), the cost of instrumenting a function (its first
# hit), and the slowdown of gzip and xz on a 100 MB input, each plain and
# under cali-run, alternating, RUNS times (default 3).
#
# Usage: crates/caliper-dbi/bench/bench.sh [RUNS]   (from the workspace root)
set -euo pipefail
source "$(dirname "$0")/setup.sh"

gcc -O2 -o callcost "$here/callcost.c" -lpthread
echo "== one call of an empty function (100 million calls)"
for i in $(seq "$runs"); do
    echo "plain:              $(./callcost)"
    echo "fcount trampoline:  $("$run" -c fcount -i callcost -o /dev/null -- ./callcost)"
    echo "arcs trampoline:    $("$run" -c arcs -i callcost -o /dev/null -- ./callcost)"
done
echo "== the same in two threads at once (100 million calls each; their counters shared)"
for i in $(seq "$runs"); do
    echo "plain:              $(./callcost 100000000 2)"
    echo "fcount trampoline:  $("$run" -c fcount -i callcost -o /dev/null -- ./callcost 100000000 2)"
    echo "arcs trampoline:    $("$run" -c arcs -i callcost -o /dev/null -- ./callcost 100000000 2)"
done
echo "breakpoint (ptrace): $("$run" -c fcount --breakpoints-only -i callcost -o /dev/null -- ./callcost 20000)"

# 5000 functions, each called once: what instrumenting one costs.
{
    for f in $(seq 5000); do echo "__attribute__((noipa)) int f$f(int x) { return x * $f + 1; }"; done
    echo "int main(void) { int s = 0;"
    for f in $(seq 5000); do echo "s += f$f(s);"; done
    echo "return s == 42; }"
} >firsthit.c
gcc -O1 -o firsthit firsthit.c
echo "== 5000 functions called once (first hits): the run with them instrumented less the run without, per function"
elapsed() {
    local start end
    start=$(date +%s.%N)
    "$run" "$@" -o /dev/null -- ./firsthit || true
    end=$(date +%s.%N)
    echo "$end - $start" | bc -l
}
for i in $(seq "$runs"); do
    base=$(elapsed -c fcount -i firsthit -x 'f*')
    for c in coverage fcount; do
        t=$(elapsed -c "$c" -i firsthit)
        echo "$c: $(echo "($t - $base) * 1000000 / 5000" | bc -l | cut -c1-6) us per function"
    done
done

python3 - <<'PY'
import random
random.seed(1)
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa"]
with open("big.txt", "w") as f:
    n = 0
    while n < 100 * 1024 * 1024:
        line = " ".join(random.choice(words) for _ in range(12)) + " %d\n" % random.randint(0, 10**6)
        f.write(line)
        n += len(line)
PY
# Wall time, and CPU time (user + system of the program and the tool),
# which the other work on a shared machine disturbs less.
seconds() {
    local TIMEFORMAT='%R %U %S'
    { time "$@" >/dev/null 2>&1; } 2>&1 | awk '{ printf "%.2f s (cpu %.2f s)", $1, $2 + $3 }'
}
for prog in "gzip -6 -c big.txt" "xz -1 -T1 -c big.txt"; do
    echo "== $prog (100 MB)"
    for i in $(seq "$runs"); do
        echo "plain $(seconds $prog)  fcount $(seconds "$run" -c fcount -o /dev/null -- $prog)  fcount,arcs $(seconds "$run" -c fcount,arcs -o /dev/null -- $prog)"
    done
done
