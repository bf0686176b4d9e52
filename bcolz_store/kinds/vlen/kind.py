"""The column kind of variable-length ``str`` and ``bytes`` items (vlen carrays:
their metadata's ``kind`` a :class:`~.meta.VlenMeta`), as Arrow ``string`` and
``binary`` columns.

Arrow rows encode straight into vlen chunks and decode straight back to
offsets, bytes and a validity (:mod:`.codec`); the chunks are the ones the
items' own encoding writes (:mod:`bcolz_store.kinds.vlen.chunk`).
"""

from __future__ import annotations

import numpy as np

from .chunk_items import as_items
from .meta import VlenMeta, vlen_result_dtype
from ...errors import KindMismatchError
from .types import vlen, vlen_of
from .types import new_vlen_meta, vlen_request
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import AppendBlocks, ColumnKind, item_blocks, register
from ..buffers import ArrowBuffers
from .codec import arrow_items, decode_rows, encode_rows, rows_to_items

__all__ = ["VlenKind", "appended_kind", "check_appended"]


def _arrow_kind(pa, typ) -> str | None:
    """'str' for Arrow's string types, 'bytes' for its binary types, else None."""
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or \
            pa.types.is_string_view(typ):
        return "str"
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or \
            pa.types.is_binary_view(typ):
        return "bytes"
    return None


def appended_kind(source):
    """The kind of items of the carray ``source``: 'str' or 'bytes'; None
    when its items tell (an object carray, a categorical one with no
    categories, which holds only missing items); else its dtype's name."""
    cat = source.category
    if cat is not None:
        return cat.kind
    if source.vlen is not None:
        return source.vlen.kind
    return {"U": "str", "S": "bytes", "O": None}.get(source.dtype.kind, str(source.dtype))


def _described(source, kind) -> str:
    if source.category is not None:
        return f"a categorical carray of {kind}"
    if source.vlen is not None:
        return f"a vlen carray of {kind}"
    return f"a carray of {source.dtype}"


def check_appended(items: VlenMeta, engine, source, categorical: bool = False):
    """``(where, kind, theirs)``: the carray's name in messages, the kind of
    its items ('str' or 'bytes', ``items``'s, the VlenMeta of the carray's
    items) and of those of the carray
    ``source`` appended to it (:func:`appended_kind`).

    Raises
    ------
    KindMismatchError
        ``source`` holds items of the other kind, or of a dtype that is
        neither (but to a ``categorical`` carray without categories yet).
    """
    where = engine.store.root if engine.store is not None else "carray"
    kind, theirs = items.kind, appended_kind(source)
    if theirs is not None and theirs != kind and not (categorical and not engine.index):
        raise KindMismatchError(
            f"{where}: {_described(source, theirs)} cannot be appended to this carray of {kind} "
            f"items; {'encode' if kind == 'bytes' else 'decode'} its items first")
    return where, kind, theirs


