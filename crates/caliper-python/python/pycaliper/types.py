"""Attribute types and properties, with the values of Caliper's C API.

Each is a member of ``AttrTypeEnum`` or ``AttrPropertiesEnum`` and also a
module-level name (``CALI_TYPE_INT``, ``CALI_ATTR_ASVALUE``, ...); both are
plain ints to the other calls, and properties combine with ``|``.
"""

import enum


class AttrTypeEnum(enum.IntEnum):
    """``cali_attr_type``."""

    CALI_TYPE_INV = 0
    CALI_TYPE_USR = 1
    CALI_TYPE_INT = 2
    CALI_TYPE_UINT = 3
    CALI_TYPE_STRING = 4
    CALI_TYPE_ADDR = 5
    CALI_TYPE_DOUBLE = 6
    CALI_TYPE_BOOL = 7
    CALI_TYPE_TYPE = 8
    CALI_TYPE_PTR = 9


class AttrPropertiesEnum(enum.IntFlag):
    """``cali_attr_properties``."""

    CALI_ATTR_DEFAULT = 0
    CALI_ATTR_ASVALUE = 1
    CALI_ATTR_NOMERGE = 2
    CALI_ATTR_SCOPE_PROCESS = 12
    CALI_ATTR_SCOPE_THREAD = 20
    CALI_ATTR_SCOPE_TASK = 24
    CALI_ATTR_SKIP_EVENTS = 64
    CALI_ATTR_HIDDEN = 128
    CALI_ATTR_NESTED = 256
    CALI_ATTR_GLOBAL = 512
    CALI_ATTR_UNALIGNED = 1024
    CALI_ATTR_AGGREGATABLE = 2048
    CALI_ATTR_LEVEL_1 = 0x10000
    CALI_ATTR_LEVEL_2 = 0x20000
    CALI_ATTR_LEVEL_3 = 0x30000
    CALI_ATTR_LEVEL_4 = 0x40000
    CALI_ATTR_LEVEL_5 = 0x50000
    CALI_ATTR_LEVEL_6 = 0x60000
    CALI_ATTR_LEVEL_7 = 0x70000


CALI_ATTR_SCOPE_MASK = 60
CALI_ATTR_LEVEL_MASK = 0x70000

globals().update(AttrTypeEnum.__members__)
globals().update(AttrPropertiesEnum.__members__)
