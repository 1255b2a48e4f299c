"""``Annotation``: an attribute by name whose type is that of its first value."""

from pycaliper._native import Annotation

__all__ = ["Annotation"]
