"""Regions and attributes: by name, or through ``Attribute`` objects."""

from pycaliper._native import (
    Attribute,
    begin_byname,
    begin_comm_region,
    begin_phase,
    begin_region,
    end_byname,
    end_comm_region,
    end_phase,
    end_region,
    set_byname,
    set_global_byname,
)

__all__ = [
    "Attribute",
    "begin_byname",
    "begin_comm_region",
    "begin_phase",
    "begin_region",
    "end_byname",
    "end_comm_region",
    "end_phase",
    "end_region",
    "set_byname",
    "set_global_byname",
]