@register
class VlenKind(ColumnKind):
    """vlen ``str`` or ``bytes`` items; ``type`` is the carray's :class:`~bcolz_store.vlen`.

    Parameters
    ----------
    type : bcolz_store.vlen
        Kind, level, dictionary and whether items may be missing.
    """

    key = "vlen"

    new_rank = 50

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """A :class:`~.types.vlen` ``dtype`` (or ``str``, ``bytes``, ``object``
        with text items...), or a vlen carray's own type."""
        return vlen_request(array, dtype)

    @classmethod
    def new_meta(cls, request, making):
        if making.nullable:
            raise ValueError("nullable=True is for carrays of a fixed dtype; vlen and "
                             "categorical carrays hold None as a missing item already")
        array = making.array
        fast = arrow_items(array, request)      # (Python items, built by pyarrow)
        if fast is not None:
            rows, nbytes = fast
            meta, _ = new_vlen_meta(request, [], making.cparams, making.dflt, len(array)
                                    if making.expectedlen is None else making.expectedlen,
                                    making.chunklen, nbytes)
            return meta, rows
        return new_vlen_meta(request, array, making.cparams, making.dflt,
                             making.expectedlen, making.chunklen, making.item_nbytes)

    def __init__(self, type: vlen):
        self.type = type

    @classmethod
    def of_meta(cls, meta):
        """The kind of a vlen carray's metadata (its ``kind`` a VlenMeta)."""
        items = getattr(meta, "kind", None)
        return cls(vlen_of(items)) if isinstance(items, VlenMeta) else None

    # ------------------------------------------------------------ its carrays
    vlen_items = True
    variable_items = True
    direct_appends = False

    @classmethod
    def takes_items(cls, dtype) -> bool:
        return vlen_request(None, dtype) is not None

    @classmethod
    def vlen_type(cls, meta):
        return vlen_of(meta.kind)

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        return np.fromiter((v is None for v in items().tolist()), dtype=bool, count=length)

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where) -> np.ndarray:
        """``value`` as items of any length, in one strict conversion.

        Raises
        ------
        ValueError
            Items not of the carray's kind, or not broadcast to ``arrlen``.
        """
        items = meta.kind
        return as_items(value, items.kind, meta.atom, items.nullable, arrlen, where)

    @classmethod
    def prepare_carray(cls, meta, engine, source, convert) -> AppendBlocks:
        """The carray ``source`` made ready to append: its items checked here,
        and converted again as they are appended, only when an item may be
        refused (an object carray's, a ``U`` carray's (a lone surrogate), a
        missing item where none is allowed).

        Raises
        ------
        KindMismatchError
            ``source`` holds items of the other kind (str for bytes, bytes
            for str), or of a dtype that is neither.
        ValueError
            A missing item where none is allowed.
        """
        _, _, theirs = check_appended(meta.kind, engine, source)
        atom = meta.atom
        missing = source.category is not None or (source.vlen is not None and
                                                  source.vlen.nullable)
        # no categories: missing items only, read as str; as objects they fit either kind
        plain = source.category is not None and theirs is None

        def blocks():
            for _, block in item_blocks(source):
                yield convert(block.astype(object) if plain else block, atom)

        if theirs is None or source.dtype.kind == "U" or (missing and not meta.kind.nullable):
            for _ in blocks():
                pass
        return AppendBlocks(blocks)

    indexable = False           # (its statistics describe no index's items)

    @classmethod
    def of_arrow(cls, pa, typ):
        """A nullable vlen of str for Arrow's string types (``string``,
        ``large_string``, ``string_view``), of bytes for its binary types."""
        kind = _arrow_kind(pa, typ)
        return None if kind is None else cls(vlen(kind, nullable=True))

    def arrow_type(self, pa):
        """``string`` for str items, ``binary`` for bytes."""
        return pa.string() if self.type.kind == "str" else pa.binary()

    def accepts(self, pa, typ) -> bool:
        """Any of Arrow's string types for str items (binary types for bytes):
        their buffers are the same but for the offsets' width (views arrive
        cast to their large type)."""
        return _arrow_kind(pa, typ) == self.type.kind

    def dtype(self):
        """The carray's :class:`~bcolz_store.vlen`."""
        return self.type

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        """Append the rows to the vlen ``engine``, full chunks encoded from the
        buffers (:func:`.codec.encode_rows`).

        Raises
        ------
        ValueError
            A missing row in a carray without missing items, a str row that
            is not UTF-8, rows too large for one chunk.
        """
        encode_rows(engine, buffers)

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        """Rows ``[start, stop)`` with int64 offsets (:func:`.codec.decode_rows`).

        Raises
        ------
        ChunkNotFoundError, FormatError, CodecError
            As the chunk reads.
        """
        return decode_rows(engine, start, stop)

    def to_python(self, buffers: ArrowBuffers) -> np.ndarray:
        """The rows as the carray reads them: a ``StringDType`` array (str on
        numpy 2) or an object array of bytes, None where a row is missing."""
        dtype = vlen_result_dtype(self.type.kind, self.type.nullable or
                                  buffers.null_count > 0)
        return rows_to_items(buffers, self.type.kind, dtype)
