"""zarr v3 arrays and groups <-> carray/ctable.

zarr-python (3.1 or later) is an optional extra (``pip install
'bcolz_store[zarr]'``), imported only when these functions run.

A carray becomes a zarr array; a ctable a zarr group with one array per
column::

    bcolz                     zarr (format 3)
    carray                    array: shape, dtype, chunks = (chunklen, *atom shape),
                              fill_value = dflt, attributes = attrs
    ctable                    group: attributes = the table's attrs plus
                                "bcolz_store": {"version": 1, "kind": "ctable",
                                                "names": [column order]}
    ctable column             array in the group, as a carray (its attrs as
                              attributes)

Writing goes chunk by chunk (blocks of whole chunks, so each zarr chunk is
written once); reading goes block by block along the first dimension.
Every numpy dtype a bcolz column holds has a zarr data type, so values and
dtypes are kept exactly.  zarr-python's S, U and structured types have no
zarr v3 specification yet, so other zarr libraries may not read those
arrays; zarr-python says so with an ``UnstableSpecificationWarning`` on
every array of them it writes or reads, which :func:`to_zarr` and
:func:`from_zarr` silence while they run (that warning only: this docstring
is where it is said).  Object columns are refused.

Read back: a carray's chunklen and dflt (from ``chunks`` and
``fill_value``), a ctable's column order, attrs and column attrs.  A
ctable's columns keep their chunklen only when all agree; their dflt is not
kept.  Groups written by others: the columns are the arrays in name order,
nested groups are refused, variable-length strings become fixed width
(``U``/``S`` of the longest value; :func:`numpy_atom` is the one place
where a column's dtype is decided).

vlen columns (str or bytes of any length) become zarr's variable-length
types (``VariableLengthUTF8``, vlen-utf8; ``VariableLengthBytes``,
vlen-bytes), and their vlen type is recorded under ``bcolz_store`` (the
group's attribute, or the array's for a carray), so they read back as vlen
columns; a missing item (None) is refused, since zarr would write the text
'None'.  ``from_zarr(..., strings='vlen')`` reads other variable-length
strings as vlen columns too.

Source: zarr-python 3.1 API (``zarr.open``, ``zarr.open_group``,
``zarr.create_array``, ``Group.create_array``); checked by
tests/interop/test_zarr.py, which reopens what is written with zarr itself.
"""

from __future__ import annotations

import contextlib
import functools
import os
import warnings

import numpy as np

from ..kinds.vlen.chunk_items import missing_mask
from ..errors import (DatasetExistsError, DatasetNotFoundError, FormatError, UnsafeDataError,
                      raised_in)
from ..limits import check_alloc
from ..kinds.vlen.meta import vlen_result_dtype
from ..kinds.category.types import category_from_json, category_to_json
from ..kinds.vlen.types import vlen, vlen_from_json, vlen_to_json
from ..interop.columns import (BLOCK_BYTES, atom_of, block_rows, check_fixed_width,
                               column_attrs, columns_of, kind_of)
from ._common import refuse_arrow_kinds, Sink, local_path, progress_bar
from .base import Converter, register_converter, require

__all__ = ["RESERVED_ATTR", "ZarrConverter", "from_zarr", "numpy_atom", "to_zarr", "zarr_dtype"]

RESERVED_ATTR = "bcolz_store"
META_VERSION = 1


def _zarr():
    return require("zarr", "zarr", "zarr conversions")


def _unstable_types_quiet(func):
    """``func`` with zarr-python's ``UnstableSpecificationWarning`` (S, U and
    structured types have no zarr v3 specification yet, as the module
    docstring says) silenced while it runs, and no other warning."""
    @functools.wraps(func)
    def quiet(*args, **kwargs):
        try:
            from zarr.errors import UnstableSpecificationWarning
        except ImportError:     # no zarr (func says so), or a zarr without the warning
            return func(*args, **kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=UnstableSpecificationWarning)
            return func(*args, **kwargs)
    return quiet


