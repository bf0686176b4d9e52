"""Arrow tables, Arrow IPC files (Feather v2) and Parquet files <-> carray/ctable.

pyarrow is an optional extra (``pip install bcolz_store[arrow]``), imported
only when these functions run.  Data travels column by column, in blocks of
whole chunks (never row by row, never through pandas); Parquet and IPC files
are written one row group (record batch) per block and read batch by batch,
so memory stays bounded by one block.

A carray travels as a table with one column ``data``.  Each column maps as::

    numpy (bcolz column)        Arrow                              read back
    bool, int*, uint*, f2/f4/f8 the same type                      the same
    M8[s|ms|us|ns]              timestamp[unit], NaT -> null        the same
    M8[D]                       date32, NaT -> null                 the same
    m8[s|ms|us|ns]              duration[unit], NaT -> null         the same
    other M8/m8 units           int64 counts, NaT -> null           the same *
    S<n>                        binary                              S<n> *
    U<n>                        string (utf8)                       U<n> *
    complex, longdouble, other  fixed_size_binary[itemsize], raw    the same *
    rows of shape (a, b)        fixed_size_list<fixed_size_list<T>[b]>[a]
    object                      refused (TypeError)

\\* restored from the metadata below; other readers see the Arrow type.
:func:`arrow_type` and :func:`numpy_atom` are the one place each way where
a column's type is decided (a new column kind is added there).

Metadata: the schema metadata key ``b"bcolz_store"`` holds one JSON object::

    {"version": 1, "kind": "ctable" | "carray", "attrs": {...},
     "columns": {"<name>": {"dtype": "<numpy descr>", "attrs": {...}}}}

Arrow data that bcolz cannot hold is refused, never cut: nulls (except in
float columns, where they become NaN, and temporal ones, where they become
NaT), strings or bytes that a fixed width would cut (bytes ending in NUL),
and types with no bcolz column kind (decimal, variable-length list, struct,
map, union).  Timezone-aware timestamps are kept as UTC, with the zone in the
column's attrs under ``timezone``.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import NamedTuple

import numpy as np

from ..errors import DatasetExistsError, DatasetNotFoundError, FormatError
from ._common import (BLOCK_BYTES, Sink, atom_of, block_rows, column_attrs, columns_of,
                      kind_of, local_path, progress_bar, require, row_blocks)

__all__ = ["META_KEY", "ColumnType", "arrow_type", "from_arrow", "from_feather", "from_parquet",
           "numpy_atom", "to_arrow", "to_feather", "to_parquet"]

META_KEY = b"bcolz_store"
META_VERSION = 1
READ_BLOCK_ROWS = 65536
_ARROW_TIME_UNITS = ("s", "ms", "us", "ns")
_NAT = np.iinfo(np.int64).min
_INT32 = np.iinfo(np.int32)


def _pa():
    return require("pyarrow", "arrow", "Arrow and Parquet conversions")


def _pq():
    _pa()
    return require("pyarrow.parquet", "arrow", "Parquet conversions")


# --- numpy -> Arrow -----------------------------------------------------------------

def _flat_to_arrow(pa, values: np.ndarray):
    """One-dimensional numpy values as an Arrow array (see the module's table)."""
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
            return pa.array(ints, mask=mask, type=pa.timestamp(unit) if kind == "M"
                            else pa.duration(unit))
        if count == 1 and unit == "D" and kind == "M":
            days = np.where(mask, 0, ints)
            if len(days) and (days.min() < _INT32.min or days.max() > _INT32.max):
                raise ValueError("dates beyond the range of Arrow's date32")
            return pa.array(days.astype(np.int32), mask=mask, type=pa.date32())
        return pa.array(ints, mask=mask, type=pa.int64())
    if kind == "S":
        return pa.array(values, type=pa.binary())
    if kind == "U":
        return pa.array(values, type=pa.string())
    raw = np.ascontiguousarray(values).tobytes()
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(dtype.itemsize), len(values),
                                                [None, pa.py_buffer(raw)])


def _to_arrow(pa, block: np.ndarray, name: str):
    """A block of rows (shape (n, *atom)) as an Arrow array of fixed-size lists."""
    try:
        arr = _flat_to_arrow(pa, block.reshape(-1))
    except (TypeError, ValueError) as err:
        raise type(err)(f"column {name!r}: {err}") from None
    for size in reversed(block.shape[1:]):
        arr = pa.FixedSizeListArray.from_arrays(arr, size)
    return arr


