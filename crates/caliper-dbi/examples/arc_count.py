"""Call arcs of a program's functions, written as flow data.

    cali-run --script arc_count.py [--include PATTERN] [--output FILE] -- PROGRAM ARGS...
"""
import argparse
import sys

import caliper.dbi as dbi

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--include", action="append", default=[], help="module or function pattern")
parser.add_argument("--output", default="flow.dat", help="the flow-data file (default flow.dat)")
parser.add_argument("program", nargs=argparse.REMAINDER)
args = parser.parse_args()
if args.program[:1] == ["--"]:
    args.program = args.program[1:]

proc = dbi.process(args.program)                  # launched at run()
ctx = dbi.context(proc, include=args.include)     # what is instrumented
arcs = dbi.arc_count(ctx)
status = proc.run()
arcs.write(args.output)                           # flow data, as --flow-data
sys.exit(status)
