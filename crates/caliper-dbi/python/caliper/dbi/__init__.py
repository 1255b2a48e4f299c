"""Scripting cali-run's lazy dynamic binary instrumentation engine, in the
way HP Caliper's measurements were driven::

    import sys
    import caliper.dbi as dbi

    proc = dbi.process(sys.argv[1:])
    ctx = dbi.context(proc, include=["mylib.so"])
    arcs = dbi.arc_count(ctx)
    proc.run()
    arcs.write("flow.dat")

A :class:`process` is launched (or attached to) by its ``run()``; a
:class:`context` narrows what is instrumented and when; the collectors
(:class:`coverage`, :class:`fcount`, :class:`arc_count`, :class:`sampler`,
combined by :class:`measurement_set`) give their results after the run,
or the results so far in an event callback (``proc.on_exit``,
``on_library_load``, ``on_timer``, ``on_signal``).

The engine is ``libcaliper-dbi.so``, loaded through ctypes (see
:mod:`caliper.dbi._lib` for how it is found); ``cali-run --script
FILE.py PROGRAM ARGS...`` runs a script with both at hand.
"""

from ._lib import DbiError, InvalidArgument, StartError, StateError, WriteError
from .collectors import arc_count, coverage, fcount, measurement_set, sampler
from .process import context, process
from .results import ArcCount, FunctionCount, SampledStack

__all__ = [
    "process", "context", "coverage", "fcount", "arc_count", "sampler", "measurement_set",
    "FunctionCount", "ArcCount", "SampledStack",
    "DbiError", "InvalidArgument", "StartError", "StateError", "WriteError",
]
