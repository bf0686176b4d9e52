"""File formats that carrays and ctables convert to and from.

:func:`convert` converts between a bcolz dataset and another format (or two
other formats); each format is a :class:`Converter` registered by its own
module of this package (:mod:`.base` describes the protocol).  The formats::

{table}

What each format keeps, and what it refuses, is in docs/converting.md.

To add a format: a new module here whose :class:`Converter` subclass is
decorated with :func:`register_converter`, one import line below, and a test
class inheriting :class:`bcolz_store.testing.converters.ConverterTests`.
"""

from __future__ import annotations

import textwrap

# Each format module registers its converter when imported.
from . import native  # noqa: F401 - bcolz itself, first
from . import arrow, datadings, hdf5_io, npz, zarr_io  # noqa: F401
from .base import (Converter, ConverterRegistry, DuplicateConverterError, MissingDependencyError,
                   RemoteFormatError, UnknownFormatError, converter_for_suffix, get_converter,
                   register_converter, registered_converters)
from .hub import Converted, convert, detect_format, formats, formats_table

__all__ = ["Converted", "Converter", "ConverterRegistry", "DuplicateConverterError",
           "MissingDependencyError", "RemoteFormatError", "UnknownFormatError", "convert",
           "converter_for_suffix", "detect_format", "formats", "formats_table", "get_converter",
           "register_converter", "registered_converters"]

if __doc__:
    __doc__ = __doc__.replace("{table}", textwrap.indent(formats_table(), "    "))
