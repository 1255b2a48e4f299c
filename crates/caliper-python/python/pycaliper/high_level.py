"""``annotate_function``: a decorator that marks each call as a region."""

import functools

from pycaliper._native import begin_region, end_region
from pycaliper.types import AttrPropertiesEnum


def annotate_function(name=None, annotation_flags=AttrPropertiesEnum.CALI_ATTR_DEFAULT):
    """Marks every call of the decorated function as a region.

    The region (the ``region`` attribute, as in the reference's current
    code) is named ``name``, or the function's own name; it ends when the
    call returns or raises. ``annotation_flags`` is accepted for the
    reference's signature; the ``region`` attribute's properties are the
    runtime's, so any value but ``CALI_ATTR_DEFAULT`` raises ``ValueError``.
    """
    if annotation_flags != AttrPropertiesEnum.CALI_ATTR_DEFAULT:
        raise ValueError("annotate_function: the region attribute takes no annotation_flags")

    def decorate(func):
        region = name or func.__name__

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            begin_region(region)
            try:
                return func(*args, **kwargs)
            finally:
                end_region(region)

        return wrapper

    return decorate
