"""A carray's or ctable's columns as Arrow arrays, block by block, and the Arrow
fields they are written as.

A column of a column kind (:mod:`bcolz_store.kinds`) is read straight into
Arrow buffers by its kind (:meth:`~bcolz_store.kinds.base.ColumnKind.decode`),
wrapped by pyarrow without a copy; any other column is read as numpy rows and
converted by :func:`~bcolz_store.interop.arrow_types.to_arrow_array`.  The
other way, :func:`as_kind_buffers` gives the Arrow buffers of rows appended
to a carray of a column kind.

pyarrow is imported inside the functions (``pip install 'bcolz_store[arrow]'``).
"""

from __future__ import annotations

import numpy as np

from .. import threads
from ..kinds.arrow import from_pyarrow, to_pyarrow
from ..kinds.base import kind_for_arrow
from .arrow_fields import cast_to, recorded_field
from .columns import as_arrow_source, atom_of, columns_of

__all__ = ["SMALL_VLEN_BYTES", "arrow_schema", "arrow_types", "as_kind_buffers",
           "column_arrays", "column_field", "kind_holds", "kind_reader", "record_batches"]


def arrow_types():
    """:mod:`bcolz_store.interop.arrow_types`, imported when first used (so
    that ``import bcolz_store`` loads no converter)."""
    from . import arrow_types
    return arrow_types


def _kind(col) -> dict:
    """How :func:`to_arrow_array` takes a column: its vlen kind (or the type of a
    decimal or struct column), zone, category."""
    cat = getattr(col, "category", None)
    vlen_ = getattr(col, "vlen", None)
    zone = None
    if col.dtype.kind == "M" and "timezone" in col.attrs:
        unit, count = np.datetime_data(col.dtype)
        found = col.attrs["timezone"]
        if count == 1 and unit in ("s", "ms", "us", "ns") and isinstance(found, str) and found:
            zone = found
    composite = getattr(col, "column_type", None)    # a decimal or struct column's type
    if composite is None:
        composite = getattr(col, "listtype", None)    # a list or map column's
    if composite is not None:
        return {"vlen": composite, "tz": None, "category": None}
    return {"vlen": None if vlen_ is None or cat is not None else vlen_.kind, "tz": zone,
            "category": cat}


def _atom(col):
    """The atom of what is read of a column: a categorical's codes' dtype."""
    if getattr(col, "category", None) is not None:
        return col.codes[0:0].dtype
    return atom_of(col)


def _read(col, start: int, stop: int) -> np.ndarray:
    """Rows ``[start, stop)`` as :func:`to_arrow_array` takes them (codes of a categorical)."""
    if getattr(col, "category", None) is not None:
        return col.codes[start:stop]
    return col[start:stop]


def arrow_schema(pa, obj):
    """The Arrow schema of a carray or ctable (a carray is one column ``data``),
    with bcolz_store's schema metadata (:mod:`~bcolz_store.interop.arrow_meta`).

    Raises
    ------
    TypeError
        For object columns, or ``obj`` not a carray/ctable.
    """
    fields = [column_field(pa, name, col) for name, col in columns_of(obj)]
    return pa.schema(fields, metadata=arrow_types().schema_metadata(obj))


def column_field(pa, name, col):
    """The Arrow field a column is written as: the field it was read from when
    its attrs record one (:mod:`.arrow_fields`), else its default type."""
    recorded = recorded_field(pa, col, name)
    if recorded is not None:
        return recorded
    own = getattr(col, "kind", None)
    if own is not None and own.extension_type:     # (its atom's type is its storage's)
        return pa.field(name, own.arrow_type(pa), bool(col.nullable))
    typ = _small_type(pa, col) or arrow_types().arrow_type(_atom(col), **_kind(col), name=name)
    # a list, decimal or struct column says its field's flag
    kind = getattr(col, "listtype", None) or getattr(col, "column_type", None)
    return pa.field(name, typ, getattr(kind, "nullable", True) is not False)


#: the most bytes of items a vlen column written as Arrow ``string``/``binary``
#: (32-bit offsets) may hold; a larger one is ``large_string``/``large_binary``
SMALL_VLEN_BYTES = (1 << 31) - 1


def _small_type(pa, col):
    """``string``/``binary`` for a vlen column whose items all fit 32-bit
    offsets (Arrow's large types only where needed), else None."""
    kind = _kind(col)["vlen"]
    if kind not in ("str", "bytes") or col.nbytes > SMALL_VLEN_BYTES:
        return None
    return pa.string() if kind == "str" else pa.binary()


