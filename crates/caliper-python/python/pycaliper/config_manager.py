"""``ConfigManager``: measurement configs from a config string."""

from pycaliper._native import ConfigManager

__all__ = ["ConfigManager"]
