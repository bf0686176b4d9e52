"""UUID columns: Arrow's canonical extension type ``arrow.uuid``, kept as the
16 bytes of each UUID.

Layout (:mod:`.meta`, docs/format.md "UUID columns"): a plain bcolz carray of
``V16`` atoms (the real bcolz reads the raw bytes), the nullable layout when
it holds nulls, and a ``uuid`` entry in ``meta/storage``.  It is
fixed-size binary's layout plus that entry, as Arrow's type is
``fixed_size_binary(16)`` storage plus an extension name: the rows move
between Arrow buffers and chunks as fixed-size binary's do.

Public form: ``bcolz_store.carray(items, dtype="uuid")`` makes one from
``uuid.UUID`` objects, their text or their 16 bytes, and None (a missing
item), nullable unless ``nullable=False``; ``bcolz_store.carray(arr)`` of a pyarrow
``pa.uuid()`` array makes one, nullable.  ``c[:]`` reads a numpy ``V16``
array (masked where missing, for a nullable carray): ``uuid.UUID(bytes=bytes(item))``
gives an item back.  Arrow reads (``pa.chunked_array(c)``, ``pa.table(t)``,
``to_parquet``) give ``arrow.uuid`` with its nulls.  Appends take what a
``V16`` carray takes (16-byte ``bytes``, ``V16`` arrays, None for a
nullable one) and ``pa.uuid()`` arrays.
"""

from __future__ import annotations

import dataclasses
import uuid as _uuid

import numpy as np

from ...indexing import is_carray
from ..base import ColumnKind, register
from ..fixed_binary.kind import FixedBinaryKind
from ..nullable.meta import nullable_layout
from ..nullable.types import new_nullable
from .files import UUID_ENTRY  # noqa: F401  (registers the entry)
from .meta import UUID_ATOM, UUID_KEY, UUID_VERSION, is_uuid_meta

__all__ = ["UuidKind", "uuid_values"]

_NO_BYTES = bytes(16)


def _uuid_bytes(value) -> bytes:
    """The 16 bytes of one item (a ``uuid.UUID``, its text, 16 bytes, None).

    Raises
    ------
    TypeError
        An item of another type.
    ValueError
        Text that is not a UUID, or bytes of another length.
    """
    if value is None:
        return _NO_BYTES
    if isinstance(value, _uuid.UUID):
        return value.bytes
    if isinstance(value, str):
        return _uuid.UUID(value).bytes
    if isinstance(value, (bytes, bytearray, np.void)):
        raw = bytes(value)
        if len(raw) != 16:
            raise ValueError(f"a UUID has 16 bytes, not {len(raw)}")
        return raw
    raise TypeError(f"a UUID item is a uuid.UUID, its text or its 16 bytes, not "
                    f"{type(value).__name__}")


def uuid_values(items):
    """``(values, missing)``: ``items`` (``uuid.UUID``, text, 16 bytes or None;
    a ``V16`` array) as a ``V16`` array, and a ``bool`` array True where an
    item is None (None when none is).

    Raises
    ------
    TypeError, ValueError
        As an item's conversion, naming its position.
    """
    if isinstance(items, np.ndarray) and items.dtype == UUID_ATOM:
        missing = np.ma.getmaskarray(items).reshape(-1)
        return np.ma.getdata(items).reshape(-1), missing if missing.any() else None
    items = [items] if isinstance(items, (str, bytes, _uuid.UUID)) else list(items)
    try:
        raw = b"".join(map(_uuid_bytes, items))
    except (TypeError, ValueError):
        for i, value in enumerate(items):       # (the first bad item, named)
            try:
                _uuid_bytes(value)
            except (TypeError, ValueError) as err:
                raise type(err)(f"item {i}: {err}") from None
        raise
    missing = np.fromiter((v is None for v in items), dtype=bool, count=len(items))
    return np.frombuffer(raw, dtype=UUID_ATOM).copy(), missing if missing.any() else None


@register
class UuidKind(ColumnKind):
    """UUIDs (Arrow ``arrow.uuid``: ``fixed_size_binary(16)`` storage), whose
    rows move as those of its part, the fixed-size binary kind of 16 bytes.

    Parameters
    ----------
    nullable : bool, default True
        Whether the carray has a validity (missing items).
    """

    key = UUID_KEY
    lookup_rank = 50            # before fixed_binary, whose layout it shares
    new_rank = 5                # dtype="uuid": asked before any other kind
    extension_type = True       # arrow.uuid over fixed_size_binary(16)

    def __init__(self, nullable: bool = True):
        self.nullable = bool(nullable)
        self.storage = FixedBinaryKind(16, self.nullable)

    @classmethod
    def of_meta(cls, meta) -> "UuidKind | None":
        return cls(nullable_layout(meta) is not None) if is_uuid_meta(meta) else None

    @classmethod
    def holds(cls, meta) -> bool:
        """A uuid carray without nulls (a nullable one's chunks and items are
        the nullable kind's, as a nullable fixed-size binary carray's)."""
        return nullable_layout(meta) is None and is_uuid_meta(meta)

    @classmethod
    def of_arrow(cls, pa, typ) -> "UuidKind | None":
        make = getattr(pa, "uuid", None)        # (pyarrow >= 18)
        return cls() if make is not None and typ == make() else None

    def arrow_type(self, pa):
        return pa.uuid()

    def dtype(self) -> str:
        """``"uuid"``: ``bcolz_store.carray(items, dtype="uuid")`` makes one."""
        return "uuid"

    def accepts(self, pa, typ) -> bool:
        return typ == self.arrow_type(pa)

    def encode(self, engine, buffers) -> None:
        """Append the rows of ``buffers`` (16-byte items), as fixed-size binary's.

        Raises
        ------
        ValueError
            Items of another width, or a missing row in a carray that is not
            nullable; nothing is written then.
        """
        self.storage.encode(engine, buffers)

    def decode(self, engine, start: int, stop: int):
        return self.storage.decode(engine, start, stop)

    def to_python(self, buffers) -> np.ndarray:
        """The rows as ``c[:]`` gives them: a ``V16`` array, masked where missing."""
        return self.storage.to_python(buffers)

    # ------------------------------------------------------------ new carrays

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """``dtype="uuid"``, or no dtype and a uuid carray to copy."""
        if isinstance(dtype, str) and dtype == "uuid":
            return True
        if dtype is None and is_carray(array) and isinstance(array.kind, cls):
            return True
        return None

    @classmethod
    def new_meta(cls, request, making):
        """``V16`` atoms, a validity when nullable, and the ``uuid`` entry.

        Raises
        ------
        TypeError, ValueError
            Items that are not UUIDs (named by position); a None item with
            ``nullable=False``.
        """
        array = making.array
        if is_carray(array):                    # (its rows are appended by the caller)
            values, missing = np.empty(0, dtype=UUID_ATOM), None
        else:
            values, missing = uuid_values(array)
        nullable = making.nullable is not False     # (as an Arrow field, unless told)
        if missing is not None and not nullable:
            raise ValueError("new carray: missing items (None) given with nullable=False")
        dflt = None if making.dflt is None else np.frombuffer(
            _uuid_bytes(making.dflt), dtype=UUID_ATOM)[0]
        data = np.ma.MaskedArray(values, mask=missing if missing is not None else False) \
            if nullable else values
        meta, data = dataclasses.replace(making, dflt=dflt).fixed(data, UUID_ATOM,
                                                                  lambda v, d: v)
        if nullable:
            new_nullable(meta, dflt)
        meta.entries = {UUID_KEY: {"version": UUID_VERSION}}
        return meta, data
