"""carrays and ctables as Arrow C streams, and Arrow C streams as carrays and ctables.

The Arrow PyCapsule interface
(https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html):
``ctable.__arrow_c_stream__`` streams record batches (a struct-typed stream),
``carray.__arrow_c_stream__`` arrays of its column type, one block of whole
chunks (about :data:`STREAM_BLOCK_BYTES` of all columns) at a time, each
block read when the consumer asks for it: a table is never held whole.  Each
column becomes Arrow as :func:`~bcolz_store.interop.arrow_types.to_arrow_array`
makes it (categoricals as dictionaries, zoned datetimes as zoned timestamps,
vlen columns as strings or binary, large ones only past
:data:`SMALL_VLEN_BYTES`), with the schema metadata of
:mod:`~bcolz_store.interop.arrow_meta`.

The other way, the carray and ctable constructors take any object exporting
``__arrow_c_stream__`` (a pyarrow Table or RecordBatchReader, a polars
DataFrame or Series, a DuckDB relation) or ``__arrow_c_array__`` (a pyarrow
RecordBatch or Array), read batch by batch (:func:`arrow_input`).

pyarrow is imported inside the functions (``pip install 'bcolz_store[arrow]'``).
"""

from __future__ import annotations

import itertools
import operator
from typing import NamedTuple

import numpy as np

from ..kinds.arrow import from_pyarrow
from ..kinds.base import kind_for_arrow, kind_for_dtype
from ..kinds.nullable.kind import NullableKind
from ..kinds.struct.types import struct
from ..kinds.vlen.types import vlen
from .arrow_capsule import array_stream_capsule
from .arrow_columns import (arrow_schema, arrow_types as _types, column_arrays, column_field,
                            kind_holds, kind_reader, record_batches)
from .arrow_fields import FIELD_ATTR, dump_field, recorded_field
from .columns import BLOCK_BYTES, as_arrow_source, block_rows, kind_of

__all__ = ["ArrowColumns", "ArrowInput", "STREAM_BLOCK_BYTES", "arrow_input", "export_schema",
           "export_stream", "field_records", "is_arrow_source", "table_types"]

STREAM_BLOCK_BYTES = BLOCK_BYTES     # uncompressed bytes of all columns per streamed batch
READ_BLOCK_ROWS = 65536


def _requested(pa, requested_schema, ours):
    """The type (or schema) a consumer asked for, or None when it is ours."""
    if requested_schema is None:
        return None
    if not (type(requested_schema).__name__ == "PyCapsule"):
        raise TypeError(f"requested_schema must be a PyCapsule of an ArrowSchema, not "
                        f"{type(requested_schema).__name__}")
    field = pa.Field._import_from_c_capsule(requested_schema)
    if not pa.types.is_struct(field.type):
        return field.type       # (a carray's items as plain arrays of that type)
    wanted = pa.schema(list(field.type), metadata=field.metadata)
    return None if wanted.equals(ours) else wanted


def export_stream(obj, requested_schema=None):
    """``__arrow_c_stream__`` of a carray or ctable.

    Parameters
    ----------
    obj : carray or ctable
    requested_schema : PyCapsule, optional
        An ArrowSchema capsule the consumer asks for: the stream's batches are
        cast to it; a carray asked for a type that is not a struct streams
        plain arrays of that type.

    Returns
    -------
    PyCapsule
        An ``"arrow_array_stream"`` of record batches: all columns of a
        ctable, the one column ``data`` of a carray (as DuckDB and
        ``pyarrow.table`` read a stream); one per block of whole chunks, each
        read when the consumer asks for it.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns, or a ``requested_schema`` that is not a capsule.
    ValueError
        When the columns cannot be cast to ``requested_schema`` (another
        number of fields, or a type pyarrow cannot cast to).
    """
    pa = _types().import_pyarrow()
    blen = block_rows(obj, STREAM_BLOCK_BYTES)
    schema = arrow_schema(pa, obj)      # (a carray's: one column, "data")
    wanted = _requested(pa, requested_schema, schema)
    if not isinstance(wanted, pa.DataType):
        reader = pa.RecordBatchReader.from_batches(schema, record_batches(pa, obj, schema, blen))
        try:
            return (reader if wanted is None else reader.cast(wanted)).__arrow_c_stream__()
        except (pa.ArrowException, ValueError) as err:
            raise ValueError(f"the {kind_of(obj)}'s columns cannot be cast to the requested "
                             f"schema: {err}") from None
    if kind_of(obj) == "ctable":
        raise ValueError(f"a ctable streams record batches; the requested schema is one "
                         f"{wanted} (not a struct)")
    typ = column_field(pa, "data", obj).type        # a carray's items as plain arrays
    arrays = column_arrays(pa, "data", obj, blen)
    if wanted is not None:
        try:
            pa.array([], type=typ).cast(wanted)
        except (pa.ArrowException, ValueError, TypeError) as err:
            raise ValueError(f"a carray of {typ} cannot be cast to the requested {wanted}: "
                             f"{err}") from None
        typ, arrays = wanted, (array.cast(wanted) for array in arrays)
    field = pa.field("", typ, metadata=_types().schema_metadata(obj))
    return array_stream_capsule(field._export_to_c, arrays)


