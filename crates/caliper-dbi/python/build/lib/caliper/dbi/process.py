"""A measured process, its context and its events.

The program is started (or the process attached to) by :meth:`process.run`,
which measures it to the end on the calling thread: the collectors and the
context must be set up before, and the event callbacks run inside it.
"""

import ctypes
import math
import os

from . import _lib
from ._lib import CALLBACK, InvalidArgument, StateError, check, decode, encode, lib
from .results import Results


class process:
    """A program to launch, ``process(["./a.out", "arg"])``, or a running
    process to attach to, ``process(pid=1234)``.

    Event callbacks (each may call :meth:`stop`, or read the collectors'
    counts so far)::

        proc.on_exit(lambda pid, status, signal: ...)   # a traced process ended
        proc.on_library_load(lambda path, pid: ...)     # a library was loaded
        proc.on_timer(100, lambda: ...)                 # every 100 ms
        proc.on_signal(lambda signal, pid, tid: ...)    # a signal for the program

    An exception in a callback stops the measurement and is raised again
    by :meth:`run`.
    """

    def __init__(self, argv=None, pid=None):
        if (argv is None) == (pid is None):
            raise InvalidArgument("give the program and its arguments, process(argv), or process(pid=PID)")
        if pid is not None:
            self._handle = lib.cali_dbi_attach(int(pid))
        else:
            if isinstance(argv, (str, bytes, os.PathLike)):
                argv = [argv]
            words = [encode(a) for a in argv]
            array = (ctypes.c_char_p * len(words))(*words)
            self._handle = lib.cali_dbi_launch(len(words), array)
        if not self._handle:
            raise InvalidArgument(_lib.error())
        self.context = None
        self._handlers = {_lib.EVENT_EXIT: [], _lib.EVENT_LIBRARY_LOAD: [], _lib.EVENT_SIGNAL: []}
        self._timers = []
        self._ticks = 0
        self._callback = None
        self._live = None
        self._stop = False
        self._failure = None
        self._results = None

    # The events.

    def on_exit(self, fn):
        """Calls ``fn(pid, status, signal)`` when a traced process ends:
        ``status`` its exit code (None if killed), ``signal`` the signal
        that killed it (None if it exited)."""
        return self._on(_lib.EVENT_EXIT, fn)

    def on_library_load(self, fn):
        """Calls ``fn(path, pid)`` when a process loads a library, before
        the library's constructors run."""
        return self._on(_lib.EVENT_LIBRARY_LOAD, fn)

    def on_signal(self, fn):
        """Calls ``fn(signal, pid, tid)`` when a signal is delivered to a
        thread of the program."""
        return self._on(_lib.EVENT_SIGNAL, fn)

    def on_timer(self, ms, fn):
        """Calls ``fn()`` every ``ms`` milliseconds while the program runs."""
        if not isinstance(ms, int) or ms <= 0:
            raise InvalidArgument("on_timer: the period must be a positive number of milliseconds, not %r" % (ms,))
        self._before_run()
        self._timers.append((ms, fn))
        return fn

    def _on(self, kind, fn):
        if not callable(fn):
            raise InvalidArgument("the event handler %r is not callable" % (fn,))
        self._before_run()
        self._handlers[kind].append(fn)
        return fn

    def _before_run(self):
        if self._results is not None or self._callback is not None:
            raise StateError("the process has already run")

    def stop(self):
        """From a callback: stop measuring (probes out, processes let go;
        a launched program runs on to its end, which run() waits for)."""
        self._stop = True

    # The run.

    def run(self):
        """Starts the program (or attaches), measures it to the end, and
        returns its exit status: its exit code, 128 + the signal that
        killed it, or None if it was let go running."""
        self._before_run()
        period = 0
        if self._timers:
            period = self._timers[0][0]
            for ms, _ in self._timers[1:]:
                period = math.gcd(period, ms)
        self._callback = CALLBACK(self._dispatch)
        if any(self._handlers.values()) or self._timers:
            check(lib.cali_dbi_on_events(self._handle, self._callback, None, period))
        self._period = period
        handle = ctypes.c_void_p()
        check(lib.cali_dbi_run(self._handle, ctypes.byref(handle)))
        self._results = Results(handle)
        if self._failure is not None:
            failure, self._failure = self._failure, None
            raise failure
        return self.status

    def _dispatch(self, _user, event, live):
        """The C callback: calls the Python handlers of the event; an
        exception stops the run, to be raised by run()."""
        event = event.contents
        self._live = live
        try:
            if event.kind == _lib.EVENT_TIMER:
                self._ticks += 1
                for ms, fn in self._timers:
                    if (self._ticks * self._period) % ms == 0:
                        fn()
            else:
                for fn in self._handlers.get(event.kind, ()):
                    if event.kind == _lib.EVENT_EXIT:
                        fn(event.pid, event.status if event.status >= 0 else None, event.signal or None)
                    elif event.kind == _lib.EVENT_LIBRARY_LOAD:
                        fn(decode(event.path), event.pid)
                    else:
                        fn(event.signal, event.pid, event.tid)
        except BaseException as e:  # noqa: B902 - raised again by run()
            self._failure = e
            self._stop = True
        finally:
            self._live = None
        return _lib.STOP if self._stop else _lib.CONTINUE

    def results(self):
        """The results: during a callback those so far, after the run the
        final ones."""
        if self._live is not None:
            handle = ctypes.c_void_p()
            check(lib.cali_dbi_live_results(self._live, ctypes.byref(handle)))
            return Results(handle)
        if self._results is None:
            raise StateError("no results before the run (results so far are read in an event callback)")
        return self._results

    @property
    def status(self):
        """The exit code, 128 + the fatal signal, or None (let go running)."""
        r = self.results()
        if r.signal:
            return 128 + r.signal
        return r.status

    def __del__(self):
        if getattr(self, "_handle", None):
            lib.cali_dbi_process_free(self._handle)
            self._handle = None


class context:
    """What of a process is measured, and when: ``include`` and ``exclude``
    patterns (module file names or paths, or function names; ``*``
    wildcards), ``start`` and ``duration`` in seconds, and ``follow``
    (``"fork"``, ``"exec"``, ``"exec=PROGRAM"``; both by default, an empty
    list for neither). A process has one context: the engine instruments
    one set of functions per run, which all its collectors share."""

    def __init__(self, proc, include=(), exclude=(), start=None, duration=None, follow=("fork", "exec")):
        if not isinstance(proc, process):
            raise InvalidArgument("context: %r is not a caliper.dbi.process" % (proc,))
        if proc.context is not None:
            raise StateError("the process has a context already (one per process: its collectors share it)")
        proc._before_run()
        handle = proc._handle
        for pattern in _patterns(include):
            check(lib.cali_dbi_include(handle, encode(pattern)))
        for pattern in _patterns(exclude):
            check(lib.cali_dbi_exclude(handle, encode(pattern)))
        follow = _patterns(follow)
        check(lib.cali_dbi_follow(handle, encode(",".join(follow) if follow else "none")))
        if start is not None or duration is not None:
            check(lib.cali_dbi_window(handle, float(start or 0), float(duration or 0)))
        self.process = proc
        self.include, self.exclude, self.follow = _patterns(include), _patterns(exclude), follow
        self.start, self.duration = start, duration
        proc.context = self


def _patterns(value):
    """A pattern or a list of them, as a list."""
    if isinstance(value, (str, bytes)):
        return [value]
    return list(value)
