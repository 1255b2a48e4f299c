"""Caliper performance annotations for Python.

A drop-in for the reference's ``pycaliper``: annotate regions, loops and
attributes from Python, and pick what is measured at run time with a
config string (``CALI_CONFIG=runtime-report python3 app.py``) or a
``ConfigManager``. The runtime is libcaliper's: regions begun in Python and
in C libraries the program calls form one context tree.
"""

from pycaliper._native import __version__, config_preset, init, is_initialized
from pycaliper import annotation, config_manager, high_level, instrumentation, loop, types

__all__ = [
    "__version__",
    "annotation",
    "config_manager",
    "config_preset",
    "high_level",
    "init",
    "instrumentation",
    "is_initialized",
    "loop",
    "types",
]