def export_schema(obj):
    """``__arrow_c_schema__`` of a carray (a schema of its one column, ``data``)
    or ctable (its schema).

    Returns
    -------
    PyCapsule
        An ``"arrow_schema"``.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns.
    """
    pa = _types().import_pyarrow()
    return arrow_schema(pa, obj).__arrow_c_schema__()


# --- Arrow -> carray/ctable -----------------------------------------------------------

class ArrowColumns(NamedTuple):
    """What the columns of an Arrow schema become (see :func:`table_types`)."""

    atoms: dict         # name -> atom (S/U of width 1 while unsized)
    col_attrs: dict     # name -> column attrs (recorded and 'timezone')
    unsized: list       # S/U columns whose width must come from a scan of the data
    vlens: dict         # name -> vlen or category type


def _is_binary_view(pa, typ) -> bool:
    return getattr(pa.types, "is_binary_view", lambda t: False)(typ)


def _kind_dtype(pa, typ):
    """The numpy dtype of the column kind that takes the Arrow type ``typ``
    (:func:`~bcolz_store.kinds.base.kind_for_arrow`), when the kind's carrays
    are made of one (:meth:`~bcolz_store.kinds.base.ColumnKind.dtype`); else None.
    The nullable kind's types (numbers, bool, times) are left to
    :func:`~bcolz_store.interop.arrow_types.numpy_atom`, whose dtype it
    holds (and which gives a zoned timestamp its ``timezone`` attr)."""
    kind = kind_for_arrow(pa, typ)
    dtype = None if kind is None or isinstance(kind, NullableKind) else kind.dtype()
    return dtype if isinstance(dtype, np.dtype) else None


def _kind_column(pa, typ):
    """How a column of Arrow type ``typ`` becomes a carray of the column kind
    that takes it (:func:`~bcolz_store.kinds.base.kind_for_arrow`), made with
    the kind's dtype (:meth:`~bcolz_store.kinds.base.ColumnKind.dtype`); None
    when no kind takes it."""
    kind = kind_for_arrow(pa, typ)
    if kind is None:
        return None
    return _types().ColumnType(np.dtype(object), False, {}, kind.dtype())


