"""The engine of a categorical carray: codes in a :class:`~.engine.ChunkEngine`,
categories in a :class:`~.vlen_engine.VlenEngine`, items in between (its
parts, :mod:`bcolz_store.chunks.parts`: the codes are the primary part,
whose ``meta/sizes`` and statistics are the carray's; the categories a
fixed part).

Reads decode the codes and look each one up among the categories (a code of
-1 is a missing item, None); writes turn items into codes, refusing an item
that is not a category (as pandas does).  The categories are read once, on
first use, and never change after the carray is created.

Layout: kinds/category/meta.py.
"""

from __future__ import annotations

import collections.abc

import numpy as np

from ...chunks.parts import Part, PartsEngine
from ...errors import BcolzStoreError, FormatError, KindMismatchError, LimitError
from ...limits import check_alloc

__all__ = ["CategoryEngine", "PreparedCodes"]


_MAX_FIXED_BYTES = 1 << 26
_MAX_CAST_WIDTH = 1 << 12
_MEASURE_STEP = 1 << 20          # characters of a str category encoded at a time to size it


def _fixed_width(items: list, atom: np.dtype):
    """The categories as an ``S<n>`` array when a cast from it gives them back
    exactly (none ends in NUL; at most 64 MiB), else None.  str categories are
    stored as UTF-8 (numpy's ``S`` -> ``StringDType`` cast copies the bytes)."""
    if atom.kind not in "TO" or not len(items):
        return None
    if atom.kind == "O" and isinstance(items[0], str):
        return None                   # numpy 1.x: str items as objects; no cast to str
    longest = max(map(len, items))     # (characters or bytes: at most the UTF-8 width)
    if longest * len(items) > _MAX_FIXED_BYTES or (atom.kind == "T" and
                                                  longest > _MAX_CAST_WIDTH):
        return None                   # (sized before encoding: no copy of a huge item)
    width = max(max(len(v.encode("utf-8")) if isinstance(v, str) else len(v) for v in items), 1)
    if width * len(items) > _MAX_FIXED_BYTES:
        return None
    raw = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in items]
    if any(r.endswith(b"\0") for r in raw):
        return None
    if atom.kind == "T" and width > _MAX_CAST_WIDTH:
        return None                   # numpy's S -> StringDType cast buffers 128 x the width
    return np.array(raw, dtype=f"S{width}")


def _item_nbytes(item, atom: np.dtype) -> int:
    """Bytes a read allocates for one copy of ``item`` beyond its slot: its
    UTF-8 in a ``StringDType`` array; nothing for an object array (the
    items are references to the categories)."""
    if atom.kind != "T":
        return 0
    if not isinstance(item, str):
        return len(item)
    if item.isascii():
        return len(item)
    # encoded a MiB of characters at a time: a huge category is measured
    # without a whole second copy of it (the read's memory check comes after)
    return sum(len(item[i:i + _MEASURE_STEP].encode("utf-8", "surrogatepass"))
               for i in range(0, len(item), _MEASURE_STEP))


class PreparedCodes:
    """Items already turned into codes by :meth:`CategoryEngine.prepare`."""

    __slots__ = ("codes",)

    def __init__(self, codes: np.ndarray):
        self.codes = codes

    def __len__(self) -> int:
        return len(self.codes)


