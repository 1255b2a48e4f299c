"""The collectors, HP Caliper's measurements: each is enabled on a context
(or a process, whose default context it then uses) before the run and
reads its part of the process's results after it, or during an event
callback the results so far."""

import os

from ._lib import InvalidArgument, check, encode, lib
from .process import context, process


class _Collector:
    """A measurement of one process; ``name`` is the engine's collector."""

    name = None

    def __init__(self, ctx):
        if isinstance(ctx, process):
            ctx = ctx.context or context(ctx)
        if not isinstance(ctx, context):
            raise InvalidArgument("%s: %r is not a caliper.dbi.context or process" % (type(self).__name__, ctx))
        ctx.process._before_run()
        check(lib.cali_dbi_collect(ctx.process._handle, encode(self.name)))
        self.context = ctx
        self.process = ctx.process

    def write(self, path, format=None):
        """Writes this collector's results to ``path``: ``.cali`` records,
        flow data (``.dat``, ``.flow``) or a text report (``.txt``), by the
        extension or ``format`` ('cali', 'flow', 'text')."""
        self.process.results().write(path, format, self.name)

    def __len__(self):
        return sum(1 for _ in self)


class coverage(_Collector):
    """Which functions ran: iterates over every instrumented function
    (:class:`FunctionCount`, with ``covered``)."""

    name = "coverage"

    def __iter__(self):
        return iter(self.process.results().functions)

    def covered(self):
        """The functions called, as FunctionCount tuples."""
        return [f for f in self if f.covered]


class fcount(_Collector):
    """Exact call counts: iterates over the functions called
    (:class:`FunctionCount`), most called first."""

    name = "fcount"

    def __iter__(self):
        called = [f for f in self.process.results().functions if f.covered]
        return iter(sorted(called, key=lambda f: (-f.count, f.name)))

    def count(self, function, module=None):
        """The calls of ``function`` (in ``module``, by file name or path,
        if given): 0 if it was never called."""
        return sum(f.count for f in self if f.name == function and _in_module(f.module, module))


class arc_count(_Collector):
    """Calls per call site: iterates over the arcs (:class:`ArcCount`),
    most calls first."""

    name = "arcs"

    def __iter__(self):
        arcs = self.process.results().arcs
        return iter(sorted(arcs, key=lambda a: (-a.count, a.caller, a.callee, a.callsite)))

    def count(self, caller, callee):
        """The calls from ``caller`` to ``callee``, over all call sites."""
        return sum(a.count for a in self if a.caller == caller and a.callee == callee)


class sampler(_Collector):
    """Call stacks sampled 1000 times per second of each thread's CPU time:
    iterates over the stacks (:class:`SampledStack`), most seen first."""

    name = "sample"

    def __iter__(self):
        return iter(self.process.results().stacks)

    @property
    def lost(self):
        """Samples the kernel dropped."""
        return self.process.results().samples_lost


class measurement_set:
    """Collectors of one process measured together and written to one
    file (``.cali`` records with all their parts, or a text report)."""

    def __init__(self, *collectors):
        if not collectors:
            raise InvalidArgument("measurement_set: no collectors")
        processes = {id(c.process) for c in collectors}
        if len(processes) != 1:
            raise InvalidArgument("measurement_set: the collectors measure different processes")
        self.collectors = list(collectors)
        self.process = collectors[0].process

    def __iter__(self):
        return iter(self.collectors)

    def write(self, path, format=None):
        """Writes the results of every collector of the set to ``path``."""
        names = ",".join(c.name for c in self.collectors)
        self.process.results().write(path, format, names)


def _in_module(path, module):
    return module is None or path == module or os.path.basename(path) == module