def table_types(pa, schema, meta, names, strings, where, first=None) -> ArrowColumns:
    """How each named column of an Arrow schema becomes a bcolz column.

    Parameters
    ----------
    pa : module
        pyarrow.
    schema : pyarrow.Schema
    meta : dict
        Its bcolz_store metadata (:func:`read_metadata`).
    names : list of str
        The columns to take.
    strings : {'fixed', 'vlen'}
        Whether strings and binary with no recorded type become fixed-width
        (``S``/``U``, unsized until scanned) or vlen columns.
    where : str
        The source, for messages.
    first : callable, optional
        ``first(name)``: the column's first block (a pyarrow Array), for the
        categories of a dictionary column with no recorded category; None:
        such columns are read as their values.

    Returns
    -------
    ArrowColumns

    Raises
    ------
    TypeError
        Arrow types with no bcolz column kind.
    ValueError
        A dictionary whose values cannot be categories (repeats, nulls).
    FormatError
        Malformed recorded types.
    """
    atoms, col_attrs, unsized, vlens = {}, {}, [], {}
    for name in names:
        typ = schema.field(name).type
        given = _types().recorded_vlen(meta, name, where)
        if given is None and first is not None and pa.types.is_dictionary(typ):
            given = _types().dictionary_category(pa, typ, first(name), name)
        recorded = _types().recorded_dtype(meta, name, where)
        if given is None and recorded is None:      # a column kind made of a numpy dtype
            recorded = _kind_dtype(pa, typ)
        if given is None and strings == "vlen" and (recorded is None or
                                                    recorded.base.kind not in "SU"):
            given = vlen("bytes" if pa.types.is_binary(typ) or pa.types.is_large_binary(typ)
                         or _is_binary_view(pa, typ) else "str", nullable=True)
        try:
            column = _types().numpy_atom(typ, recorded, name, given, schema.field(name).nullable)
        except TypeError:
            column = _kind_column(pa, typ)       # a kind the Arrow converters do not name
            if column is None:
                raise
        if column.vlen is not None:
            vlens[name] = column.vlen
        if first is not None and isinstance(column.vlen, struct):    # categorical fields
            from ..kinds.struct.interop_arrow import struct_categories
            vlens[name] = struct_categories(pa, column.vlen, first(name))
        atoms[name] = column.atom
        if column.scan:
            unsized.append(name)
        entry = meta.get("columns", {}).get(name)
        recorded_attrs = entry.get("attrs") if isinstance(entry, dict) else None
        attrs = {**(recorded_attrs if isinstance(recorded_attrs, dict) else {}), **column.attrs}
        if attrs:
            col_attrs[name] = attrs
    return ArrowColumns(atoms, col_attrs, unsized, vlens)


def is_arrow_source(obj) -> bool:
    """Whether the constructors read ``obj`` as Arrow data: it exports
    ``__arrow_c_stream__`` or ``__arrow_c_array__`` and is neither a carray
    or ctable nor a numpy or pandas object (which keep their own paths)."""
    cls = type(obj)
    if not (hasattr(cls, "__arrow_c_stream__") or hasattr(cls, "__arrow_c_array__")):
        return False
    if isinstance(obj, np.ndarray) or cls.__module__.split(".")[0] in ("pandas", "bcolz_store"):
        return False
    return True


class ArrowInput(NamedTuple):
    """An Arrow source as the constructors build from it (see :func:`arrow_input`)."""

    names: list         # the columns, in order
    kind: str           # 'carray' for an array (or a recorded carray), else 'ctable'
    atoms: dict         # name -> atom of the numpy blocks (for vlen/category: the items')
    first: list         # the first block of each column (numpy arrays or object items)
    rest: object        # an iterator of the following blocks (lists, one per column)
    dtypes: dict        # name -> vlen or category type of those columns
    attrs: dict         # the recorded attrs of the table (or carray)
    col_attrs: dict     # name -> column attrs
    nrows: object       # the number of rows when known, else None
    fields: dict = {}   # name -> the source's Arrow field (see :func:`field_records`)


def _source(pa, obj, column: bool = False):
    """``(schema, iterator of RecordBatch, rows or None, carray)`` of an Arrow source;
    ``carray``: the source is an array (or a stream of arrays), one column ``data``.
    With ``column`` (a carray's source), a pyarrow StructArray or a polars
    Series of structs is one struct column, not a batch of its fields."""
    if column and isinstance(obj, (pa.Array, pa.ChunkedArray)) or column and (
            type(obj).__name__ == "Series" and type(obj).__module__.startswith("polars")):
        return _array_source(pa, pa.chunked_array(obj) if hasattr(
            type(obj), "__arrow_c_stream__") or isinstance(obj, pa.ChunkedArray)
            else pa.chunked_array([obj]))
    if hasattr(type(obj), "__arrow_c_stream__"):
        try:
            reader = pa.RecordBatchReader.from_stream(obj)
        except pa.ArrowInvalid as err:
            if "non-struct" not in str(err):
                raise
            # a stream of arrays (a polars Series, a ChunkedArray): imported as
            # a ChunkedArray, without copying what the producer holds in memory
            return _array_source(pa, pa.chunked_array(obj))
        return reader.schema, iter(reader), getattr(obj, "num_rows", None), False
    try:
        batch = pa.record_batch(obj)
        return batch.schema, iter([batch]), batch.num_rows, False
    except (TypeError, ValueError, pa.ArrowException):
        batch = pa.record_batch([pa.array(obj)], names=["data"])
        return batch.schema, iter([batch]), batch.num_rows, True