def zarr_dtype(atom) -> np.dtype:
    """The dtype of the zarr array holding a column whose rows are ``atom``.

    Parameters
    ----------
    atom : numpy.dtype
        The column's dtype (a subarray shape is the row shape).

    Returns
    -------
    numpy.dtype
        The base dtype (zarr-python picks its zarr data type from it).

    Raises
    ------
    TypeError
        For object dtypes, which zarr would pickle or reinterpret.
    """
    base = np.dtype(atom).base
    if base.hasobject:
        raise TypeError("object columns have no zarr data type that keeps them; convert them "
                        "to a fixed-width or numeric dtype first")
    return base


def _check_target(store, overwrite: bool) -> None:
    path = local_path(store) if isinstance(store, (str, os.PathLike)) else None
    if path is None or not os.path.lexists(path):
        return
    if not overwrite:
        raise DatasetExistsError(f"{path}: exists; pass overwrite=True to replace it")
    if not any((path / name).is_file() for name in ("zarr.json", ".zgroup", ".zarray")):
        raise DatasetExistsError(f"{path}: exists and is not a zarr store; not replacing it")


@contextlib.contextmanager
def _refused_if_there(store):
    """zarr's refusal to write over a node, as DatasetExistsError."""
    try:
        yield
    except FileExistsError as err:
        if isinstance(err, DatasetExistsError):
            raise
        raise DatasetExistsError(f"{store}: exists; pass overwrite=True to replace it "
                                 f"({err})") from err


def _write_column(array, col, bar, name) -> None:
    blen = block_rows(col)
    vlen = getattr(col, "vlen", None)
    for start in range(0, len(col), blen):
        block = col[start:start + blen]
        if vlen is not None and vlen.nullable:
            missing = missing_mask(block)
            if missing is not None and missing.any():
                raise ValueError(f"column {name!r} has missing items (None), which zarr's "
                                 f"variable-length types cannot hold (zarr would write the "
                                 f"text 'None')")
        array[start:start + len(block)] = block
        bar.update(len(block))


def _array_spec(name, col) -> dict:
    vlen = getattr(col, "vlen", None)
    if vlen is not None:        # vlen-utf8 / vlen-bytes
        zd = require("zarr.dtype", "zarr", "zarr conversions")
        return {"shape": tuple(col.shape),
                "dtype": zd.VariableLengthUTF8() if vlen.kind == "str"
                else zd.VariableLengthBytes(),
                "chunks": (int(col.chunklen),), "fill_value": "" if vlen.kind == "str" else b""}
    try:
        dtype = zarr_dtype(atom_of(col))
    except TypeError as err:
        raise TypeError(f"column {name!r}: {err}") from None
    return {"shape": tuple(col.shape), "dtype": dtype,
            "chunks": (int(col.chunklen),) + tuple(col.shape[1:]),
            "fill_value": col.dflt[()]}


