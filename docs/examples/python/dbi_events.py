"""Events of a measured program, seen from a caliper.dbi script: the
processes that end, the libraries loaded, the calls of `leaf` counted
every 100 ms while the program runs, and the signals it gets.

    cali-run --script dbi_events.py -- PROGRAM ARGS...
"""
import sys

import caliper.dbi as dbi

proc = dbi.process(sys.argv[1:])
calls = dbi.fcount(proc)
seen = []
proc.on_exit(lambda pid, status, signal: seen.append(f"exit {status}"))  # each traced process, children too
proc.on_library_load(lambda path, pid: seen.append("library"))    # before the library's constructors
proc.on_timer(100, lambda: seen.append(f"leaf {calls.count('leaf')}"))   # every 100 ms
proc.on_signal(lambda signal, pid, tid: seen.append(f"signal {signal}"))   # a signal delivered to the program
status = proc.run()
print(seen[-1], "; leaf called", calls.count("leaf"), "times")
sys.exit(status)