def _reader(pa, name, col):
    """``read(start, stop)``: rows of the column as an array of its field's type."""
    recorded = recorded_field(pa, col, name)
    kind = getattr(col, "kind", None)
    if kind is not None:
        typ = recorded.type if recorded is not None else column_field(pa, name, col).type
        own = kind.arrow_type(pa)

        def read(start, stop):
            arr = to_pyarrow(pa, col.to_buffers(start, stop), own)
            return arr if arr.type == typ else cast_to(pa, arr, typ, name)
        return read
    kinds = _kind(col)
    typ = recorded.type if recorded is not None else _small_type(pa, col)
    if typ is None:
        return lambda start, stop: arrow_types().to_arrow_array(
            pa, _read(col, start, stop), name, **kinds)
    return lambda start, stop: cast_to(pa, arrow_types().to_arrow_array(
        pa, _read(col, start, stop), name, **kinds), typ, name)


def column_arrays(pa, name, col, blen: int, done=None):
    """A column's Arrow arrays, one per ``blen`` rows, read when drawn.

    ``done(n)`` is called after each block of ``n`` rows (a progress bar)."""
    read = _reader(pa, name, col)
    for start in range(0, len(col), blen):
        arr = read(start, start + blen)
        yield arr
        if done is not None:
            done(len(arr))


def record_batches(pa, obj, schema, blen: int, done=None):
    """The record batches of a carray or ctable, ``blen`` rows each, every
    column's block read when the batch is drawn.

    ``done(n)`` is called after each batch of ``n`` rows (a progress bar)."""
    reads = [_reader(pa, name, col) for name, col in columns_of(obj)]
    for start in range(0, len(obj), blen):
        # the columns side by side on the pool (each then decodes its chunks
        # in its own thread): one column's Python work overlaps another's
        # decompression
        arrays = list(threads.map_ordered(lambda read: read(start, start + blen), reads))
        yield pa.record_batch(arrays, schema=schema)
        if done is not None:
            done(len(arrays[0]) if arrays else 0)


def as_kind_buffers(array, kind):
    """The Arrow buffers of ``array`` when it is an Arrow source (a pyarrow Array
    or ChunkedArray, a polars Series...) that a carray of the column kind
    ``kind`` encodes as it is (:meth:`~bcolz_store.kinds.base.ColumnKind.accepts`);
    else ``array`` as :func:`~.columns.as_arrow_source` gives it."""
    array = as_arrow_source(array)
    if kind is None:
        return array
    cls = type(array)
    if not (hasattr(cls, "__arrow_c_stream__") or hasattr(cls, "__arrow_c_array__")) or \
            isinstance(array, np.ndarray) or cls.__module__.split(".")[0] in ("pandas",
                                                                            "bcolz_store"):
        return array
    pa = arrow_types().import_pyarrow()
    if isinstance(array, (pa.Table, pa.RecordBatch)) or not isinstance(
            array, (pa.Array, pa.ChunkedArray)) and hasattr(cls, "__arrow_c_array__") and \
            not hasattr(cls, "__arrow_c_stream__"):
        return array
    try:
        column = array if isinstance(array, (pa.Array, pa.ChunkedArray)) else \
            pa.chunked_array(array)
    except (TypeError, ValueError, pa.ArrowException):
        return array
    if not kind.accepts(pa, column.type):
        return array
    return from_pyarrow(pa, column)


def kind_holds(pa, typ, atom) -> bool:
    """Whether the column kind of Arrow type ``typ`` makes a carray of the numpy
    dtype ``atom`` (the dtype a column of ``typ`` is read as, recorded or
    not): else its rows keep the numpy path, which converts them."""
    kind = kind_for_arrow(pa, typ)
    if kind is None:
        return False
    try:
        return np.dtype(kind.dtype()) == np.dtype(atom)
    except TypeError:
        return False


def kind_reader(pa, schema, names, candidates, read):
    """``read(batch, name)`` of an Arrow source's blocks, giving the Arrow buffers
    of each column of ``candidates`` (the columns made of a dtype object or
    nullable) whose type a column kind encodes as it is, and ``read``'s
    numpy rows for the others."""
    coded = set()
    for name in names:
        if name in candidates:
            typ = schema.field(name).type
            kind = kind_for_arrow(pa, typ)
            if kind is not None and kind.accepts(pa, typ):
                coded.add(name)
    if not coded:
        return read
    return lambda batch, name: from_pyarrow(pa, batch.column(name)) if name in coded \
        else read(batch, name)