@_unstable_types_quiet
def to_zarr(obj, store, *, overwrite=False, progress=None, storage_options=None,
            **array_kwargs):
    """Write a carray as a zarr v3 array, or a ctable as a zarr v3 group.

    Parameters
    ----------
    obj : carray or ctable
    store : str, os.PathLike or zarr store
        A local path, a URL (through fsspec) or any zarr store.
    overwrite : bool, default False
        Replace an existing zarr array or group (a local folder that is not
        a zarr store is never replaced).
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).
    storage_options : dict, optional
        fsspec options for a URL ``store`` (credentials, endpoint...).
    **array_kwargs
        Passed to zarr's ``create_array`` (``compressors``, ``shards``...).

    Returns
    -------
    zarr.Array or zarr.Group

    Raises
    ------
    ImportError
        When zarr is not installed (``pip install 'bcolz_store[zarr]'``).
    DatasetExistsError
        When ``store`` holds something and ``overwrite`` is False, or is a
        local folder that is not a zarr store.
    zarr.errors.ContainsArrayError, ContainsGroupError
        From zarr, when a store given as an object already holds a node and
        ``overwrite`` is False.
    TypeError
        For object columns.
    ValueError
        A ctable with an attr named ``bcolz_store`` (reserved in the group's
        attributes).

    Notes
    -----
    Compatibility: a zarr chunk holds ``chunklen`` rows, as a bcolz chunk does.
    """
    refuse_arrow_kinds(obj, "zarr")
    zarr = _zarr()
    _check_target(store, overwrite)
    remote = {} if storage_options is None else {"storage_options": storage_options}
    attrs = obj.attrs.getall()
    with progress_bar(progress, len(obj) * len(columns_of(obj)), "to zarr") as bar:
        vlens = {name: ({"category": category_to_json(col.category)} if col.category
                        else vlen_to_json(col.vlen))
                 for name, col in columns_of(obj) if getattr(col, "vlen", None) is not None}
        if RESERVED_ATTR in attrs and (vlens or kind_of(obj) == "ctable"):
            raise ValueError(f"the attr {RESERVED_ATTR!r} is reserved in a zarr group's or vlen "
                             f"array's attributes; rename it first")
        if kind_of(obj) == "carray":
            if vlens:
                attrs = {**attrs, RESERVED_ATTR: {"version": META_VERSION, "kind": "carray",
                                                  "vlen": vlens}}
            with _refused_if_there(store):
                array = zarr.create_array(store, **_array_spec("data", obj), attributes=attrs,
                                          overwrite=overwrite, zarr_format=3, **remote,
                                          **array_kwargs)
            _write_column(array, obj, bar, "data")
            return array
        names = list(obj.names)
        meta = {"version": META_VERSION, "kind": "ctable", "names": names}
        if vlens:
            meta["vlen"] = vlens
        specs = [_array_spec(name, col) for name, col in columns_of(obj)]
        with _refused_if_there(store):
            group = zarr.open_group(store, mode="w" if overwrite else "w-", zarr_format=3,
                                    attributes={**attrs, RESERVED_ATTR: meta}, **remote)
        colattrs = column_attrs(obj)
        for (name, col), spec in zip(columns_of(obj), specs):
            array = group.create_array(name=name, **spec, attributes=colattrs.get(name, {}),
                                       **array_kwargs)
            _write_column(array, col, bar, name)
        return group


# --- zarr -> bcolz ------------------------------------------------------------------

def _lengths(values: np.ndarray, name: str) -> tuple:
    """(kind 'U' or 'S', length of each value) for variable-length strings."""
    if values.dtype.kind == "T":
        return "U", np.strings.str_len(values)
    flat = values.reshape(-1)
    if all(isinstance(v, str) for v in flat):
        kind = "U"
    elif all(isinstance(v, bytes) for v in flat):
        kind = "S"
    else:
        raise TypeError(f"column {name!r}: object values that are neither all str nor all "
                        f"bytes have no bcolz column kind")
    return kind, np.fromiter(map(len, flat), dtype=np.int64, count=len(flat)).reshape(
        values.shape)


def numpy_atom(array, name="?", blen=None, where=None) -> np.dtype:
    """The atom of the bcolz column that holds a zarr ``array``.

    Parameters
    ----------
    array : zarr.Array
    name : str
        For messages.
    blen : int, optional
        Rows per read when variable-length strings need a scan for their
        longest value (default: whole chunks).
    where : str, optional
        The source, for messages (default: the array's store path).

    Returns
    -------
    numpy.dtype
        The array's dtype with its row shape as a subarray shape;
        variable-length strings as ``U``/``S`` of the longest value.

    Raises
    ------
    ValueError
        For a 0-d array (a column needs a length).
    TypeError
        For object values that are not all str or all bytes.
    LimitError
        When variable-length strings would make a fixed-width column that
        pads its values absurdly (see :func:`._common.check_fixed_width`):
        read it with ``strings='vlen'``.
    """
    if len(array.shape) == 0:
        raise ValueError(f"column {name!r}: a 0-d zarr array has no rows")
    dtype, shape = np.dtype(array.dtype), tuple(array.shape[1:])
    if dtype.kind in "OT":
        kind, width, step, count, held = "U", 1, blen or _read_rows(array), 0, 0
        for start in range(0, array.shape[0], step):
            kind, lengths = _lengths(array[start:start + step], name)
            width = max(width, int(lengths.max(initial=0)))
            count, held = count + lengths.size, held + int(lengths.sum(dtype=np.int64))
        dtype = np.dtype(f"{kind}{width}")
        check_fixed_width(where or str(array.store_path), name, dtype, count, held)
    return np.dtype((dtype, shape)) if shape else dtype


