"""``Loop``: a loop and its iterations (``loop=<name>``, ``iteration#<name>``)."""

from pycaliper._native import Loop

__all__ = ["Loop"]
