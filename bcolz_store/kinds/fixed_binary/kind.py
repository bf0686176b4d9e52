"""Fixed-size binary columns: Arrow's ``fixed_size_binary(n)``, every byte kept.

Layout (docs/format.md, "Fixed-size binary columns"): the items are a plain
bcolz carray of numpy ``V{n}`` atoms (numpy's ``S{n}`` would strip trailing
NUL bytes; ``V{n}`` keeps all ``n``), so the real bcolz reads the values as
raw bytes.  A nullable column has bcolz_store's nullable layout as well: a
``nullable`` entry and its validity, a carray of bool, in ``ROOT/valid``
(kinds/nullable/meta.py).  ``meta/storage`` holds one more key, which
bcolz ignores::

    "fixed_binary": {"version": 1, "byte_width": n, "nullable": true|false}

A ``V{n}`` carray written before this kind existed (no such entry) is of this
kind as well: the same bytes, read the same way.

Public form: ``bcolz_store.carray(data, dtype="V16")`` (or
``dtype=FixedBinaryKind(16).dtype()``) makes one (Python items holding None
are built by pyarrow, when installed, into nullable rows); ``bcolz_store.carray(arr)``
of a pyarrow ``fixed_size_binary(16)`` array makes one, nullable; ``c[:]``
reads a numpy ``V16`` array (a ``numpy.ma.MaskedArray`` masked where null,
for a nullable carray), whose items are ``numpy.void`` of the exact bytes
(``bytes(item)``, ``arr.tolist()`` gives ``bytes`` objects); Arrow reads
(``pa.chunked_array(c)``, ``pa.table(t)``, ``to_parquet``) give
``fixed_size_binary(16)`` with its nulls.
"""

from __future__ import annotations

import numpy as np

from ..base import ColumnKind, register
from .codec import FIXED_BINARY_KEY, decode_rows, encode_rows, is_fixed_binary_atom
from .files import STORAGE_ENTRY
from ..nullable.meta import nullable_layout

__all__ = ["FIXED_BINARY_KEY", "FixedBinaryKind", "STORAGE_ENTRY"]


@register
class FixedBinaryKind(ColumnKind):
    """Items of exactly ``byte_width`` bytes (Arrow ``fixed_size_binary``).

    Parameters
    ----------
    byte_width : int
        The bytes of each item (>= 1).
    nullable : bool, default True
        Whether the carray has a validity (missing items).

    Raises
    ------
    ValueError
        A ``byte_width`` below 1.
    """

    key = FIXED_BINARY_KEY
    #: A column made from Arrow keeps Arrow's nulls: a validity beside the items.
    nullable_carray = True

    def __init__(self, byte_width: int, nullable: bool = True):
        if int(byte_width) < 1:
            raise ValueError(f"a fixed-size binary item has at least 1 byte, not {byte_width}")
        self.byte_width = int(byte_width)
        self.nullable = bool(nullable)

    @classmethod
    def of_meta(cls, meta) -> "FixedBinaryKind | None":
        """The kind of a carray of ``V{n}`` atoms (one-dimensional, no fields)."""
        if not is_fixed_binary_atom(meta):
            return None
        return cls(meta.atom.itemsize, nullable_layout(meta) is not None)

    @classmethod
    def holds(cls, meta) -> bool:
        """A carray of ``V{n}`` atoms that is not nullable: a nullable one's
        chunks and items are those of the nullable kind, which holds it."""
        return nullable_layout(meta) is None and is_fixed_binary_atom(meta)

    @classmethod
    def of_arrow(cls, pa, typ) -> "FixedBinaryKind | None":
        if pa.types.is_fixed_size_binary(typ) and typ.byte_width >= 1:
            return cls(typ.byte_width)
        return None

    @classmethod
    def of_dtype(cls, dtype) -> "FixedBinaryKind | None":
        """The kind of a carray made with ``numpy.dtype('V{n}')`` (or its text)."""
        if not isinstance(dtype, (str, np.dtype)):
            return None
        try:
            dtype = np.dtype(dtype)
        except TypeError:
            return None
        if dtype.kind != "V" or dtype.names is not None or dtype.subdtype is not None \
                or dtype.itemsize < 1:
            return None
        return cls(dtype.itemsize)

    def arrow_type(self, pa):
        return pa.binary(self.byte_width)

    def dtype(self) -> np.dtype:
        """``numpy.dtype('V{byte_width}')``: a carray of it keeps every byte."""
        return np.dtype((np.void, self.byte_width))

    def accepts(self, pa, typ) -> bool:
        return pa.types.is_fixed_size_binary(typ) and typ.byte_width == self.byte_width

    def encode(self, engine, buffers) -> None:
        """Append the rows of ``buffers`` (items of ``byte_width`` bytes).

        Raises
        ------
        ValueError
            Items of another width, or a missing row in a carray that is not
            nullable; nothing is written then.
        """
        encode_rows(engine, buffers, self.byte_width)

    def decode(self, engine, start: int, stop: int):
        return decode_rows(engine, start, stop, self.byte_width)

    def to_python(self, buffers) -> np.ndarray:
        """The rows as ``c[:]`` gives them: a ``V{n}`` array, masked where missing."""
        values = buffers.values if buffers.values is not None else \
            np.zeros(buffers.length, dtype=self.dtype())
        values = np.asarray(values).view(self.dtype())
        if buffers.validity is None:
            return values
        return np.ma.MaskedArray(values, mask=~buffers.validity)