def _read_rows(array) -> int:
    """Rows per read of one array: about BLOCK_BYTES, whole chunks when a
    chunk is no larger than four blocks."""
    rowbytes = max(int(np.prod(array.shape[1:], dtype=np.int64)) * array.dtype.itemsize, 1)
    return _block_len(array.chunks[0], rowbytes)


def _block_len(unit: int, rowbytes: int) -> int:
    """Rows per read: about BLOCK_BYTES of rows of ``rowbytes``, a whole number
    of chunks of ``unit`` rows where such a chunk is at most 4 * BLOCK_BYTES
    (the zarr chunk length is the input's: never trusted to size a block)."""
    unit, rowbytes = max(int(unit), 1), max(int(rowbytes), 1)
    if unit * rowbytes > 4 * BLOCK_BYTES:
        return max(1, BLOCK_BYTES // rowbytes)
    return max(unit, BLOCK_BYTES // rowbytes // unit * unit)


def _pickling_codecs(node) -> list:
    """The codecs (and object codecs) of ``node``'s metadata that unpickle."""
    try:
        meta = node.metadata.to_dict()
    except Exception:           # noqa: BLE001 - no metadata dict: nothing to find
        return []
    found, stack = [], [meta]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in ("id", "name", "object_codec_id"):
                value = item.get(key)
                if isinstance(value, str) and "pickle" in value.lower():
                    found.append(value)
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return found


def _check_array(array, name: str, where: str) -> None:
    """Refuse arrays whose codecs unpickle, and chunks larger than this process
    can allocate (zarr decodes a chunk whole)."""
    codecs = _pickling_codecs(array)
    if codecs:
        raise UnsafeDataError(f"{where}: column {name!r}: its codecs {codecs} unpickle the "
                              f"data, which runs code; refused")
    chunks = tuple(int(n) for n in array.chunks)
    itemsize = max(np.dtype(array.dtype).itemsize, 1)
    check_alloc(int(np.prod(chunks, dtype=object)) * itemsize,
                f"{where}: column {name!r}: one zarr chunk shaped {chunks}")


def _block(values: np.ndarray, atom: np.dtype, name: str) -> np.ndarray:
    if values.dtype.kind not in "OT":
        return values
    kind, lengths = _lengths(values, name)
    out = values.astype(atom.base)
    if kind != atom.base.kind or not np.array_equal(np.char.str_len(out), lengths):
        raise ValueError(f"column {name!r}: values that {atom.base} would cut (longer than "
                         f"its width, or ending in NUL)")
    return out


def _open(zarr, source, where, storage_options=None):
    path = local_path(source) if isinstance(source, (str, os.PathLike)) else None
    if path is not None and not os.path.lexists(path):
        raise DatasetNotFoundError(f"{path}: no such zarr store")
    remote = {} if storage_options is None else {"storage_options": storage_options}
    try:
        return zarr.open(store=source, mode="r", **remote)
    except (FileNotFoundError, KeyError) as err:
        raise DatasetNotFoundError(f"{where}: no zarr array or group: {err}") from err
    except (ValueError, TypeError) as err:
        raise FormatError(f"{where}: not a readable zarr store: {err}") from err
    except RecursionError:
        raise FormatError(f"{where}: not a readable zarr store: its JSON metadata is nested "
                          f"too deeply") from None


def _group_columns(zarr, group, where, columns) -> tuple:
    """(names, arrays, table attrs, recorded vlen types) of a group holding a table."""
    subgroups = sorted(group.group_keys())
    if subgroups:
        raise ValueError(f"{where}: holds the groups {subgroups}, which a ctable cannot hold; "
                         f"convert each group on its own")
    attrs = dict(group.attrs)
    meta = attrs.pop(RESERVED_ATTR, None)
    recorded = meta.get("vlen") if isinstance(meta, dict) else None
    present = sorted(group.array_keys())
    names = present
    if meta is not None:
        names = meta.get("names") if isinstance(meta, dict) else None
        if not isinstance(names, list) or sorted(names) != present:
            raise FormatError(f"{where}: the group's {RESERVED_ATTR!r} attribute lists the "
                              f"columns {names!r}, but it holds the arrays {present}")
    if columns is not None:
        missing = [c for c in columns if c not in present]
        if missing:
            raise KeyError(f"{where}: no columns {missing}")
        names = list(columns)
    arrays = [group[name] for name in names]
    lengths = {name: (a.shape[0] if a.shape else None) for name, a in zip(names, arrays)}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"{where}: arrays of different lengths {lengths} are not a table")
    return names, arrays, attrs, recorded


def _vlen_columns(names, arrays, recorded, strings, where) -> dict:
    """``{name: vlen}`` of the columns to read as vlen columns: those recorded
    (by :func:`to_zarr`), and with ``strings='vlen'`` any variable-length
    strings or bytes."""
    out = {}
    for name, array in zip(names, arrays):
        entry = recorded.get(name) if isinstance(recorded, dict) else None
        if entry is not None:
            try:
                out[name] = (category_from_json(entry["category"])
                             if isinstance(entry, dict) and "category" in entry
                             else vlen_from_json(entry))
            except (TypeError, ValueError) as err:
                raise FormatError(f"{where}: column {name!r}: bad recorded vlen type "
                                  f"({err})") from err
        elif strings == "vlen" and np.dtype(array.dtype).kind in "OT" and len(array.shape) == 1:
            probe = array[:min(array.shape[0], 64)]
            kind = "bytes" if any(isinstance(v, bytes) for v in probe.tolist()) else "str"
            out[name] = vlen(kind)
    return out


@_unstable_types_quiet
def from_zarr(source, rootdir=None, mode="w", *, kind=None, columns=None, progress=None,
              storage_options=None, **kwargs):
    """A carray holding a zarr array, or a ctable holding a zarr group.

    Parameters
    ----------
    source : str, os.PathLike or zarr store
        A local path, a URL (through fsspec) or any zarr store, holding an
        array or a group of arrays of one length (format 2 or 3).
    rootdir : str or os.PathLike, optional
        Where to store it (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    kind : {None, 'carray', 'ctable'}, default None
        None: a carray for an array, a ctable for a group; 'ctable' makes an
        array one column ``data``.
    columns : list of str, optional
        For a group: the columns to take, in this order.
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).
    storage_options : dict, optional
        fsspec options for a URL ``source`` (credentials, endpoint...).
    **kwargs
        Other carray/ctable parameters (``cparams``...); ``chunklen``
        defaults to the zarr chunk length where one chunk of the widest
        column holds at most 16 MiB (else bcolz chooses it from the length).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ImportError
        When zarr is not installed (``pip install 'bcolz_store[zarr]'``).
    DatasetNotFoundError
        When nothing is at ``source``.
    FormatError
        When ``source`` is not a readable zarr store, or the column list in
        the group's attributes does not match its arrays.
    ValueError
        Nested groups, arrays of different lengths, 0-d arrays, values a
        fixed width would cut, column names that are not identifiers.
    TypeError
        Object values that are neither all str nor all bytes.
    KeyError
        An unknown name in ``columns``.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    UnsafeDataError
        An array whose codecs unpickle its data (numcodecs' ``pickle``).
    FormatError
        Also for metadata or chunks zarr or its codecs cannot decode (damaged).
    LimitError
        A zarr chunk larger than this process can allocate, or strings that
        a fixed width would pad absurdly (read them with ``strings='vlen'``).
    """
    zarr = _zarr()
    where = str(source)
    strings = kwargs.pop("strings", "fixed")
    if strings not in ("fixed", "vlen"):
        raise ValueError(f"strings must be 'fixed' or 'vlen', not {strings!r}")
    node = _open(zarr, source, where, storage_options)
    try:
        return _from_node(zarr, node, where, rootdir, mode, kind, columns, strings, progress,
                          kwargs)
    except RecursionError:
        raise FormatError(f"{where}: holds attributes or values nested too deeply") from None
    except (ValueError, TypeError, RuntimeError, UnicodeDecodeError) as err:
        if raised_in(err).startswith(_PACKAGE + os.sep):   # ours keep their types
            raise
        # zarr or a codec on damaged metadata or chunks (JSON, chunk grid, zstd...)
        raise FormatError(f"{where}: damaged zarr data: {type(err).__name__}: {err}") from err


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _from_node(zarr, node, where, rootdir, mode, kind, columns, strings, progress, kwargs):
    if isinstance(node, zarr.Group):
        names, arrays, attrs, recorded = _group_columns(zarr, node, where, columns)
        col_attrs = {name: dict(a.attrs) for name, a in zip(names, arrays) if len(a.attrs)}
        kind = kind or "ctable"
    else:
        names, arrays, attrs, col_attrs = ["data"], [node], dict(node.attrs), {}
        own = attrs.get(RESERVED_ATTR)
        recorded = None
        if isinstance(own, dict) and own.get("kind") == "carray":
            recorded = attrs.pop(RESERVED_ATTR).get("vlen")
        kind = kind or "carray"
        if kind == "carray" and recorded is None:
            kwargs.setdefault("dflt", node.fill_value)
    for name, array in zip(names, arrays):
        _check_array(array, name, where)
    vlens = _vlen_columns(names, arrays, recorded, strings, where)
    atoms = {name: (vlen_result_dtype(vlens[name].kind, vlens[name].nullable is not False)
                    if name in vlens else numpy_atom(a, name, where=where))
             for name, a in zip(names, arrays)}
    nrows = arrays[0].shape[0] if arrays else 0
    chunklens = {a.chunks[0] for a in arrays}
    widest = max((atom.itemsize for atom in atoms.values()), default=1)
    if len(chunklens) == 1:
        chunklen = max(chunklens.pop(), 1)
        if chunklen * widest <= BLOCK_BYTES:        # else bcolz chooses, from expectedlen
            kwargs.setdefault("chunklen", chunklen)
    rowbytes = sum(atom.itemsize for atom in atoms.values())
    unit = max(a.chunks[0] for a in arrays) if arrays else 1
    blen = _block_len(unit, rowbytes)
    with Sink(kind, atoms, rootdir, mode, expectedlen=nrows, dtypes=vlens, **kwargs) as sink, \
            progress_bar(progress, nrows, f"from {os.path.basename(where)}") as bar:
        for start in range(0, nrows, blen):
            blocks = [a[start:start + blen] if n in vlens else
                      _block(a[start:start + blen], atoms[n], n) for n, a in zip(names, arrays)]
            sink.append(blocks)
            bar.update(len(blocks[0]))
        return sink.finish(attrs, col_attrs)


@register_converter
class ZarrConverter(Converter):
    """zarr v3 stores, a group of one array per column (:func:`from_zarr`,
    :func:`to_zarr`)."""

    name = "zarr"
    suffixes = (".zarr",)
    description = "a zarr v3 store"
    extra = "zarr"
    requires = "zarr"
    remote = True
    folder_names = ("zarr.json", ".zgroup", ".zarray")
    noun = "zarr store"
    vlen = True
    categorical = True
    read = staticmethod(from_zarr)
    write = staticmethod(to_zarr)
