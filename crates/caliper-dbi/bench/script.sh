#!/usr/bin/env bash
# Measures cali-run --script against cali-run: the same collectors
# (fcount,arcs) on the same programs, the Python-driven run and the plain
# cali-run run alternating, RUNS times (default 3); then the cost of one
# event callback into Python (a program raising 20000 signals, measured
# with and without an on_signal callback, alternating).
#
# Usage: crates/caliper-dbi/bench/script.sh [RUNS]   (from the workspace root)
set -euo pipefail
source "$(dirname "$0")/setup.sh"

cat >both.py <<'PY'
import sys, caliper.dbi as dbi
proc = dbi.process(sys.argv[1:])
both = dbi.measurement_set(dbi.fcount(proc), dbi.arc_count(proc))
status = proc.run()
both.write("script.cali")
sys.exit(status)
PY
python3 -c '
import random
random.seed(1)
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"]
with open("text", "w") as f:
    for _ in range(300000):
        f.write(" ".join(random.choice(words) for _ in range(12)) + " %d\n" % random.randint(0, 10**6))
'
# Wall and CPU (user + system of the tool and the program) of a command.
measure() {
    /usr/bin/time -o times -f "%e %U %S" "$@" >/dev/null 2>/dev/null || true
    awk '{ printf "wall %.2f s, cpu %.2f s", $1, $2 + $3 }' times
}
echo "== /bin/true, fcount,arcs: the fixed cost of the script (python3 start, the package, the library)"
for i in $(seq "$runs"); do
    echo "cali-run:          $(measure "$run" -c fcount,arcs -o run.cali -- true)"
    echo "cali-run --script: $(measure "$run" --script both.py -- true)"
done
echo "== gzip -6 -c of $(du -h text | cut -f1) text, fcount,arcs"
for i in $(seq "$runs"); do
    echo "cali-run:          $(measure "$run" -c fcount,arcs -o run.cali -- gzip -6 -c text)"
    echo "cali-run --script: $(measure "$run" --script both.py -- gzip -6 -c text)"
done
echo "== xz -1 -T1 -c of the same text, fcount,arcs"
for i in $(seq "$runs"); do
    echo "cali-run:          $(measure "$run" -c fcount,arcs -o run.cali -- xz -1 -T1 -c text)"
    echo "cali-run --script: $(measure "$run" --script both.py -- xz -1 -T1 -c text)"
done

gcc -O2 -o signals "$here/signals.c"
cat >signals.py <<'PY'
import sys, time, caliper.dbi as dbi
n = 20000
proc = dbi.process(["./signals", str(n)])
dbi.fcount(dbi.context(proc, include=["signals"]))
seen = []
if sys.argv[1] == "callback":
    proc.on_signal(lambda sig, pid, tid: seen.append(sig))
start = time.perf_counter()
assert proc.run() == 0
elapsed = time.perf_counter() - start
assert len(seen) == (n if sys.argv[1] == "callback" else 0)
print("%.1f" % (elapsed * 1e6 / n))
PY
echo "== 20000 signals, microseconds per signal (two ptrace stops each; the difference is the callback)"
for i in $(seq "$runs"); do
    without=$("$run" --script signals.py none)
    with=$("$run" --script signals.py callback)
    echo "without a callback: $without us, with on_signal: $with us, callback: $(echo "$with - $without" | bc -l) us"
done
cat >thunk.py <<'PY'
import ctypes, signal, time, caliper.dbi as dbi
from caliper.dbi import _lib
proc = dbi.process(["true"])
proc.on_signal(lambda sig, pid, tid: None)
thunk = _lib.CALLBACK(proc._dispatch)
event = _lib.Event(kind=_lib.EVENT_SIGNAL, pid=1, tid=1, status=-1, signal=signal.SIGUSR1)
n = 200000
start = time.perf_counter()
for _ in range(n):
    thunk(None, ctypes.byref(event), None)
print("%.2f" % ((time.perf_counter() - start) * 1e6 / n))
PY
echo "== one on_signal callback called through its C function pointer from Python (both transitions: an upper bound)"
for i in $(seq "$runs"); do
    echo "$("$run" --script thunk.py) us"
done