def _array_source(pa, column):
    """:func:`_source` of a ChunkedArray: one column ``data``."""
    schema = pa.schema([pa.field("data", column.type)])
    return (schema, (pa.record_batch([chunk], schema=schema) for chunk in column.chunks),
            len(column), True)


def _sliced(batches, blen: int):
    for batch in batches:
        for start in range(0, batch.num_rows, blen):
            yield batch.slice(start, blen)


def arrow_input(obj, names=None, where="Arrow stream", column: bool = False,
                kinds: bool = True) -> ArrowInput:
    """Read an Arrow source as the carray and ctable constructors build from it.

    Parameters
    ----------
    obj : object
        Exporting ``__arrow_c_stream__`` (record batches, or arrays for a
        carray) or ``__arrow_c_array__``.
    names : list of str, optional
        Columns to take, in this order (default all).
    where : str, default 'Arrow stream'
        The source, for messages.
    column : bool, default False
        The source of a carray: a pyarrow StructArray (or ChunkedArray of
        structs, a polars Series of structs) is one struct column.
    kinds : bool, default True
        Read the columns of a column kind as Arrow buffers (False: every
        column as numpy rows, for a carray made with another dtype).

    Returns
    -------
    ArrowInput
        The first block is read; the following ones are read as ``rest`` is
        drawn, one batch (at most about 16 MiB of numpy rows) at a time.
        Strings and binary with no recorded type become vlen columns (a
        stream is read once: a fixed width would need a scan of all of it
        first); a dictionary column with no recorded category becomes a
        categorical column whose categories are the first batch's dictionary,
        in its order, with its ``ordered``.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    KeyError
        An unknown name in ``names``.
    TypeError
        Arrow types with no bcolz column kind.
    ValueError
        Nulls outside float, temporal, vlen and categorical columns; numbers
        that do not fit; a later batch holding an item that is not one of a
        categorical column's categories (raised when that batch is read).
    FormatError
        Malformed bcolz_store schema metadata.
    """
    pa = _types().import_pyarrow()
    schema, batches, nrows, single = _source(pa, obj, column)
    meta = _types().read_metadata(schema, where)
    names = list(schema.names) if names is None else list(names)
    for name in names:
        schema.field(name)          # KeyError for an unknown name
    head = next(batches, None)
    types = table_types(pa, schema, meta, names, "vlen", where,
                        first=None if head is None else (lambda name: head.column(name)))
    if types.unsized:
        unsized = {name: types.atoms[name] for name in types.unsized}
        types.atoms.update(_types().sized_atoms(pa, unsized, [] if head is None else [head],
                                                where))
    atoms, vlens = types.atoms, types.vlens
    blen = max(1, BLOCK_BYTES // max(sum(atom.itemsize for atom in atoms.values()), 1))
    nulls = _nullable_columns(pa, obj, schema, meta, names, vlens, head)
    from ..kinds.nullable.interop_arrow import column_reader
    read = column_reader(pa, atoms, vlens, nulls, _types().from_arrow_array)
    if kinds:       # (columns of a kind's dtype object, nullable ones whose kind holds their dtype)
        read = kind_reader(pa, schema, names, set(vlens) | {
            name for name in nulls if atoms[name].kind not in "SU"
            and kind_holds(pa, schema.field(name).type, atoms[name])}, read)

    def blocks(batch):
        try:
            return [read(batch, name) for name in names]
        except ValueError as err:
            late = next((name for name in names if name not in nulls and name not in vlens
                         and not pa.types.is_fixed_size_list(schema.field(name).type)
                         and batch.column(name).null_count), None)
            if late is None:
                raise
            raise ValueError(f"column {late!r}: nulls first appear after the first batch of "
                             f"this stream, and the column was made without them; make the "
                             f"source a pyarrow Table first (pa.table(source)), whose nulls "
                             f"are counted before anything is written") from err

    if head is None:        # no batch: the columns recorded nullable are empty masked arrays
        first = [np.ma.MaskedArray(np.empty(0, dtype=atoms[name]), mask=np.zeros(0, bool))
                 if name in nulls else np.empty(0, dtype=atoms[name]) for name in names]
        rest = iter(())
    else:
        pieces = _sliced(_chain(head, batches), blen)
        piece = next(pieces, None)      # (None: every batch is empty)
        first = blocks(head if piece is None else piece)
        rest = (blocks(batch) for batch in pieces)
    kind = "carray" if len(names) == 1 and (single or meta.get("kind") == "carray") \
        else "ctable"
    return ArrowInput(names, kind, atoms, first, rest, vlens, meta.get("attrs") or {},
                      types.col_attrs, nrows, {name: schema.field(name) for name in names
                                               if name not in meta.get("columns", {})})


def field_records(fields: dict, columns) -> dict:
    """``{name: {FIELD_ATTR: text}}`` for each column whose source field
    (``fields[name]``, a pyarrow Field) is not the field it would be written
    as by default (its type, nullability or metadata differ), so that writing
    it to Arrow again gives the source's field (:mod:`.arrow_fields`).

    ``columns[name]`` is the column built from it; a column that already
    records a field (the source was written by this library) is left alone.
    """
    if not fields:
        return {}
    pa = _types().import_pyarrow()
    out = {}
    for name, field in fields.items():
        col = columns[name]
        if recorded_field(pa, col, name) is not None:
            continue
        try:
            default = column_field(pa, name, col)
        except (TypeError, ValueError):
            continue
        if not field.with_name(name).equals(default, check_metadata=True):
            out[name] = {FIELD_ATTR: dump_field(pa, field.with_name(name))}
    return out


def _nullable_columns(pa, obj, schema, meta, names, vlens, head) -> set:
    """The columns of an Arrow source that become nullable: recorded so, or (with
    no record) of a fixed type and holding nulls, in the whole source when it is
    a pyarrow Table (its null counts are known), else in its first batch."""
    def first(names_, blen):
        if isinstance(obj, pa.Table):
            return obj.select(names_).to_batches()
        return [] if head is None else [head.select(names_)]
    from ..kinds.nullable.interop_arrow import nullable_names
    return nullable_names(pa, schema, meta, names, vlens, first, 0)


def _chain(head, batches):
    yield head
    yield from batches


# --- what the classes call ------------------------------------------------------------

def carray_source(array, dtype):
    """``(array, dtype, rest, attrs)`` with which the carray constructor builds from ``array``.

    For an Arrow source (:func:`is_arrow_source`): its first block, the vlen
    or category type of its items (or ``dtype`` as given), an iterator of
    the following blocks, and the attrs to set (a zoned timestamp's
    ``timezone``, recorded attrs).  Anything else comes back as it is, with
    no following blocks.

    Raises
    ------
    ValueError
        An Arrow source of more than one column; see also :func:`arrow_input`.
    """
    if not is_arrow_source(array := as_arrow_source(array)):
        return _python_rows(array, dtype), dtype, (), {}
    source = arrow_input(array, column=True, kinds=dtype is None)
    if len(source.names) != 1:
        raise ValueError(f"a carray holds one column; this Arrow source has "
                         f"{len(source.names)}: {source.names} (make a ctable of it)")
    name = source.names[0]
    attrs = {**source.attrs, **source.col_attrs.get(name, {})}     # (as a carray's own)
    return source.first[0], dtype if dtype is not None else source.dtypes.get(name), \
        (blocks[0] for blocks in source.rest), attrs


def _python_rows(array, dtype):
    """``array`` as Arrow buffers built by pyarrow when it is a list of Python
    items holding None, given with the ``dtype`` a column kind's carrays are
    made of (:func:`~bcolz_store.kinds.base.kind_for_dtype`): no Python work
    per item here; else ``array`` as it is (pyarrow missing, or refusing an
    item: the numpy path then says what is wrong)."""
    if dtype is None or not isinstance(array, list):
        return array
    kind = kind_for_dtype(dtype)
    if kind is None or not any(map(operator.is_, array, itertools.repeat(None))):
        return array        # (identity only: an item's == may be elementwise)
    try:
        import pyarrow as pa
    except ImportError:
        return array
    try:
        return from_pyarrow(pa, pa.array(array, type=kind.arrow_type(pa)))
    except (TypeError, ValueError, OverflowError, pa.ArrowException):
        return array


def table_source(columns, names, kwargs):
    """``(columns, names, kwargs, source)`` with which the ctable constructor
    builds from ``columns``: for an Arrow source, the first block of each
    column, their names, ``kwargs`` with the vlen and category types as
    ``dtype`` (and ``expectedlen`` the length when known), and the
    :class:`ArrowInput`; else the arguments as they are and None.

    Raises
    ------
    ValueError
        A ``dtype`` given with an Arrow source; see also :func:`arrow_input`.
    """
    if not is_arrow_source(columns):
        return columns, names, kwargs, None
    if kwargs.get("dtype") is not None:
        raise ValueError("dtype cannot be given with an Arrow source (the Arrow types "
                         "decide the columns'; cast the source first)")
    source = arrow_input(columns, names)
    kwargs = dict(kwargs)
    if source.dtypes:
        kwargs["dtype"] = source.dtypes
    if kwargs.get("expectedlen") is None and source.nrows:
        kwargs["expectedlen"] = source.nrows
    return source.first, source.names, kwargs, source


def carray_stream(self, requested_schema=None):
    """This carray as an Arrow C stream of record batches of one column,
    ``data`` (the Arrow PyCapsule interface: ``pyarrow.table(c)``,
    ``polars.DataFrame(c)``, DuckDB's ``select ... from c``).

    Lazy, one batch per block of whole chunks, the column typed as
    ``ctable``'s columns are (docs/arrow.md).

    Parameters
    ----------
    requested_schema : PyCapsule, optional
        An ``"arrow_schema"`` capsule; the batches are cast to it, or, for a
        type that is not a struct (``pyarrow.chunked_array(c, type=...)``),
        the stream is of plain arrays of that type.

    Returns
    -------
    PyCapsule
        An ``"arrow_array_stream"``.

    Raises
    ------
    ImportError
        Without pyarrow (``pip install 'bcolz_store[arrow]'``).
    TypeError
        Object carrays; a ``requested_schema`` that is not a capsule.
    ValueError
        When the items cannot be cast to ``requested_schema``.
    """
    return export_stream(self, requested_schema)


def carray_schema(self):
    """An ``"arrow_schema"`` PyCapsule: the schema of its stream, one column
    ``data`` of this carray's Arrow type.

    Returns
    -------
    PyCapsule

    Raises
    ------
    ImportError
        Without pyarrow (``pip install 'bcolz_store[arrow]'``).
    TypeError
        Object carrays.
    """
    return export_schema(self)


def table_stream(self, requested_schema=None):
    """This ctable as an Arrow C stream (the Arrow PyCapsule interface).

    A stream of record batches of all columns: ``pyarrow.table(t)``,
    ``polars.DataFrame(t)``, and DuckDB's queries naming ``t`` read it.
    The stream is lazy: one batch per block of whole chunks (about 16 MiB
    of all columns), each read and converted when the consumer asks for it,
    so a table larger than memory streams in bounded memory.  Columns
    become Arrow as :func:`bcolz_store.converters.arrow.to_arrow` makes
    them: numbers, bools and temporal types as themselves (an ``M8``
    column with a ``timezone`` attr as a zoned timestamp), vlen columns as
    large strings or binary (missing items as nulls), categorical columns
    as dictionaries (the categories as the dictionary, the codes' int type
    as the indices, ``ordered`` kept), with bcolz_store's schema metadata
    (docs/arrow.md).

    Parameters
    ----------
    requested_schema : PyCapsule, optional
        An ``"arrow_schema"`` capsule the consumer asks for; the batches are
        cast to it when it differs.

    Returns
    -------
    PyCapsule
        An ``"arrow_array_stream"``.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns, or a ``requested_schema`` that is not a capsule.
    ValueError
        When the columns cannot be cast to ``requested_schema``.
    """
    return export_stream(self, requested_schema)


def table_schema(self):
    """The Arrow schema of this ctable (the Arrow PyCapsule interface).

    Returns
    -------
    PyCapsule
        An ``"arrow_schema"``: the table's schema (a struct of its
        columns), with bcolz_store's schema metadata.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns.
    """
    return export_schema(self)