def arrow_type(atom):
    """The Arrow type of a column whose rows are ``atom``.

    Parameters
    ----------
    atom : numpy.dtype
        The column's dtype, with the shape of one row as a subarray shape.

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
    pa = _pa()
    atom = np.dtype(atom)
    return _to_arrow(pa, np.empty((0,) + atom.shape, atom.base), "?").type


def _metadata(obj) -> dict:
    colattrs = column_attrs(obj)
    columns = {}
    for name, col in columns_of(obj):
        entry = {"dtype": np.lib.format.dtype_to_descr(col.dtype)}
        if name in colattrs:
            entry["attrs"] = colattrs[name]
        columns[name] = entry
    meta = {"version": META_VERSION, "kind": kind_of(obj), "attrs": obj.attrs.getall(),
            "columns": columns}
    return {META_KEY: json.dumps(meta).encode()}


def _schema(pa, obj):
    fields = [pa.field(name, arrow_type(atom_of(col))) for name, col in columns_of(obj)]
    return pa.schema(fields, metadata=_metadata(obj))


def _record_batches(pa, obj, schema, blen: int, bar):
    names = [name for name, _ in columns_of(obj)]
    for blocks in row_blocks(obj, blen):
        arrays = [_to_arrow(pa, block, name) for name, block in zip(names, blocks)]
        yield pa.record_batch(arrays, schema=schema)
        bar.update(len(blocks[0]))


def to_arrow(obj, *, progress=None):
    """A pyarrow Table holding a carray or ctable, built column by column.

    Parameters
    ----------
    obj : carray or ctable
        A carray becomes one column ``data``.
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).

    Returns
    -------
    pyarrow.Table
        One Arrow chunk per block of whole bcolz chunks; the schema metadata
        ``b"bcolz_store"`` holds kind, attrs, and each column's numpy dtype
        and attrs (JSON).

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    TypeError
        For object columns, or ``obj`` not a carray/ctable.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    """
    pa = _pa()
    schema = _schema(pa, obj)
    blen = block_rows(obj)
    columns = []
    with progress_bar(progress, len(obj) * len(schema), "to arrow") as bar:
        for (name, col), field in zip(columns_of(obj), schema):
            chunks = []
            for block in col.iterblocks_(blen):
                chunks.append(_to_arrow(pa, block, name))
                bar.update(len(block))
            columns.append(pa.chunked_array(chunks, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)


@contextlib.contextmanager
def _output(pa, path, overwrite: bool):
    """A writable Arrow stream at a local path or URL; a partial local file is
    removed on failure."""
    local = local_path(path)
    if local is None:
        fs, inner = pa.fs.FileSystem.from_uri(path)
        if fs.get_file_info(inner).type != pa.fs.FileType.NotFound and not overwrite:
            raise DatasetExistsError(f"{path}: exists; pass overwrite=True to replace it")
        with fs.open_output_stream(inner) as sink:
            yield sink
        return
    if os.path.lexists(local) and not overwrite:
        raise DatasetExistsError(f"{local}: exists; pass overwrite=True to replace it")
    try:
        with pa.OSFile(os.fspath(local), "wb") as sink:
            yield sink
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(local)
        raise


def to_parquet(obj, path, *, overwrite=False, row_group_size=None, progress=None,
               **parquet_kwargs):
    """Write a carray or ctable to a Parquet file, one row group per block.

    Parameters
    ----------
    obj : carray or ctable
    path : str or os.PathLike
        A local path, or a URL that ``pyarrow.fs`` can write.
    overwrite : bool, default False
        Replace an existing file.
    row_group_size : int, optional
        Rows per row group (default: about 16 MiB of data, whole chunks).
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).
    **parquet_kwargs
        Passed to ``pyarrow.parquet.ParquetWriter`` (``compression``...).

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For object columns.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    OSError
        When the file cannot be written.

    Notes
    -----
    Parquet has no seconds unit for timestamps: pyarrow stores M8[s] as
    milliseconds; :func:`from_parquet` restores seconds from the metadata.
    """
    pa, pq = _pa(), _pq()
    schema = _schema(pa, obj)
    blen = int(row_group_size or block_rows(obj))
    with _output(pa, path, overwrite) as sink, \
            pq.ParquetWriter(sink, schema, **parquet_kwargs) as writer, \
            progress_bar(progress, len(obj), "to parquet") as bar:
        for batch in _record_batches(pa, obj, schema, blen, bar):
            writer.write_batch(batch, row_group_size=blen)


def to_feather(obj, path, *, overwrite=False, compression=None, progress=None):
    """Write a carray or ctable to an Arrow IPC file (Feather v2), batch by batch.

    Parameters
    ----------
    obj : carray or ctable
    path : str or os.PathLike
        A local path, or a URL that ``pyarrow.fs`` can write.
    overwrite : bool, default False
        Replace an existing file.
    compression : {None, 'lz4', 'zstd'}, default None
        Buffer compression (None keeps the file memory-mappable).
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For object columns.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    OSError
        When the file cannot be written.
    """
    pa = _pa()
    schema = _schema(pa, obj)
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with _output(pa, path, overwrite) as sink, \
            pa.ipc.new_file(sink, schema, options=options) as writer, \
            progress_bar(progress, len(obj), "to arrow") as bar:
        for batch in _record_batches(pa, obj, schema, block_rows(obj), bar):
            writer.write_batch(batch)


# --- Arrow -> numpy -----------------------------------------------------------------

def _read_meta(schema, where: str) -> dict:
    raw = (schema.metadata or {}).get(META_KEY)
    if raw is None:
        return {}
    try:
        meta = json.loads(raw)
        if not isinstance(meta, dict) or not isinstance(meta.get("columns", {}), dict) \
                or not isinstance(meta.get("attrs", {}), dict):
            raise ValueError("expected a JSON object with 'columns' and 'attrs' objects")
    except ValueError as err:
        raise FormatError(f"{where}: malformed {META_KEY.decode()} schema metadata: {err}") \
            from err
    return meta


def _tuples(descr):
    return tuple(_tuples(d) for d in descr) if isinstance(descr, list) else descr


def _recorded(meta: dict, name: str, where: str):
    entry = meta.get("columns", {}).get(name)
    if not isinstance(entry, dict) or "dtype" not in entry:
        return None
    descr = entry["dtype"]
    try:
        dtype = np.lib.format.descr_to_dtype(list(_tuples(descr)) if isinstance(descr, list)
                                             else descr)
    except (TypeError, ValueError) as err:
        raise FormatError(f"{where}: column {name!r}: bad recorded dtype {descr!r}") from err
    if dtype.hasobject:
        raise FormatError(f"{where}: column {name!r}: recorded dtype {descr!r} holds objects")
    return dtype


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
    if _is(pa, typ, "duration"):
        return np.dtype(f"m8[{typ.unit}]")
    if _is(pa, typ, "string", "large_string", "string_view"):
        return np.dtype("U1")       # the width comes from a scan of the data
    if _is(pa, typ, "binary", "large_binary", "binary_view"):
        return np.dtype("S1")
    if _is(pa, typ, "fixed_size_binary"):
        return np.dtype(f"S{typ.byte_width}")
    raise TypeError(f"column {name!r}: Arrow type {typ} has no bcolz column kind (decimal, "
                    f"variable-length list, struct, map and union are refused); cast it first")


def _fits(pa, typ, recorded: np.dtype) -> bool:
    """Whether Arrow values of ``typ`` can be what ``recorded`` says they were."""
    kind = recorded.kind
    if kind == "M":
        return _is(pa, typ, "timestamp", "date32", "date64", "int64")
    if kind == "m":
        return _is(pa, typ, "duration", "int64")
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


def numpy_atom(typ, recorded=None, name="?") -> ColumnType:
    """The numpy atom of a column of Arrow type ``typ``.

    Parameters
    ----------
    typ : pyarrow.DataType
    recorded : numpy.dtype, optional
        The dtype recorded in bcolz_store's metadata; used when ``typ`` can
        hold it.
    name : str
        The column's name, for messages.

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
    pa = _pa()
    shape = []
    while _is(pa, typ, "fixed_size_list"):
        shape.append(typ.list_size)
        typ = typ.value_type
    if _is(pa, typ, "dictionary"):
        typ = typ.value_type
    extra, scan = {}, False
    if recorded is not None and _fits(pa, typ, recorded):
        base = recorded
    else:
        base = _default_base(pa, typ, name)
        scan = not _is(pa, typ, "fixed_size_binary") and base.kind in "SU"
        if _is(pa, typ, "timestamp") and typ.tz:
            extra["timezone"] = typ.tz
    return ColumnType(np.dtype((base, tuple(shape))) if shape else base, scan, extra)


