"""numpy <-> Arrow, column by column: the type of a column each way, its values
block by block, and the schema metadata that records what Arrow cannot say.

:mod:`bcolz_store.converters.arrow` and the Arrow C stream (:mod:`.arrow_columns`)
move columns with these (docs/converting.md, "Arrow types").  :func:`arrow_type`
(:func:`to_arrow_array`) and :func:`numpy_atom` (:func:`from_arrow_array`) decide
a column's type each way; the kinds' ``interop_arrow`` modules map theirs
(``kinds/nullable``, ``kinds/struct``: decimal and struct, ``kinds/list``).
Arrow data that a column cannot hold is refused, never cut.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..kinds.category.types import category
from ..kinds.list.meta import ListType, MapType
from ..kinds.vlen.meta import vlen_result_dtype
from ..kinds.list.interop_arrow import (arrow_list_type, is_arrow_list, list_arrow_type,
                                   lists_from_arrow, lists_to_arrow)
from .columns import check_fixed_width
from .optional import require
from ..kinds.struct.interop_arrow import (column_kind_of_arrow, composite_arrow_type, composite_from_arrow,
                            composite_to_arrow, is_composite)
from ..kinds.nullable.interop_arrow import masked_to_arrow
from .arrow_meta import (META_KEY, META_VERSION, read_metadata, recorded_dtype, recorded_vlen,
                         schema_metadata)

__all__ = ["ColumnType", "META_KEY", "META_VERSION", "arrow_type", "dictionary_category",
           "from_arrow_array", "import_pyarrow", "numpy_atom", "read_metadata", "recorded_dtype",
           "recorded_vlen", "schema_metadata", "sized_atoms", "to_arrow_array"]

_ARROW_TIME_UNITS = ("s", "ms", "us", "ns")
_TEXT = ("string", "large_string", "string_view")
_BINARY = ("binary", "large_binary", "binary_view", "fixed_size_binary")
_NAT = np.iinfo(np.int64).min
_INT32 = np.iinfo(np.int32)


def import_pyarrow():
    """Import pyarrow, the library of the ``arrow`` extra.

    Returns
    -------
    module
        ``pyarrow``.

    Raises
    ------
    ImportError
        When pyarrow is not installed; the message says
        ``pip install 'bcolz_store[arrow]'``.
    """
    return require("pyarrow", "arrow", "Arrow and Parquet conversions")


# --- numpy -> Arrow -----------------------------------------------------------------

def _flat_to_arrow(pa, values: np.ndarray, tz=None):
    """One-dimensional numpy values as an Arrow array (see the module's table);
    ``tz`` is the zone of timestamps (their values are UTC)."""
    dtype = values.dtype
    kind = dtype.kind
    if kind == "O":
        raise TypeError("object values have no Arrow type; convert them to a fixed-width "
                        "or numeric dtype first")
    native = dtype.newbyteorder("=")
    if kind in "biu" or (kind == "f" and dtype.itemsize <= 8):
        return pa.array(values.astype(native, copy=False))
    if kind in "Mm":
        unit, count = np.datetime_data(dtype)
        ints = values.astype(native, copy=False).view(np.int64)
        mask = ints == _NAT
        if count == 1 and unit in _ARROW_TIME_UNITS:
            return pa.array(ints, mask=mask, type=pa.timestamp(unit, tz=tz) if kind == "M"
                            else pa.duration(unit))
        if count == 1 and unit == "D" and kind == "M":
            days = np.where(mask, 0, ints)
            if len(days) and (days.min() < _INT32.min or days.max() > _INT32.max):
                raise ValueError("dates beyond the range of Arrow's date32")
            return pa.array(days.astype(np.int32), mask=mask, type=pa.date32())
        return pa.array(ints, mask=mask, type=pa.int64())
    if kind == "S":
        return _binary_of_fixed(pa, values)
    if kind == "U":
        return _string_of_fixed(pa, values)
    raw = np.ascontiguousarray(values).tobytes()
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(dtype.itemsize), len(values),
                                                [None, pa.py_buffer(raw)])


def _item_lengths(units: np.ndarray) -> tuple:
    """``(lengths, inner)`` of fixed-width items seen as rows of code units
    (bytes of ``S``, code points of ``U``): the length of each item as numpy
    gives it (trailing NULs are padding), and whether any item holds a NUL
    before its end."""
    present = units != 0
    width = units.shape[1]
    lengths = np.where(present.any(axis=1), width - np.argmax(present[:, ::-1], axis=1), 0)
    inner = bool((~present & (np.arange(width) < lengths[:, None])).any())
    return lengths, inner


def _binary_of_fixed(pa, values: np.ndarray):
    """``S<n>`` values as Arrow binary, NULs inside a value kept.

    pyarrow reads numpy ``S`` items as C strings and cuts them at their first
    NUL; the buffers are built here instead.  Trailing NULs are numpy's padding
    (an item read from numpy has none), so they are not written; padding them
    again on the way back gives the stored bytes exactly.
    """
    count, width = len(values), values.dtype.itemsize
    if width == 0 or count == 0:
        return pa.array([b""] * count, type=pa.binary())
    units = np.ascontiguousarray(values).view(np.uint8).reshape(count, width)
    lengths, _ = _item_lengths(units)
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] > _INT32.max:
        raise ValueError(f"a block of {offsets[-1]} bytes of S values is more than one Arrow "
                         f"binary array holds; write fewer rows at a time")
    data = units[np.arange(width) < lengths[:, None]]
    return pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets.astype(np.int32)),
                                                      pa.py_buffer(data)])


def _string_of_fixed(pa, values: np.ndarray):
    """``U<n>`` values as Arrow strings, NULs inside a value kept (pyarrow's own
    conversion cuts a numpy ``U`` item at its first NUL; trailing NULs are
    numpy's padding, as for ``S``)."""
    count, chars = len(values), values.dtype.itemsize // 4
    if chars and count:
        units = np.ascontiguousarray(values).view(np.uint32).reshape(count, chars)
        if _item_lengths(units)[1]:
            return pa.array(values.tolist(), type=pa.string())
    return pa.array(values.astype(values.dtype.newbyteorder("="), copy=False), type=pa.string())


def _vlen_to_arrow(pa, block: np.ndarray, kind: str, name: str):
    typ = pa.large_string() if kind == "str" else pa.large_binary()
    try:
        return pa.array(block, type=typ)
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise ValueError(f"column {name!r}: {err}") from None


def _category_to_arrow(pa, codes: np.ndarray, cat):
    """A categorical column's codes as an Arrow dictionary array: the
    categories are the dictionary, the codes (their int dtype) the indices,
    -1 (a missing item) a null, ``ordered`` kept."""
    codes = np.asarray(codes)
    codes = codes.astype(codes.dtype.newbyteorder("="), copy=False)
    values = pa.array(list(cat.categories or ()),
                      type=pa.binary() if cat.kind == "bytes" else pa.string())
    indices = pa.array(codes, mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, values, ordered=cat.ordered)


def to_arrow_array(pa, block: np.ndarray, name: str, vlen=None, tz=None, category=None):
    """A block of a column's rows as an Arrow array (see the module's table).

    Parameters
    ----------
    pa : module
        pyarrow.
    block : numpy.ndarray, shape (n, *row shape)
        Rows of one column.
    name : str
        The column's name, for messages.
    vlen : {'str', 'bytes'}, optional
        The kind of a vlen column's items (then ``block`` holds them, None
        for missing ones).
    tz : str, optional
        The time zone of a datetime64 column in s, ms, us or ns (its values
        are UTC), from its ``timezone`` attr.
    category : category, optional
        The type of a categorical column; then ``block`` holds its codes
        (``carray.codes``, -1 for a missing item).

    Returns
    -------
    pyarrow.Array
        Of length n; rows that are arrays become (nested) fixed-size lists;
        a categorical column a ``DictionaryArray`` (indices of the codes' int
        type, the categories as the dictionary, ``ordered`` kept).

    Raises
    ------
    TypeError
        For object values.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    """
    if category is not None:
        return _category_to_arrow(pa, block, category)
    if is_composite(vlen):                  # decimal or struct (kinds/struct/interop_arrow.py)
        return composite_to_arrow(pa, block, vlen, name)
    if isinstance(vlen, (ListType, MapType)):       # a list column (kinds/list/interop_arrow.py)
        return lists_to_arrow(pa, block, vlen, name)
    if vlen is not None:
        return _vlen_to_arrow(pa, block, vlen, name)
    if isinstance(block, np.ma.MaskedArray):      # a nullable column: nulls as nulls
        return masked_to_arrow(pa, block, lambda data: to_arrow_array(pa, data, name, None, tz))
    try:
        arr = _flat_to_arrow(pa, block.reshape(-1), tz)
    except (TypeError, ValueError) as err:
        raise type(err)(f"column {name!r}: {err}") from None
    for size in reversed(block.shape[1:]):
        arr = pa.FixedSizeListArray.from_arrays(arr, size)
    return arr


def arrow_type(atom, vlen=None, tz=None, category=None, name="?"):
    """The Arrow type of a column whose rows are ``atom``.

    Parameters
    ----------
    atom : numpy.dtype
        The column's dtype, with the shape of one row as a subarray shape.
    vlen : {'str', 'bytes'}, optional
        The kind of a vlen column's items.
    tz : str, optional
        The time zone of a datetime64 column (see :func:`to_arrow_array`).
    category : category, optional
        The type of a categorical column; ``atom`` is then its codes' dtype.
    name : str, optional
        The column's name, for messages.

    Returns
    -------
    pyarrow.DataType

    Raises
    ------
    ImportError
        When pyarrow is not installed.
    TypeError
        For object dtypes.
    """
    pa = import_pyarrow()
    if category is not None:
        return _category_to_arrow(pa, np.empty(0, dtype=atom), category).type
    if is_composite(vlen):                  # decimal or struct (kinds/struct/interop_arrow.py)
        return composite_arrow_type(vlen)
    if isinstance(vlen, (ListType, MapType)):
        return list_arrow_type(pa, vlen)
    if vlen is not None:
        return pa.large_string() if vlen == "str" else pa.large_binary()
    atom = np.dtype(atom)
    return to_arrow_array(pa, np.empty((0,) + atom.shape, atom.base), name, tz=tz).type


# --- Arrow -> numpy -----------------------------------------------------------------

def _is(pa, typ, *names) -> bool:
    return any(getattr(pa.types, f"is_{n}", lambda t: False)(typ) for n in names)


def _default_base(pa, typ, name: str) -> np.dtype:
    """The numpy dtype of Arrow values of ``typ`` with no recorded dtype."""
    if _is(pa, typ, "boolean"):
        return np.dtype("?")
    if _is(pa, typ, "integer", "floating"):
        return np.dtype(typ.to_pandas_dtype())
    if _is(pa, typ, "timestamp"):
        return np.dtype(f"M8[{typ.unit}]")
    if _is(pa, typ, "date32"):
        return np.dtype("M8[D]")
    if _is(pa, typ, "date64"):
        return np.dtype("M8[ms]")
    if _is(pa, typ, "duration", "time32", "time64"):     # a time of day: since midnight
        return np.dtype(f"m8[{typ.unit}]")
    if _is(pa, typ, "string", "large_string", "string_view"):
        return np.dtype("U1")       # the width comes from a scan of the data
    if _is(pa, typ, "binary", "large_binary", "binary_view"):
        return np.dtype("S1")
    if _is(pa, typ, "fixed_size_binary"):
        return np.dtype(f"S{typ.byte_width}")
    raise TypeError(f"column {name!r}: Arrow type {typ} has no bcolz column kind (decimal "
                    f"and struct columns and union are refused); cast it first")


def _fits(pa, typ, recorded: np.dtype) -> bool:
    """Whether Arrow values of ``typ`` can be what ``recorded`` says they were."""
    kind = recorded.kind
    if kind == "M":
        return _is(pa, typ, "timestamp", "date32", "date64", "int64")
    if kind == "m":
        return _is(pa, typ, "duration", "time32", "time64", "int64")
    if kind == "S":
        return _is(pa, typ, "binary", "large_binary", "binary_view", "fixed_size_binary")
    if kind == "U":
        return _is(pa, typ, "string", "large_string", "string_view")
    if kind in "biu" or (kind == "f" and recorded.itemsize <= 8):
        return _is(pa, typ, "boolean", "integer", "floating")
    return _is(pa, typ, "fixed_size_binary") and typ.byte_width == recorded.itemsize


class ColumnType(NamedTuple):
    """How an Arrow column becomes a bcolz column (see :func:`numpy_atom`)."""

    atom: np.dtype      # dtype, with the row shape as a subarray shape
    scan: bool          # S/U whose width must come from the data (atom has width 1)
    attrs: dict         # extra column attrs ('timezone')
    vlen: object = None  # the vlen type of a column of items of any length


def numpy_atom(typ, recorded=None, name="?", vlen=None, nullable=True) -> ColumnType:
    """The numpy atom of a column of Arrow type ``typ``.

    Parameters
    ----------
    typ : pyarrow.DataType
    recorded : numpy.dtype, optional
        The dtype recorded in bcolz_store's metadata; used when ``typ`` can
        hold it.
    name : str
        The column's name, for messages.
    vlen : vlen, optional
        Make a vlen column of this type when ``typ`` is strings (kind
        'str') or binary (kind 'bytes').

    Returns
    -------
    ColumnType
        ``atom``: the dtype, a subarray dtype for fixed-size lists; ``scan``:
        True for strings and binary with no recorded width (the atom has
        width 1 until the data is scanned); ``attrs``: extra column attrs
        (``timezone`` for zoned timestamps).

    Raises
    ------
    TypeError
        For Arrow types with no bcolz column kind.
    """
    pa = import_pyarrow()
    try:
        found = column_kind_of_arrow(typ, bool(nullable))   # decimal or struct
    except TypeError as err:
        raise TypeError(f"column {name!r}: {err}") from None
    if found is not None:
        if getattr(found, "nullable", False) is None:   # a decimal: as its field may hold nulls
            found.nullable = bool(nullable)
        return ColumnType(np.dtype(object), False, {}, found)
    if is_arrow_list(pa, typ):      # a list column; ``nullable``: its field's
        try:
            return ColumnType(np.dtype(object), False, {}, arrow_list_type(pa, typ, nullable))
        except TypeError as err:
            raise TypeError(f"column {name!r}: {err}") from None
    shape = []
    while _is(pa, typ, "fixed_size_list"):
        shape.append(typ.list_size)
        typ = typ.value_type
    if _is(pa, typ, "dictionary"):
        typ = typ.value_type
    if vlen is not None and not shape and _is(pa, typ, *(
            ("string", "large_string", "string_view") if vlen.kind == "str"
            else ("binary", "large_binary", "binary_view", "fixed_size_binary"))):
        return ColumnType(vlen_result_dtype(vlen.kind, vlen.nullable is not False), False, {},
                          vlen)
    extra, scan = {}, False
    if recorded is not None and _fits(pa, typ, recorded):
        base = recorded
    else:
        base = _default_base(pa, typ, name)
        scan = not _is(pa, typ, "fixed_size_binary") and base.kind in "SU"
        if _is(pa, typ, "timestamp") and typ.tz:
            extra["timezone"] = typ.tz
    return ColumnType(np.dtype((base, tuple(shape))) if shape else base, scan, extra)


def dictionary_category(pa, typ, first, name="?"):
    """The categorical type of an Arrow dictionary column of strings or binary.

    Parameters
    ----------
    pa : module
        pyarrow.
    typ : pyarrow.DataType
        The column's type.
    first : pyarrow.Array or pyarrow.ChunkedArray
        Its first block: its dictionary gives the categories, in its order.
    name : str
        The column's name, for messages.

    Returns
    -------
    category or None
        ``category(dictionary, ordered=typ.ordered)``; None when ``typ`` is
        not a dictionary of strings or binary.

    Raises
    ------
    ValueError
        A dictionary with nulls or repeated values (no categories).
    """
    if not _is(pa, typ, "dictionary") or not _is(pa, typ.value_type, *_TEXT, *_BINARY):
        return None
    if isinstance(first, pa.ChunkedArray):
        first = first.unify_dictionaries().chunk(0) if first.num_chunks else \
            pa.array([], type=typ)
    dictionary = first.dictionary
    if _is(pa, dictionary.type, "binary_view", "fixed_size_binary"):
        dictionary = dictionary.cast(pa.large_binary())
    elif _is(pa, dictionary.type, "string_view"):
        dictionary = dictionary.cast(pa.large_string())
    try:
        return category(dictionary.to_pylist(), typ.ordered)
    except (TypeError, ValueError) as err:
        raise ValueError(f"column {name!r}: its Arrow dictionary cannot be the categories of "
                         f"a categorical column ({err})") from None


def _refuse_nulls(arr, name: str, what: str) -> None:
    if arr.null_count:
        raise ValueError(f"column {name!r} has {arr.null_count} nulls, which {what} cannot "
                         f"hold")


def _flatten(pa, arr, shape, name: str):
    for size in shape:
        _refuse_nulls(arr, name, f"rows of shape {tuple(shape)} (Arrow fixed-size lists)")
        if not _is(pa, arr.type, "fixed_size_list") or arr.type.list_size != size:
            raise TypeError(f"column {name!r}: {arr.type} is not a list of {size}")
        arr = arr.flatten()
    if _is(pa, arr.type, "dictionary"):
        arr = arr.dictionary_decode()
    return arr


def _strings(pa, arr):
    """``arr`` as large strings or large binary, and the length of each value."""
    pc = require("pyarrow.compute", "arrow", "Arrow conversions")
    if _is(pa, arr.type, "string", "large_string", "string_view"):
        arr = arr.cast(pa.large_string())
        return arr, pc.utf8_length(arr)
    arr = arr.cast(pa.large_binary())
    return arr, pc.binary_length(arr)


def _flat_from_arrow(pa, arr, base: np.dtype, name: str) -> np.ndarray:
    """Arrow values as numpy values of exactly ``base`` (refusing any loss)."""
    kind, typ = base.kind, arr.type
    nulls = arr.null_count
    if not (kind in "Mm" or (kind == "f" and base.itemsize <= 8)):
        _refuse_nulls(arr, name, f"a {base} column that is not nullable")
    if kind in "SU":
        arr, lengths = _strings(pa, arr)
        values = arr.to_numpy(zero_copy_only=False).astype(base)
        if not np.array_equal(np.char.str_len(values), lengths.to_numpy(zero_copy_only=False)):
            raise ValueError(f"column {name!r}: values that {base} would cut (longer than its "
                             f"width, or ending in NUL)")
        return values
    if kind in "Mm":
        if _is(pa, typ, "timestamp", "duration"):
            stored = np.dtype(f"{kind}8[{typ.unit}]")
        elif _is(pa, typ, "date32", "date64"):
            stored = np.dtype("M8[D]" if _is(pa, typ, "date32") else "M8[ms]")
        else:                                   # int64 counts of base's unit
            stored = base.newbyteorder("=")
        if _is(pa, typ, "time32", "time64"):           # counts of its unit since midnight
            stored = np.dtype(f"m8[{typ.unit}]")
            arr = arr.view(pa.int32() if _is(pa, typ, "time32") else pa.int64())
        if _is(pa, typ, "date32"):
            arr = arr.cast(pa.int32())
        ints = arr.cast(pa.int64()).fill_null(_NAT).to_numpy(zero_copy_only=False)
        values = ints.view(stored)
        out = values.astype(base)
        if not np.array_equal(out.astype(values.dtype).view(np.int64), values.view(np.int64)):
            raise ValueError(f"column {name!r}: {values.dtype} values that {base} would cut")
        return out
    if kind in "biuf" and base.itemsize <= 8:
        if nulls:
            arr = arr.fill_null(pa.scalar(float("nan"), type=typ))
        values = arr.to_numpy(zero_copy_only=False)
        if values.dtype != base:
            if not np.can_cast(values.dtype, base, "safe"):
                raise ValueError(f"column {name!r}: {values.dtype} values do not fit {base}")
            values = values.astype(base)
        return values
    width = base.itemsize
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8, count=len(arr) * width,
                        offset=arr.offset * width)
    return raw.view(base).copy()


def sized_atoms(pa, atoms: dict, batches, where: str = "Arrow table", nulls=None) -> dict:
    """String and binary atoms as wide as the longest value in the data.

    Parameters
    ----------
    pa : module
        pyarrow.
    atoms : dict of str to numpy.dtype
        Column name -> atom of kind S or U whose width is to be found (the
        columns for which :func:`numpy_atom` says ``scan``).
    batches : iterable of pyarrow.RecordBatch
        All the data, holding at least these columns.
    where : str, default 'Arrow table'
        The source, for messages.
    nulls : set, optional
        Where to add the names of the columns (of one value a row) that hold
        nulls, instead of refusing them (the caller makes them vlen columns,
        which keep missing items).

    Returns
    -------
    dict of str to numpy.dtype
        The same columns, in the same order: ``S<n>`` or ``U<n>`` with ``n``
        the length of the longest value (at least 1), the row shape kept.

    Raises
    ------
    ValueError
        When a column holds nulls (and ``nulls`` is None, or its rows are
        arrays).
    TypeError
        When a column's rows are not lists of its atom's row shape.
    LimitError
        When the fixed width would pad the column absurdly (see
        :func:`._common.check_fixed_width`): read it with ``strings='vlen'``.
    """
    widths = dict.fromkeys(atoms, 1)
    counts, held = dict.fromkeys(atoms, 0), dict.fromkeys(atoms, 0)
    for batch in batches:
        for name, atom in atoms.items():
            flat = _flatten(pa, batch.column(name), atom.shape, name)
            if nulls is not None and not atom.shape and flat.null_count:
                nulls.add(name)
                continue
            _refuse_nulls(flat, name, "a fixed-width text column that is not nullable")
            lengths = _strings(pa, flat)[1].to_numpy(zero_copy_only=False)
            widths[name] = max(widths[name], int(lengths.max(initial=0)))
            counts[name] += len(lengths)
            held[name] += int(lengths.sum(dtype=np.int64))
    out = {}
    for name, atom in atoms.items():
        base = np.dtype(f"{atom.base.kind}{widths[name]}")
        check_fixed_width(where, name, base, counts[name], held[name])
        out[name] = np.dtype((base, atom.shape))
    return out


def _vlen_from_arrow(pa, arr, kind: str):
    if _is(pa, arr.type, "dictionary"):
        values = arr.dictionary
        if _is(pa, values.type, "string_view", "binary_view"):   # (no take kernel for views)
            values = values.cast(pa.large_string() if _is(pa, values.type, "string_view")
                                 else pa.large_binary())
            arr = pa.DictionaryArray.from_arrays(arr.indices, values)
        arr = arr.dictionary_decode()
    if kind == "bytes" and _is(pa, arr.type, "fixed_size_binary"):
        arr = arr.cast(pa.large_binary())
    return arr.to_numpy(zero_copy_only=False)


def from_arrow_array(pa, arr, atom: np.dtype, name: str, vlen=None) -> np.ndarray:
    """Arrow values of a column as numpy rows of exactly ``atom``, refusing any loss.

    Parameters
    ----------
    pa : module
        pyarrow.
    arr : pyarrow.Array
        One block of the column (fixed-size lists for rows that are arrays;
        dictionary arrays are decoded).
    atom : numpy.dtype
        The column's atom, from :func:`numpy_atom` (and :func:`sized_atoms`).
    name : str
        The column's name, for messages.
    vlen : vlen, optional
        For a vlen column: its items come back as an object array (None for
        nulls), which the column converts.

    Returns
    -------
    numpy.ndarray, shape (len(arr), *atom.shape), dtype atom.base

    Raises
    ------
    ValueError
        Nulls outside float and temporal columns, strings or bytes that
        ``atom`` would cut, temporal values its unit would cut, numbers that
        do not fit it.
    TypeError
        When the rows are not lists of the atom's row shape.
    """
    if is_composite(vlen):                  # decimal or struct (kinds/struct/interop_arrow.py)
        return composite_from_arrow(pa, arr, vlen, name)
    if isinstance(vlen, (ListType, MapType)):
        return lists_from_arrow(pa, arr, vlen)
    if vlen is not None:
        return _vlen_from_arrow(pa, arr, vlen.kind)
    n = len(arr)
    flat = _flatten(pa, arr, atom.shape, name)
    return _flat_from_arrow(pa, flat, atom.base, name).reshape((n,) + atom.shape)
