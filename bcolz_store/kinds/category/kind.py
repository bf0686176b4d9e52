"""The categorical column kind: codes into fixed categories (str or bytes),
as an Arrow ``dictionary<int, string|binary>``.

Layout on disk: :mod:`bcolz_store.kinds.category.meta` (codes as an
ordinary carray, the categories as a vlen carray in ``categories/``).  Rows
are written from Arrow dictionary arrays (and plain string/binary arrays of
the column's kind) by mapping their dictionary onto the categories
(:mod:`.codec`) and looking the rows' indices up at once; they are read as
the codes for indices and the categories for the dictionary.  As for items
written from Python, a row that is not one of the categories is refused
(the categories are fixed when the carray is made).
"""

from __future__ import annotations

import numpy as np

from .engine import PreparedCodes
from .meta import CategoryLayout
from .types import CodesView, category, category_of
from ...errors import FormatError
from ..vlen.chunk_items import as_items
from ..vlen.kind import check_appended
from ..vlen.meta import vlen_result_dtype
from ..vlen.types import vlen_of
from .types import category_request, new_category_meta
from . import files  # noqa: F401  (registers how its carrays are read and written)
from ..base import AppendBlocks, ColumnKind, block_len, item_blocks, register
from ..buffers import ArrowBuffers
from .codec import arrow_items, category_buffers, dictionary_codes, items_of_buffers

__all__ = ["CategoryKind", "arrow_items", "translated_codes"]

_STR = ("string", "large_string")
_BYTES = ("binary", "large_binary")


def _is(pa, typ, *names) -> bool:
    return any(getattr(pa.types, f"is_{name}")(typ) for name in names)


def _value_kind(pa, typ) -> str | None:
    """'str' or 'bytes' for an Arrow string/binary type, else None."""
    if _is(pa, typ, *_STR):
        return "str"
    if _is(pa, typ, *_BYTES):
        return "bytes"
    return None


def translated_codes(engine, source, where: str) -> AppendBlocks:
    """The codes of the categorical carray ``source`` as codes of ``engine``'s
    categories (:meth:`CategoryKind.prepare_carray`)."""
    cats = source.category.categories
    index = engine.index
    table = np.array([index.get(c, -2) for c in cats] + [-1], dtype=np.int64)
    atom = engine.codes.atom
    n, blen = len(source), block_len(source)

    def blocks():
        for start in range(0, n, blen):
            codes = source.codes[start:min(start + blen, n)]
            if codes.size and (int(codes.min()) < -1 or int(codes.max()) >= len(cats)):
                raise FormatError(f"{source.rootdir or 'appended carray'}: a code outside "
                                  f"-1..{len(cats) - 1} (there are {len(cats)} categories)")
            yield start, codes, table[codes]

    if (table >= -1).all():     # every category of source is one here: stream them
        return AppendBlocks(lambda: (PreparedCodes(mapped.astype(atom))
                                     for _, _, mapped in blocks()))
    kept = []
    for start, codes, mapped in blocks():
        bad = np.flatnonzero(mapped == -2)
        if bad.size:
            raise engine.refusal(cats[int(codes[bad[0]])],
                                 f"{where}: item {start + int(bad[0])} of the appended carray")
        kept.append(PreparedCodes(mapped.astype(atom)))
    return AppendBlocks(lambda: kept)


