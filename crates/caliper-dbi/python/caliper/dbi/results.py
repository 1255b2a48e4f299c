"""The results of a run, or of a run so far (read in an event callback):
functions with their counts, call arcs and sampled stacks as named tuples,
and writing them as ``.cali`` records, flow data or a text report."""

import collections
import ctypes
import os

from ._lib import Arc, Function, InvalidArgument, Stack, check, decode, encode, lib

FunctionCount = collections.namedtuple(
    "FunctionCount", "name module address count covered instrumentation"
)
FunctionCount.__doc__ = """A function: its name, its module's path, its entry's address in the
module file, its calls (with fcount or arc_count), whether it was called,
and how it was instrumented."""

ArcCount = collections.namedtuple(
    "ArcCount", "caller caller_module callsite callee callee_module callee_address count"
)
ArcCount.__doc__ = """The calls from one call site (the call instruction's address in the
caller's module file; 0 for calls from sites past a trampoline's limit)
to one function."""

SampledStack = collections.namedtuple("SampledStack", "frames samples")
SampledStack.__doc__ = """A call stack (function names, outermost first) and how often it was sampled."""

# The file formats by extension, when write() is given none.
FORMATS = {".cali": "cali", ".dat": "flow", ".flow": "flow", ".txt": "text", ".text": "text"}


def format_of(path, format=None):
    """The format to write ``path`` in: ``format`` if given, else by its extension."""
    if format is not None:
        return format
    extension = os.path.splitext(os.fspath(path))[1]
    if extension not in FORMATS:
        raise InvalidArgument(
            "cannot tell the format of %s by its extension (%s): give format='cali', 'flow' or 'text'"
            % (os.fspath(path), ", ".join(sorted(FORMATS)))
        )
    return FORMATS[extension]


class Results:
    """The engine's results: the exit at once, the functions, arcs and
    stacks read into Python lists on first use (a script that only writes
    a file never pays for them); the C object is kept until :meth:`close`."""

    def __init__(self, handle):
        self._handle = handle
        sizes = [ctypes.c_size_t() for _ in range(3)]
        lost = ctypes.c_uint64()
        check(lib.cali_dbi_results_sizes(handle, *[ctypes.byref(s) for s in sizes], ctypes.byref(lost)))
        self._sizes = [s.value for s in sizes]
        self.samples_lost = lost.value
        status, signal = ctypes.c_int(), ctypes.c_int()
        check(lib.cali_dbi_results_exit(handle, ctypes.byref(status), ctypes.byref(signal)))
        self.status = status.value if status.value >= 0 else None
        self.signal = signal.value or None
        self._lists = {}

    def _list(self, kind, read):
        if kind not in self._lists:
            self._lists[kind] = [read(i) for i in range(self._sizes[kind])]
        return self._lists[kind]

    @property
    def functions(self):
        """Every instrumented function, as :class:`FunctionCount`."""
        return self._list(0, self._function)

    @property
    def arcs(self):
        """Every arc, as :class:`ArcCount`."""
        return self._list(1, self._arc)

    @property
    def stacks(self):
        """Every sampled stack, as :class:`SampledStack`, most samples first."""
        return self._list(2, self._stack)

    def _function(self, i):
        f = Function()
        check(lib.cali_dbi_results_function(self._handle, i, ctypes.byref(f)))
        return FunctionCount(
            decode(f.name), decode(f.module), f.address, f.count, bool(f.covered), decode(f.instrumentation)
        )

    def _arc(self, i):
        a = Arc()
        check(lib.cali_dbi_results_arc(self._handle, i, ctypes.byref(a)))
        return ArcCount(
            decode(a.caller), decode(a.caller_module), a.callsite,
            decode(a.callee), decode(a.callee_module), a.callee_address, a.count,
        )

    def _stack(self, i):
        s = Stack()
        check(lib.cali_dbi_results_stack(self._handle, i, ctypes.byref(s)))
        return SampledStack(tuple(decode(s.frames).split(";")), s.samples)

    def write(self, path, format=None, collectors=None):
        """Writes the results to ``path``: as ``format`` ('cali', 'flow'
        or 'text'), by default by the extension (.cali; .dat or .flow;
        .txt). ``collectors`` (a comma-separated list) chooses what the
        .cali records and the text report show; by default the run's."""
        format = format_of(path, format)
        names = encode(collectors) if collectors else None
        check(lib.cali_dbi_results_write(self._handle, encode(path), encode(format), names))

    def close(self):
        if self._handle:
            lib.cali_dbi_results_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()
