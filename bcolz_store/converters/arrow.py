"""Arrow tables, Arrow IPC files (Feather v2) and Parquet files <-> carray/ctable.

pyarrow is an optional extra (``pip install 'bcolz_store[arrow]'``), imported
only when these functions run.  Data travels column by column, in blocks of
whole chunks (never row by row, never through pandas); Parquet and IPC files
are written one row group (record batch) per block and read batch by batch,
so memory stays bounded by one block.

A carray travels as a table with one column ``data``.  Each column keeps its
numpy dtype: as Arrow's own type where Arrow has one (bool, numbers,
timestamps, durations, dates, strings, binary), else as int64 counts or raw
fixed-size binary, rows that are arrays as fixed-size lists, with the exact
dtype, the kind and the attrs recorded in the schema metadata
(``b"bcolz_store"``).  Object columns are refused.  The mapping each way and
the metadata are drawn in :mod:`bcolz_store.interop.arrow_types`.

What a column cannot hold is refused, never cut (docs/converting.md, "Data
from elsewhere"); nulls become missing items of nullable, vlen and list
columns; zoned timestamps keep their zone (the column attr ``timezone``).
"""

from __future__ import annotations

import contextlib
import itertools
import os

import numpy as np

from ..errors import DatasetExistsError, DatasetNotFoundError, FormatError
from ..kinds.vlen.meta import vlen_result_dtype
from ..interop.arrow_columns import arrow_schema, column_arrays, kind_reader, record_batches
from ..interop.arrow_stream import arrow_input, field_records, table_types
from ..interop.columns import BLOCK_BYTES, block_rows, columns_of
from ..kinds.vlen.types import vlen
from ._common import Sink, destination_kwargs, local_path, progress_bar
from .base import Converter, register_converter, require
from ..kinds.nullable.interop_arrow import column_reader, nullable_names
from ..interop.arrow_types import (META_KEY, ColumnType, arrow_type, from_arrow_array, import_pyarrow,
                          numpy_atom, read_metadata, sized_atoms)

__all__ = ["ArrowConverter", "ColumnType", "META_KEY", "ParquetConverter", "arrow_type", "from_arrow",
           "from_feather", "from_parquet", "numpy_atom", "to_arrow", "to_feather", "to_parquet"]

READ_BLOCK_ROWS = 65536


def _pq():
    import_pyarrow()
    return require("pyarrow.parquet", "arrow", "Parquet conversions")


# --- carray/ctable -> Arrow -----------------------------------------------------------

def _schema(pa, obj):
    return arrow_schema(pa, obj)


def _record_batches(pa, obj, schema, blen: int, bar):
    return record_batches(pa, obj, schema, blen, bar.update)


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
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        For object columns, or ``obj`` not a carray/ctable.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    """
    pa = import_pyarrow()
    schema = _schema(pa, obj)
    blen = block_rows(obj)
    columns = []
    with progress_bar(progress, len(obj) * len(schema), "to arrow") as bar:
        for (name, col), field in zip(columns_of(obj), schema):
            chunks = list(column_arrays(pa, name, col, blen, bar.update))
            columns.append(pa.chunked_array(chunks, type=field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def _fsspec(path, storage_options):
    """``(filesystem, path inside it)`` of a URL through fsspec, with ``storage_options``."""
    fsspec = require("fsspec", "s3", "URLs with storage_options")
    return fsspec.core.url_to_fs(path, **storage_options)


@contextlib.contextmanager
def _fsspec_output(pa, path, overwrite: bool, storage_options):
    fs, inner = _fsspec(path, storage_options)
    existed = fs.exists(inner)
    if existed and not overwrite:
        raise DatasetExistsError(f"{path}: exists; pass overwrite=True to replace it")
    handle = fs.open(inner, "wb")
    try:
        with pa.PythonFile(handle, mode="w") as sink:
            yield sink
    except BaseException:
        with contextlib.suppress(Exception):
            handle.discard()                # nothing of a failed write is uploaded
        with contextlib.suppress(Exception):
            handle.close()
        if not existed:
            with contextlib.suppress(Exception):
                fs.rm(inner)
        raise
    handle.close()


@contextlib.contextmanager
def _output(pa, path, overwrite: bool, storage_options=None):
    """A writable Arrow stream at a local path or URL (through fsspec when
    ``storage_options`` are given, else ``pyarrow.fs``); a partial file is
    removed on failure."""
    local = local_path(path)
    if local is None and storage_options is not None:
        with _fsspec_output(pa, path, overwrite, storage_options) as sink:
            yield sink
        return
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
               storage_options=None, **parquet_kwargs):
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
    storage_options : dict, optional
        fsspec options for a URL (credentials, endpoint...); a URL is then
        written through fsspec rather than ``pyarrow.fs``.
    **parquet_kwargs
        Passed to ``pyarrow.parquet.ParquetWriter`` (``compression``...).

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
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
    pa, pq = import_pyarrow(), _pq()
    schema = _schema(pa, obj)
    blen = int(row_group_size or block_rows(obj))
    with _output(pa, path, overwrite, storage_options) as sink, \
            pq.ParquetWriter(sink, schema, **parquet_kwargs) as writer, \
            progress_bar(progress, len(obj), "to parquet") as bar:
        for batch in _record_batches(pa, obj, schema, blen, bar):
            writer.write_batch(batch, row_group_size=blen)


def to_feather(obj, path, *, overwrite=False, compression=None, progress=None,
               storage_options=None):
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
    storage_options : dict, optional
        fsspec options for a URL, as :func:`to_parquet`.

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For object columns.
    ValueError
        For datetime64[D] values outside Arrow's date32 range.
    OSError
        When the file cannot be written.
    """
    pa = import_pyarrow()
    schema = _schema(pa, obj)
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with _output(pa, path, overwrite, storage_options) as sink, \
            pa.ipc.new_file(sink, schema, options=options) as writer, \
            progress_bar(progress, len(obj), "to arrow") as bar:
        for batch in _record_batches(pa, obj, schema, block_rows(obj), bar):
            writer.write_batch(batch)