def _refuse_nulls(arr, name: str) -> None:
    if arr.null_count:
        raise ValueError(f"column {name!r} has {arr.null_count} nulls; bcolz columns have no "
                         f"missing values (only float columns take them, as NaN)")


def _flatten(pa, arr, shape, name: str):
    for size in shape:
        _refuse_nulls(arr, name)
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
        _refuse_nulls(arr, name)
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


def _block_from_arrow(pa, arr, atom: np.dtype, name: str) -> np.ndarray:
    n = len(arr)
    flat = _flatten(pa, arr, atom.shape, name)
    return _flat_from_arrow(pa, flat, atom.base, name).reshape((n,) + atom.shape)


def _sliced(batches, blen: int):
    for batch in batches:
        for start in range(0, batch.num_rows, blen):
            yield batch.slice(start, blen)


def _read(pa, schema, batches, where, rootdir, mode, kind, columns, nrows, progress, kwargs):
    """Build a carray/ctable from ``batches(names, blen)``, record batches of at
    most ``blen`` rows; called twice when string columns need a width scan."""
    meta = _read_meta(schema, where)
    names = list(columns) if columns is not None else list(schema.names)
    atoms, col_attrs, unsized = {}, {}, []
    for name in names:
        column = numpy_atom(schema.field(name).type, _recorded(meta, name, where), name)
        atoms[name] = column.atom
        if column.scan:
            unsized.append(name)
        entry = meta.get("columns", {}).get(name)
        recorded_attrs = entry.get("attrs") if isinstance(entry, dict) else None
        attrs = {**(recorded_attrs if isinstance(recorded_attrs, dict) else {}), **column.attrs}
        if attrs:
            col_attrs[name] = attrs
    if unsized:
        widths = dict.fromkeys(unsized, 1)
        for batch in batches(unsized, READ_BLOCK_ROWS):
            for name in unsized:
                flat = _flatten(pa, batch.column(name), atoms[name].shape, name)
                _refuse_nulls(flat, name)
                lengths = _strings(pa, flat)[1].to_numpy(zero_copy_only=False)
                widths[name] = max(widths[name], int(lengths.max(initial=0)))
        for name in unsized:
            atom = atoms[name]
            atoms[name] = np.dtype((np.dtype(f"{atom.base.kind}{widths[name]}"), atom.shape))
    if kind is None:
        kind = "carray" if meta.get("kind") == "carray" and len(names) == 1 else "ctable"
    attrs = meta.get("attrs") or {}
    if kind == "carray":
        attrs = {**attrs, **col_attrs.pop(names[0], {})}
    blen = max(1, BLOCK_BYTES // max(sum(atom.itemsize for atom in atoms.values()), 1))
    with Sink(kind, atoms, rootdir, mode, expectedlen=nrows, **kwargs) as sink, \
            progress_bar(progress, nrows, f"from {os.path.basename(where)}") as bar:
        for batch in batches(names, blen):
            sink.append([_block_from_arrow(pa, batch.column(name), atoms[name], name)
                         for name in names])
            bar.update(batch.num_rows)
        return sink.finish(attrs, col_attrs)


def from_arrow(arrow_table, rootdir=None, mode="w", *, kind=None, columns=None,
               progress=None, **ctable_kwargs):
    """A ctable (or carray) holding a pyarrow Table.

    Parameters
    ----------
    arrow_table : pyarrow.Table or pyarrow.RecordBatch
    rootdir : str or os.PathLike, optional
        Where to store it (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    kind : {None, 'ctable', 'carray'}, default None
        None: a carray when the metadata records one, else a ctable.
    columns : list of str, optional
        Columns to take, in this order (default all; an unknown name raises
        KeyError).
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).
    **ctable_kwargs
        Other ctable/carray parameters (``cparams``, ``chunklen``,
        ``expectedlen``...).

    Returns
    -------
    ctable or carray
        Dtypes, attrs and column attrs as recorded by :func:`to_arrow`; for
        other tables, see the module's table.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    TypeError
        Arrow types with no bcolz column kind.
    ValueError
        Nulls outside float/temporal columns, values a fixed width would cut,
        column names that are not identifiers, a bad ``mode`` or ``kind``.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    FormatError
        Malformed bcolz_store metadata.
    """
    pa = _pa()
    if isinstance(arrow_table, pa.RecordBatch):
        arrow_table = pa.Table.from_batches([arrow_table])

    def batches(names, blen):
        return arrow_table.select(names).to_batches(max_chunksize=blen)

    return _read(pa, arrow_table.schema, batches, "Arrow table", rootdir, mode, kind, columns,
                 arrow_table.num_rows, progress, ctable_kwargs)


@contextlib.contextmanager
def _input(pa, path):
    """A random-access Arrow file at a local path or URL."""
    local = local_path(path)
    if local is None:
        fs, inner = pa.fs.FileSystem.from_uri(path)
        with fs.open_input_file(inner) as source:
            yield source
        return
    if not local.is_file():
        raise DatasetNotFoundError(f"{local}: no such file")
    with pa.memory_map(os.fspath(local), "r") as source:
        yield source


def _format_errors(pa, where, batches):
    """``batches`` with pyarrow's complaints about the file as FormatError."""
    def wrapped(names, blen):
        try:
            yield from batches(names, blen)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise FormatError(f"{where}: {err}") from err
    return wrapped


def from_parquet(path, rootdir=None, mode="w", *, kind=None, columns=None,
                 batch_size=READ_BLOCK_ROWS, progress=None, **ctable_kwargs):
    """A ctable (or carray) holding a Parquet file, read batch by batch.

    Parameters
    ----------
    path : str or os.PathLike
        A local path, or a URL that ``pyarrow.fs`` can open.
    rootdir, mode, kind, columns, progress, **ctable_kwargs
        As :func:`from_arrow`.
    batch_size : int, default 65536
        Most rows read and appended at a time (fewer when rows are wide, so
        that a batch holds about 16 MiB); memory stays bounded by one batch.

    Returns
    -------
    ctable or carray

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    DatasetNotFoundError
        When a local ``path`` does not exist.
    FormatError
        When ``path`` is not a Parquet file, or its metadata is malformed.
    TypeError, ValueError, DatasetExistsError
        As :func:`from_arrow`; nothing is left at ``rootdir`` then.
    """
    pa, pq = _pa(), _pq()
    where = str(path)
    with _input(pa, path) as source:
        try:
            pf = pq.ParquetFile(source)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise FormatError(f"{where}: not a readable Parquet file: {err}") from err

        def batches(names, blen):
            return pf.iter_batches(batch_size=min(batch_size, blen), columns=names)

        return _read(pa, pf.schema_arrow, _format_errors(pa, where, batches), where, rootdir,
                     mode, kind, columns, pf.metadata.num_rows, progress, ctable_kwargs)


def from_feather(path, rootdir=None, mode="w", *, kind=None, columns=None, progress=None,
                 **ctable_kwargs):
    """A ctable (or carray) holding an Arrow IPC file (Feather v2) or stream.

    Parameters
    ----------
    path : str or os.PathLike
        A local path (memory-mapped), or a URL that ``pyarrow.fs`` can open.
    rootdir, mode, kind, columns, progress, **ctable_kwargs
        As :func:`from_arrow`.

    Returns
    -------
    ctable or carray

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install bcolz_store[arrow]``).
    DatasetNotFoundError
        When a local ``path`` does not exist.
    FormatError
        When ``path`` is neither an Arrow IPC file nor stream (Feather v1
        files included), or its metadata is malformed.
    TypeError, ValueError, DatasetExistsError
        As :func:`from_arrow`; nothing is left at ``rootdir`` then.
    """
    pa = _pa()
    where = str(path)
    with _input(pa, path) as source:
        try:
            reader = pa.ipc.open_file(source)
            count = reader.num_record_batches

            def batches(names, blen):
                whole = (reader.get_batch(i).select(names) for i in range(count))
                return _sliced(whole, blen)

            schema = reader.schema
            nrows = sum(reader.get_batch(i).num_rows for i in range(count))
        except pa.ArrowInvalid:
            try:
                source.seek(0)
                schema = pa.ipc.open_stream(source).schema
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise FormatError(f"{where}: not an Arrow IPC file or stream: {err}") from err
            nrows = None

            def batches(names, blen):
                source.seek(0)
                return _sliced((b.select(names) for b in pa.ipc.open_stream(source)), blen)

        return _read(pa, schema, _format_errors(pa, where, batches), where, rootdir, mode,
                     kind, columns, nrows, progress, ctable_kwargs)