class CategoryEngine(PartsEngine):
    """The codes, categories and their lookups of one categorical carray.

    Parameters
    ----------
    codes : ChunkEngine
        The engine of the codes (signed integers, -1 for a missing item).
    categories : VlenEngine
        The engine of the categories (str or bytes items, none missing).
    atom : numpy.dtype
        The dtype of the items read (``StringDType(na_object=None)`` or object).
    """

    codes = Part()
    categories = Part()

    def __init__(self, codes, categories, atom):
        self._init_parts({"codes": codes, "categories": categories}, fixed=("categories",))
        self.atom = atom
        self._lookup = None         # categories + a missing item, as an array of atom
        self._index = None          # category -> code
        self._fixed = None          # the categories as one S<n> array, when that keeps them
        self._nbytes = None         # bytes of each category as an item read (+ 0: missing)

    # ------------------------------------------------------------ the categories

    def lookup(self) -> np.ndarray:
        """The categories followed by a missing item (read on first use).

        Raises
        ------
        FormatError
            If the categories repeat an item or hold a missing one.
        """
        if self._lookup is None:
            try:
                self._load_lookup()
            except MemoryError:
                raise LimitError(f"{self._where()}: no memory for the categories") from None
        return self._lookup

    def _where(self) -> str:
        if self.codes.store is not None:
            return self.codes.store.root
        return "categorical carray"

    def _load_lookup(self) -> None:
        """Read the categories: as an array, a list, a dict, a fixed-width copy."""
        # they are held four times over while this runs (items, list, table, S copy)
        check_alloc(4 * self.categories.nbytes, f"{self._where()}: reading the categories")
        values = self.categories.read_range(0, self.categories.length)
        items = values.tolist()
        index = {item: code for code, item in enumerate(items)}
        if len(index) != len(items) or None in index:
            where = self.categories.store.root if self.categories.store else "categories"
            raise FormatError(f"{where}: the categories repeat an item or hold a missing "
                              f"one")
        table = np.empty(len(items) + 1, dtype=self.atom)
        table[:-1] = values
        table[-1] = None
        self._lookup, self._index = table, index

    def _item_tables(self) -> None:
        """The fixed-width copy and the item sizes of the categories, which only
        reads of items use (made on the first)."""
        if self._nbytes is None:
            items = self.lookup()[:-1]       # (iterated: no second list of them)
            self._fixed = _fixed_width(items, self.atom)
            self._nbytes = np.array([_item_nbytes(v, self.atom) for v in items] + [0],
                                    dtype=np.int64)

    @property
    def index(self) -> dict:
        """category -> code."""
        self.lookup()
        return self._index

    def items_of(self, codes: np.ndarray) -> np.ndarray:
        """The items that ``codes`` stand for.

        Raises
        ------
        FormatError
            A code outside -1..len(categories)-1.
        """
        table = self.lookup()
        self._item_tables()
        n = len(table) - 1
        codes = np.asarray(codes)
        if codes.size and (int(codes.min()) < -1 or int(codes.max()) >= n):
            where = self.codes.store.root if self.codes.store else "categorical carray"
            raise FormatError(f"{where}: a code outside -1..{n - 1} (there are {n} categories)")
        missing = codes < 0
        # The items are copies (StringDType) or references (object): sized
        # from the codes before anything is allocated.
        need = codes.size * self.atom.itemsize + int(self._nbytes[np.where(missing, n, codes)]
                                                     .sum(dtype=np.int64))
        check_alloc(need, f"{self._where()}: reading {codes.size} categorical items")
        fixed = self._fixed
        if fixed is None or fixed.itemsize * codes.size > max(2 * need, 1 << 16):
            return table[np.where(missing, n, codes)]
        # a fixed-width gather, then one cast: far faster than taking strings
        picked = fixed.take(np.where(missing, 0, codes))
        out = np.empty(codes.shape, dtype=self.atom)
        if self.atom.kind == "T":
            np.copyto(out, picked, casting="unsafe")
        else:
            out[...] = picked.astype(object)
        if missing.any():
            out[missing] = None
        return out

    def codes_of(self, items: np.ndarray) -> np.ndarray:
        """The codes of ``items`` (None -> -1).

        Raises
        ------
        ValueError
            An item that is not a category.
        KindMismatchError
            An item of the other kind (bytes for str categories, str for
            bytes); a ``TypeError``.
        TypeError
            An item that cannot be one (unhashable: a list, a dict...).
        """
        index = self.index
        try:
            codes = np.fromiter((-1 if v is None else index.get(v, -2) for v in items.tolist()),
                                dtype=np.int64, count=len(items))
        except TypeError:               # an unhashable item: never a category
            pos = next(i for i, v in enumerate(items.tolist())
                       if not isinstance(v, collections.abc.Hashable))
            raise TypeError(f"item {pos} ({type(items[pos]).__name__}) cannot be an item of "
                            f"this categorical carray (its categories are str or bytes)") \
                from None
        bad = np.flatnonzero(codes == -2)
        if bad.size:
            raise self.refusal(items[int(bad[0])])
        return codes.astype(self.codes.atom)

    def refusal(self, item, where: str = "") -> Exception:
        """The error for writing ``item``, which is not a category (``where``
        begins its message): a KindMismatchError for an item of the other
        kind (bytes where the categories are str, or str where they are
        bytes), else ValueError."""
        index = self.index
        kind = self.categories.vlen.kind
        other = (bytes, bytearray, memoryview) if kind == "str" else (str,)
        where = f"{where}: " if where else ""
        if index and isinstance(item, other):
            return KindMismatchError(f"{where}{item!r} is {type(item).__name__}, and this "
                                     f"categorical carray's categories are {kind}; "
                                     f"{'encode' if kind == 'bytes' else 'decode'} the items "
                                     f"first")
        return ValueError(f"{where}{item!r} is not one of the {len(index)} categories of this "
                          f"categorical carray (they are fixed when it is created)")

    # ------------------------------------------------------------ engine protocol

    def _loaded_for_writing(self) -> None:
        """The categories' lookups, read now (a damaged set is left to raise
        when first needed, as for a reader).

        Raises
        ------
        BcolzStoreError
            What reading raised, when another writer committed meanwhile.
        """
        try:
            self.lookup()
        except BcolzStoreError:
            store = self.codes.store
            if store is not None and store.changed_since_loaded():
                raise

    def chunk_array(self, nchunk: int) -> np.ndarray:
        return self.items_of(self.codes.chunk_array(nchunk))

    def point(self, nchunk: int, pos: int):
        """One item: the chunk's codes are decoded (and cached), one is looked up."""
        return self.items_of(self.codes.chunk_array(nchunk)[pos:pos + 1])[0]

    def read_range(self, start: int, stop: int) -> np.ndarray:
        return self.items_of(self.codes.read_range(start, stop))

    def gather(self, idx: np.ndarray) -> np.ndarray:
        return self.items_of(self.codes.gather(idx))

    def prepare(self, items: np.ndarray) -> PreparedCodes:
        """``items`` as the codes a write stores, checked before anything changes.

        Raises
        ------
        ValueError
            An item that is not a category.
        """
        return PreparedCodes(self.codes_of(items))

    def _as_codes(self, items) -> np.ndarray:
        return items.codes if isinstance(items, PreparedCodes) else self.codes_of(items)

    def append(self, items) -> None:
        self.codes.append(self._as_codes(items))

    def set_slice(self, start: int, stop: int, step: int, items) -> None:
        self.codes.set_slice(start, stop, step, self._as_codes(items))

    def set_positions(self, idx: np.ndarray, items) -> None:
        self.codes.set_positions(idx, self._as_codes(items))