# --- Arrow -> carray/ctable -----------------------------------------------------------

def _sliced(batches, blen: int):
    for batch in batches:
        for start in range(0, batch.num_rows, blen):
            yield batch.slice(start, blen)


def _read(pa, schema, batches, where, rootdir, mode, kind, columns, nrows, progress, kwargs):
    """Build a carray/ctable from ``batches(names, blen)``, record batches of at
    most ``blen`` rows; called twice when string columns need a width scan."""
    try:
        present = list(schema.names)
        for field in schema:
            str(field.type)
    except (UnicodeDecodeError, pa.ArrowException) as err:
        raise FormatError(f"{where}: malformed schema: {err}") from None
    meta = read_metadata(schema, where)
    names = list(columns) if columns is not None else present
    strings = kwargs.pop("strings", "fixed")
    if strings not in ("fixed", "vlen"):
        raise ValueError(f"strings must be 'fixed' or 'vlen', not {strings!r}")

    def first(name):        # the first block of a dictionary column: the categories
        head = next(iter(batches([name], READ_BLOCK_ROWS)), None)
        return pa.array([], type=schema.field(name).type) if head is None else head.column(0)

    atoms, col_attrs, unsized, vlens = table_types(pa, schema, meta, names, strings, where,
                                                   first)
    if unsized:
        with_nulls = set()
        atoms.update(sized_atoms(pa, {name: atoms[name] for name in unsized},
                                 batches(unsized, READ_BLOCK_ROWS), where, with_nulls))
        for name in with_nulls:     # a fixed width has no missing item: vlen keeps them
            vlens[name] = vlen("str" if atoms[name].kind == "U" else "bytes", nullable=True)
            atoms[name] = vlen_result_dtype(vlens[name].kind, True)
    if kind is None:
        kind = "carray" if meta.get("kind") == "carray" and len(names) == 1 else "ctable"
    attrs = meta.get("attrs") or {}
    if kind == "carray":
        attrs = {**attrs, **col_attrs.pop(names[0], {})}
    blen = max(1, BLOCK_BYTES // max(sum(atom.itemsize for atom in atoms.values()), 1))
    nulls = nullable_names(pa, schema, meta, names, vlens, batches, blen)
    column = column_reader(pa, atoms, vlens, nulls, from_arrow_array)
    own = {name for name, dtype in vlens.items() if isinstance(dtype, str)}  # (a kind's own)
    column = kind_reader(pa, schema, names, own, column)
    with Sink(kind, atoms, rootdir, mode, expectedlen=nrows, dtypes=vlens, nullable=nulls,
              **kwargs) as sink, \
            progress_bar(progress, nrows, f"from {os.path.basename(where)}") as bar:
        for batch in batches(names, blen):
            sink.append([column(batch, name) for name in names])
            bar.update(batch.num_rows)
        obj = sink.finish(attrs, col_attrs)
    # the Arrow fields the columns would not be written back as (once their attrs are set)
    described = meta.get("columns", {})         # columns this library wrote: none to record
    fields = {name: schema.field(name) for name in names if name not in described}
    records = field_records(fields, {names[0]: obj} if kind == "carray" else obj.cols)
    for name, values in records.items():
        (obj if kind == "carray" else obj.cols[name]).attrs.update(values)
    if records:
        obj.flush()
    return obj


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
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    TypeError
        Arrow types with no bcolz column kind.
    ValueError
        Nulls outside float/temporal columns, values a fixed width would cut,
        repeated column names, a bad ``mode`` or ``kind``.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    FormatError
        Malformed bcolz_store metadata.
    """
    pa = import_pyarrow()
    if not isinstance(arrow_table, (pa.Table, pa.RecordBatch)):
        if ctable_kwargs.get("strings", "vlen") != "fixed":
            return _from_source(pa, arrow_table, rootdir, mode, kind, columns, progress,
                                ctable_kwargs)
        arrow_table = pa.table(arrow_table)     # a fixed width needs a scan of all the data
    if isinstance(arrow_table, pa.RecordBatch):
        arrow_table = pa.Table.from_batches([arrow_table])
    arrow_table = arrow_table.unify_dictionaries()      # one set of categories per column

    def batches(names, blen):
        return arrow_table.select(names).to_batches(max_chunksize=blen)

    return _read(pa, arrow_table.schema, batches, "Arrow table", rootdir, mode, kind, columns,
                 arrow_table.num_rows, progress, ctable_kwargs)


def _from_source(pa, obj, rootdir, mode, kind, columns, progress, kwargs):
    """:func:`from_arrow` of an object exporting ``__arrow_c_stream__`` or
    ``__arrow_c_array__``, read once, batch by batch (see
    :func:`~bcolz_store.interop.arrow_stream.arrow_input`)."""
    kwargs.pop("strings", None)
    source = arrow_input(obj, columns)
    kind = source.kind if kind is None else kind
    attrs, col_attrs = source.attrs, dict(source.col_attrs)
    if kind == "carray":
        attrs = {**attrs, **col_attrs.pop(source.names[0], {})}
    with Sink(kind, source.atoms, rootdir, mode, expectedlen=source.nrows,
              dtypes=source.dtypes, **kwargs) as sink, \
            progress_bar(progress, source.nrows, "from Arrow stream") as bar:
        for blocks in itertools.chain([source.first], source.rest):
            sink.append(blocks)
            bar.update(len(blocks[0]))
        return sink.finish(attrs, col_attrs)


@contextlib.contextmanager
def _input(pa, path, storage_options=None):
    """A random-access Arrow file at a local path or URL (through fsspec when
    ``storage_options`` are given, else ``pyarrow.fs``)."""
    local = local_path(path)
    if local is None and storage_options is not None:
        fs, inner = _fsspec(path, storage_options)
        if not fs.isfile(inner):
            raise DatasetNotFoundError(f"{path}: no such file")
        with fs.open(inner, "rb") as handle, pa.PythonFile(handle, mode="r") as source:
            yield source
        return
    if local is None:
        fs, inner = pa.fs.FileSystem.from_uri(path)
        with fs.open_input_file(inner) as source:
            yield source
        return
    if not local.is_file():
        raise DatasetNotFoundError(f"{local}: no such file")
    with pa.memory_map(os.fspath(local), "r") as source:
        yield source


def _bad_file(pa, err, local: bool = True) -> bool:
    """True for pyarrow's complaints about a malformed file: any of them for a
    local file (pyarrow says "IOError" for corrupt compressed data or lengths
    that do not match), all but its OSErrors for a URL (where they may say
    that reading failed)."""
    if isinstance(err, UnicodeDecodeError):
        return True
    return isinstance(err, (pa.ArrowException, OSError)) and (local or not isinstance(err, OSError))


def _validated(pa, where, batches):
    """Each record batch of ``batches``, fully validated before it is used.

    A damaged IPC or Parquet file can hold offsets or lengths that point
    outside its buffers; pyarrow reads them as they are (and the process dies
    of a segmentation fault when they are used), so every batch goes through
    ``validate(full=True)`` first, one at a time, so memory stays bounded.
    """
    for batch in batches:
        try:
            batch.validate(full=True)
        except pa.ArrowException as err:
            raise FormatError(f"{where}: damaged record batch: {err}") from None
        yield batch


def _format_errors(pa, where, batches, local=True):
    """``batches`` validated, with pyarrow's complaints about the file as
    FormatError."""
    def wrapped(names, blen):
        try:
            yield from _validated(pa, where, batches(names, blen))
        except (pa.ArrowException, OSError, UnicodeDecodeError) as err:
            if not _bad_file(pa, err, local):
                raise
            raise FormatError(f"{where}: {err}") from err
    return wrapped


def from_parquet(path, rootdir=None, mode="w", *, kind=None, columns=None,
                 batch_size=READ_BLOCK_ROWS, progress=None, storage_options=None,
                 **ctable_kwargs):
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
    storage_options : dict, optional
        fsspec options for a URL ``path`` (credentials, endpoint...), read then
        through fsspec rather than ``pyarrow.fs``, and for a URL ``rootdir``.

    Returns
    -------
    ctable or carray

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    DatasetNotFoundError
        When a local ``path`` (or, with ``storage_options``, a URL) does not
        exist.
    FormatError
        When ``path`` is not a Parquet file, a row group is damaged (each
        batch is validated in full before use), or its metadata is
        malformed.
    TypeError, ValueError, DatasetExistsError
        As :func:`from_arrow`; nothing is left at ``rootdir`` then.
    """
    pa, pq = import_pyarrow(), _pq()
    where, local = str(path), local_path(path) is not None
    with _input(pa, path, storage_options) as source:
        try:
            pf = pq.ParquetFile(source)
            schema, nrows = pf.schema_arrow, pf.metadata.num_rows
        except (pa.ArrowException, OSError, UnicodeDecodeError) as err:
            if not _bad_file(pa, err, local):
                raise
            raise FormatError(f"{where}: not a readable Parquet file: {err}") from err

        def batches(names, blen):
            return pf.iter_batches(batch_size=min(batch_size, blen), columns=names)

        return _read(pa, schema, _format_errors(pa, where, batches, local), where, rootdir,
                     mode, kind, columns, nrows, progress,
                     destination_kwargs(rootdir, storage_options, ctable_kwargs))


def from_feather(path, rootdir=None, mode="w", *, kind=None, columns=None, progress=None,
                 storage_options=None, **ctable_kwargs):
    """A ctable (or carray) holding an Arrow IPC file (Feather v2) or stream.

    Parameters
    ----------
    path : str or os.PathLike
        A local path (memory-mapped), or a URL that ``pyarrow.fs`` can open.
    rootdir, mode, kind, columns, progress, **ctable_kwargs
        As :func:`from_arrow`.
    storage_options : dict, optional
        fsspec options for a URL ``path``, as :func:`from_parquet`.

    Returns
    -------
    ctable or carray

    Raises
    ------
    ImportError
        When pyarrow is not installed (``pip install 'bcolz_store[arrow]'``).
    DatasetNotFoundError
        When a local ``path`` (or, with ``storage_options``, a URL) does not
        exist.
    FormatError
        When ``path`` is neither an Arrow IPC file nor stream (Feather v1
        files included), a record batch is damaged (each is validated in
        full before use), or its metadata is malformed.
    TypeError, ValueError, DatasetExistsError
        As :func:`from_arrow`; nothing is left at ``rootdir`` then.
    """
    pa = import_pyarrow()
    where, local = str(path), local_path(path) is not None
    with _input(pa, path, storage_options) as source:
        try:
            reader = pa.ipc.open_file(source)
            count = reader.num_record_batches

            def batches(names, blen):
                whole = (reader.get_batch(i).select(names) for i in range(count))
                return _sliced(whole, blen)

            schema = reader.schema
            nrows = sum(reader.get_batch(i).num_rows for i in range(count))
        except (pa.ArrowException, OSError, UnicodeDecodeError) as first:
            if not _bad_file(pa, first, local):
                raise
            try:
                source.seek(0)
                schema = pa.ipc.open_stream(source).schema
            except (pa.ArrowException, OSError, UnicodeDecodeError) as err:
                if not _bad_file(pa, err, local):
                    raise
                raise FormatError(f"{where}: not an Arrow IPC file or stream: {first}; "
                                  f"as a stream: {err}") from err
            nrows = None

            def batches(names, blen):
                source.seek(0)
                return _sliced((b.select(names) for b in pa.ipc.open_stream(source)), blen)

        return _read(pa, schema, _format_errors(pa, where, batches, local), where, rootdir,
                     mode, kind, columns, nrows, progress,
                     destination_kwargs(rootdir, storage_options, ctable_kwargs))


@register_converter
class ParquetConverter(Converter):
    """Apache Parquet files (:func:`from_parquet`, :func:`to_parquet`)."""

    name = "parquet"
    suffixes = (".parquet", ".pq")
    description = "Apache Parquet"
    extra = "arrow"
    requires = "pyarrow"
    remote = True
    vlen = True
    categorical = True
    read = staticmethod(from_parquet)
    write = staticmethod(to_parquet)


@register_converter
class ArrowConverter(Converter):
    """Arrow IPC files, Feather v2 (:func:`from_feather`, :func:`to_feather`)."""

    name = "arrow"
    suffixes = (".arrow", ".feather", ".ipc")
    description = "Arrow IPC (Feather v2)"
    extra = "arrow"
    requires = "pyarrow"
    remote = True
    vlen = True
    categorical = True
    read = staticmethod(from_feather)
    write = staticmethod(to_feather)
