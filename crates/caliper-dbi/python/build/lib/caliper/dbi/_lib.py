"""The C-callable API of the instrumentation engine (``libcaliper-dbi.so``,
``include/caliper/cali-dbi.h``) through ctypes, and the exceptions its
error codes become.

The library is the one named by ``CALI_DBI_LIBRARY`` (``cali-run --script``
sets it to the library installed beside itself), else ``libcaliper-dbi.so``
(installed) or ``libcaliper_dbi.so`` (a cargo build) on the loader's path.
"""

import ctypes
import os

OK = 0
EINVAL = -1
ESTART = -2
EIO = -3
ESTATE = -4

EVENT_EXIT = 1
EVENT_LIBRARY_LOAD = 2
EVENT_TIMER = 3
EVENT_SIGNAL = 4

CONTINUE = 0
STOP = 1


class DbiError(Exception):
    """An error of the instrumentation engine; ``code`` is its C error code."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code


class InvalidArgument(DbiError, ValueError):
    """A bad argument: an unknown collector, a malformed pattern or value."""


class StartError(DbiError):
    """The program could not be started, or the process attached to."""


class WriteError(DbiError, OSError):
    """A result file could not be written."""


class StateError(DbiError):
    """The call does not fit the process's state (configured after its run, or run twice)."""


_ERRORS = {EINVAL: InvalidArgument, ESTART: StartError, EIO: WriteError, ESTATE: StateError}


class Event(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("pid", ctypes.c_int),
        ("tid", ctypes.c_int),
        ("status", ctypes.c_int),
        ("signal", ctypes.c_int),
        ("path", ctypes.c_char_p),
    ]


class Function(ctypes.Structure):
    _fields_ = [
        ("module", ctypes.c_char_p),
        ("name", ctypes.c_char_p),
        ("address", ctypes.c_uint64),
        ("count", ctypes.c_uint64),
        ("covered", ctypes.c_int),
        ("instrumentation", ctypes.c_char_p),
    ]


class Arc(ctypes.Structure):
    _fields_ = [
        ("caller_module", ctypes.c_char_p),
        ("caller", ctypes.c_char_p),
        ("callsite", ctypes.c_uint64),
        ("callee_module", ctypes.c_char_p),
        ("callee", ctypes.c_char_p),
        ("callee_address", ctypes.c_uint64),
        ("count", ctypes.c_uint64),
    ]


class Stack(ctypes.Structure):
    _fields_ = [("frames", ctypes.c_char_p), ("samples", ctypes.c_uint64)]


CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Event), ctypes.c_void_p)


def _load():
    names = [os.environ.get("CALI_DBI_LIBRARY"), "libcaliper-dbi.so", "libcaliper_dbi.so"]
    failures = []
    for name in filter(None, names):
        try:
            return ctypes.CDLL(name)
        except OSError as e:
            failures.append(str(e))
    raise ImportError(
        "caliper.dbi: cannot load libcaliper-dbi.so (set CALI_DBI_LIBRARY to its path, "
        "or run the script with cali-run --script): " + "; ".join(failures)
    )


lib = _load()

_P = ctypes.c_void_p
_S = ctypes.c_char_p
for _name, _args, _res in [
    ("cali_dbi_last_error", [], _S),
    ("cali_dbi_launch", [ctypes.c_int, ctypes.POINTER(_S)], _P),
    ("cali_dbi_attach", [ctypes.c_int], _P),
    ("cali_dbi_process_free", [_P], None),
    ("cali_dbi_collect", [_P, _S], ctypes.c_int),
    ("cali_dbi_include", [_P, _S], ctypes.c_int),
    ("cali_dbi_exclude", [_P, _S], ctypes.c_int),
    ("cali_dbi_follow", [_P, _S], ctypes.c_int),
    ("cali_dbi_window", [_P, ctypes.c_double, ctypes.c_double], ctypes.c_int),
    ("cali_dbi_on_events", [_P, CALLBACK, _P, ctypes.c_uint], ctypes.c_int),
    ("cali_dbi_run", [_P, ctypes.POINTER(_P)], ctypes.c_int),
    ("cali_dbi_live_results", [_P, ctypes.POINTER(_P)], ctypes.c_int),
    ("cali_dbi_results_exit", [_P, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)], ctypes.c_int),
    ("cali_dbi_results_sizes", [_P] + [ctypes.POINTER(ctypes.c_size_t)] * 3 + [ctypes.POINTER(ctypes.c_uint64)],
     ctypes.c_int),
    ("cali_dbi_results_function", [_P, ctypes.c_size_t, ctypes.POINTER(Function)], ctypes.c_int),
    ("cali_dbi_results_arc", [_P, ctypes.c_size_t, ctypes.POINTER(Arc)], ctypes.c_int),
    ("cali_dbi_results_stack", [_P, ctypes.c_size_t, ctypes.POINTER(Stack)], ctypes.c_int),
    ("cali_dbi_results_write", [_P, _S, _S, _S], ctypes.c_int),
    ("cali_dbi_results_free", [_P], None),
]:
    _function = getattr(lib, _name)
    _function.argtypes = _args
    _function.restype = _res


def error():
    """The engine's last error message."""
    return (lib.cali_dbi_last_error() or b"").decode(errors="replace")


def check(code):
    """Raises the exception of a failed call's error code."""
    if code != OK:
        raise _ERRORS.get(code, DbiError)(error(), code)


def encode(text):
    """A str (or os.PathLike) argument as bytes for C."""
    return os.fsencode(text)


def decode(data):
    """A C string result as str (file-system encoding, as paths are)."""
    return os.fsdecode(data) if data is not None else ""