@register
class CategoryKind(ColumnKind):
    """A categorical column: codes of ``codes`` dtype into categories of
    ``items`` ('str' or 'bytes'), ``ordered`` or not.

    Parameters
    ----------
    codes : numpy.dtype
        The codes' signed integer dtype (int8 to int64).
    items : {'str', 'bytes'}
        The categories' kind.
    ordered : bool
        Whether the categories are ordered (pandas' and Arrow's ``ordered``).
    """

    key = "categorical"

    new_rank = 40           # before vlen: a categorical carray's items are text too

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """A :class:`~.types.category` ``dtype`` (or ``'category'``), a
        categorical carray or a pandas Categorical."""
        return category_request(array, dtype)

    @classmethod
    def new_meta(cls, request, making):
        array = making.array
        fast = arrow_items(array, request)      # (Python items, encoded by pyarrow)
        if fast is not None:
            request, rows = fast
            meta, _ = new_category_meta(request, [], making.cparams, len(array)
                                        if making.expectedlen is None else making.expectedlen,
                                        making.chunklen, making.dflt)
            return meta, rows
        return new_category_meta(request, array, making.cparams, making.expectedlen,
                                 making.chunklen, making.dflt)

    def __init__(self, codes, items: str = "str", ordered: bool = False):
        self.codes = np.dtype(codes)
        self.items = items
        self.ordered = bool(ordered)

    @classmethod
    def of_meta(cls, meta):
        slot = getattr(meta, "kind", None)
        if not isinstance(slot, CategoryLayout):
            return None
        return cls(slot.categorical.codes, slot.items.kind, slot.categorical.ordered)

    # ------------------------------------------------------------ its carrays
    vlen_items = True
    variable_items = True
    coded_items = True
    direct_appends = False

    @classmethod
    def takes_items(cls, dtype) -> bool:
        return category_request(None, dtype) is not None

    @classmethod
    def vlen_type(cls, meta):
        return vlen_of(meta.kind.items)

    @classmethod
    def category(cls, meta, engine):
        return category_of(meta, engine)

    @classmethod
    def item_engine(cls, engine):
        """The codes' engine: its statistics and index are of the codes."""
        return engine.codes

    @classmethod
    def codes_view(cls, meta, engine, length: int) -> CodesView:
        return CodesView(engine, length)

    @classmethod
    def dflt(cls, meta, engine) -> np.ndarray:
        """The metadata's, or the category of its code."""
        code = meta.kind.dflt_code
        if code < 0:
            return meta.dflt
        out = np.empty((), dtype=meta.atom)
        out[()] = engine.lookup()[code]
        return out

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        return np.fromiter((v is None for v in items().tolist()), dtype=bool, count=length)

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where) -> np.ndarray:
        """``value`` as items of the categories' kind, in one strict conversion.

        Raises
        ------
        ValueError
            Items not of that kind, or not broadcast to ``arrlen``.
        """
        items = meta.kind.items
        return as_items(value, items.kind, meta.atom, items.nullable, arrlen, where)

    @classmethod
    def prepare_carray(cls, meta, engine, source, convert) -> AppendBlocks:
        """The carray ``source`` made ready to append: a categorical carray's
        codes translated into the codes of these categories (no item is
        decoded), the items of any other turned into codes now (held until
        the append).

        Raises
        ------
        KindMismatchError
            ``source`` holds items of the other kind, or of a dtype that is
            neither (unless these categories are still none).
        ValueError
            An item that is not a category.
        FormatError
            ``source``'s codes outside its categories (a damaged file).
        """
        where, _, _ = check_appended(meta.kind.items, engine, source, categorical=True)
        if source.category is not None:
            return translated_codes(engine, source, where)
        atom = meta.atom
        kept = [engine.prepare(convert(block, atom)) for _, block in item_blocks(source)]
        return AppendBlocks(lambda: kept)

    @classmethod
    def of_arrow(cls, pa, typ):
        if not pa.types.is_dictionary(typ):
            return None
        items = _value_kind(pa, typ.value_type)
        if items is None:
            return None
        return cls(np.dtype(typ.index_type.to_pandas_dtype()), items, typ.ordered)

    def arrow_type(self, pa):
        value = pa.string() if self.items == "str" else pa.binary()
        return pa.dictionary(pa.from_numpy_dtype(self.codes), value, self.ordered)

    def dtype(self):
        return category(None, self.ordered)

    def accepts(self, pa, typ) -> bool:
        """Dictionary arrays of any integer indices over strings (binary for
        a column of bytes), and plain arrays of such items."""
        if pa.types.is_dictionary(typ):
            return pa.types.is_integer(typ.index_type) and \
                _value_kind(pa, typ.value_type) == self.items
        return _value_kind(pa, typ) == self.items

    # ------------------------------------------------------------ rows

    def encode(self, engine, buffers: ArrowBuffers) -> None:
        """Append Arrow rows as codes (-1 for a null).

        Raises
        ------
        ValueError, TypeError
            As :meth:`prepare`; nothing is written then.
        """
        engine.codes.append(self.prepare(engine, buffers).values)

    def prepare(self, engine, buffers: ArrowBuffers) -> ArrowBuffers:
        """Arrow rows turned into the codes that :meth:`encode` appends (its
        ``values``: -1 for a null), checked before anything is written.

        Raises
        ------
        ValueError
            A row that is not one of the categories (the error a write of
            Python items raises), or indices outside the dictionary.
        TypeError
            Buffers of no string, binary or dictionary layout.
        """
        atom = engine.codes.atom
        n = buffers.length
        cats = category_buffers(engine)
        if buffers.dictionary is cats and buffers.validity is None and \
                buffers.values.dtype == atom:
            return buffers                  # codes of this very column (read or prepared)
        if buffers.dictionary is None:
            if buffers.offsets is None or buffers.values is None:
                raise TypeError("a categorical column takes Arrow dictionary, string or "
                                "binary rows")
            table = dictionary_codes(engine, buffers)
            self._check(engine, table, buffers, None, None)
            return ArrowBuffers(n, None, None, table.astype(atom), (), cats)
        indices = np.asarray(buffers.values)
        valid = buffers.validity
        size = buffers.dictionary.length
        safe = indices
        if n and (int(indices.min()) < 0 or int(indices.max()) >= size):
            safe = indices if valid is None else np.where(valid, indices, 0)
            if (valid is None or valid.any()) and \
                    (int(safe.min()) < 0 or int(safe.max()) >= size):
                raise ValueError(f"Arrow dictionary indices outside 0..{size - 1}")
        if buffers.dictionary is cats:          # rows read from this very column
            table = None
        else:
            table = dictionary_codes(engine, buffers.dictionary)
            self._check(engine, table, buffers.dictionary, safe, valid)
            if np.array_equal(table, np.arange(size)):
                table = None
        if not size:
            codes = np.full(n, -1, dtype=atom)
        elif table is None:                     # the same categories, in the same order
            codes = safe.astype(atom, copy=True)
        else:
            codes = table.astype(atom).take(safe)
        if valid is not None:
            np.copyto(codes, atom.type(-1), where=~valid)
        return ArrowBuffers(n, None, None, codes, (), cats)     # (-1: a missing row)

    @staticmethod
    def _check(engine, table, dictionary, used, valid) -> None:
        """Refuse (as a write of Python items does) an entry of ``dictionary``
        that is not a category (``table`` -2) and that a present row uses."""
        bad = table == -2
        if not bad.any():
            return
        if used is not None:
            hit = np.zeros(len(table), dtype=bool)
            hit[used if valid is None else used[valid]] = True
            bad &= hit
            if not bad.any():
                return
        first = int(np.flatnonzero(bad)[0])
        item = items_of_buffers(dictionary.slice(first, first + 1),
                                engine.categories.vlen.kind, np.dtype(object))[0]
        raise engine.refusal(item)

    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        """Rows as the codes (indices; -1 under a null) and the categories.

        Raises
        ------
        FormatError
            A stored code outside -1..len(categories)-1 (a damaged file).
        """
        codes = engine.codes.read_range(start, stop)
        dictionary = category_buffers(engine)
        valid = codes >= 0
        if codes.size:
            lo, hi = int(codes.min()), int(codes.max())
            if lo < -1 or hi >= dictionary.length:
                raise FormatError(f"{engine.codes.store.root if engine.codes.store else ''}: "
                                  f"a code outside -1..{dictionary.length - 1} (there are "
                                  f"{dictionary.length} categories)")
            validity = None if lo >= 0 else valid
        else:
            validity = None
        return ArrowBuffers(len(codes), validity, None, codes, (), dictionary)

    def to_python(self, buffers: ArrowBuffers) -> np.ndarray:
        atom = vlen_result_dtype(self.items, True)
        size = buffers.dictionary.length
        table = np.empty(size + 1, dtype=atom)
        table[:-1] = items_of_buffers(buffers.dictionary, self.items, atom)
        table[-1] = None
        codes = np.asarray(buffers.values, dtype=np.int64)
        if buffers.validity is not None:
            codes = np.where(buffers.validity, codes, size)
        return table[codes]
