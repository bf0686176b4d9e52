"""zarr and xarray views of a stored carray or ctable: kerchunk references.

A full chunk file ``data/__N.blp`` is a 16-byte bloscpack header followed by
exactly one Blosc 1.x buffer of ``ctbytes`` bytes, with no offsets table
between them (docs/format.md, "A chunk file"; bcolz format v1.0, seeds/001;
checked against every chunk file of the bcolz 1.13 fixtures): the buffer is
the byte range ``[16, 16 + ctbytes)`` of the file, which numcodecs' ``Blosc``
codec decodes as it stands (Blosc reads its codec, shuffle and sizes from
the buffer's own header).  So a zarr (format 2) array whose chunks are those
byte ranges reads the carray in place, through fsspec's
``ReferenceFileSystem`` and kerchunk's version-1 reference format::

    {"version": 1, "refs": {
        ".zgroup": "{\\"zarr_format\\": 2}",
        ".zattrs": "{}",
        "NAME/.zarray": "{...shape, chunks, dtype, compressor...}",
        "NAME/.zattrs": "{\\"_ARRAY_DIMENSIONS\\": [\\"dim_0\\"], ...}",
        "NAME/0": ["file:///abs/path/data/__0.blp", 16, 434371],
        ...
        "NAME/4": "base64:..."}}

The last, partial chunk (bcolz's leftover, ``len % chunklen`` rows) does
not fill a zarr chunk: its rows are padded to a whole chunk with the
carray's ``dflt`` and the chunk is inlined, Blosc-compressed and
base64-encoded (numcodecs' ``Blosc``, or python-blosc when numcodecs is
missing: both write Blosc 1.x buffers).  The padding is past the array's
shape, so no reader sees it.

The arrays' ``fill_value`` is null: every chunk of the shape is referenced,
so zarr never fills one, and xarray takes a zarr fill value for a missing
value marker (``_FillValue``) and would show every item equal to ``dflt``
(0 by default) as NaN.

A column whose name zarr cannot open as an array name (empty, ``.``,
``..``, with ``/`` or ``\\``, starting with ``.``) is the array named after
its folder in the dataset (``__c<N>_<ascii>``, format/names.py), whose
attributes give the column's name under :data:`COLUMN_ATTR`.

Only committed files are referenced: a carray with changes not yet flushed
is refused.  Only plain fixed-size numpy kinds are: vlen, categorical and
object carrays, structured dtypes and any kind whose ``meta/storage`` holds
more than bcolz's own keys are refused, naming the column and the reason, as
are chunks compressed with a codec numcodecs' Blosc lacks (snappy).

zarr, xarray, fsspec and numcodecs are never imported here at module level;
the references need only the standard library (and numcodecs or python-blosc
for the inlined chunk).
"""

from __future__ import annotations

import base64
import json
import os
import warnings

import numpy as np

from .. import threads
from ..errors import CodecError, FormatError
from ..format.bloscpack import (BLOSC_HEADER_LENGTH, BLOSC_MAX_OVERHEAD,
                                BLOSCPACK_HEADER_LENGTH, parse_blosc_header,
                                parse_bloscpack_header, split_chunk_file)
from ..format.meta import decode_dtype, load_json, load_sizes
from ..storage.fsspec import FsspecStore
from ..storage.local import LocalStore

__all__ = ["BCOLZ_STORAGE_KEYS", "COLUMN_ATTR", "DECODABLE_CNAMES", "carray_refs", "ctable_refs",
           "unsupported_reason"]

#: The keys of a plain carray's ``meta/storage`` (docs/format.md, ``meta/storage``).
BCOLZ_STORAGE_KEYS = frozenset({"dtype", "cparams", "chunklen", "expectedlen", "dflt"})

#: The attribute of an array whose name is not its column's (a column name
#: zarr cannot open as an array name): the column's name.
COLUMN_ATTR = "bcolz_store_column"

#: The Blosc codecs numcodecs' ``Blosc`` decodes (its c-blosc has no snappy).
DECODABLE_CNAMES = ("blosclz", "lz4", "lz4hc", "zlib", "zstd")

# The codec in bits 5..7 of a Blosc 1.x header's flags (docs/format.md,
# "The Blosc 1.x buffer"): 0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd.
_CODEC_NAMES = {0: "blosclz", 1: "lz4", 2: "snappy", 3: "zlib", 4: "zstd"}
_DECODABLE_CODES = {0, 1, 3, 4}
_HEAD = BLOSCPACK_HEADER_LENGTH + BLOSC_HEADER_LENGTH


def _json(obj) -> str:
    return json.dumps(obj, separators=(", ", ": "))


def _where(c, column) -> str:
    return f"column '{column}'" if column is not None else (c.rootdir or "carray")


# ------------------------------------------------------------ what is refused

def unsupported_reason(c) -> str | None:
    """Why carray ``c`` has no zarr v2 view, or None when it has one.

    Parameters
    ----------
    c : carray
        A stored carray (or a ctable's column).

    Returns
    -------
    str or None
        The reason, for a message: a vlen, categorical or object carray, a
        structured or void dtype, or a ``meta/storage`` that is not plain
        bcolz's (a kind of this library's own, docs/format.md).
    """
    if c.category is not None:
        return "categorical items (codes and categories) have no zarr v2 dtype"
    if c.vlen is not None:
        return "variable-length items (vlen) have no zarr v2 fixed-size dtype"
    dtype = c.dtype
    if dtype.hasobject:
        return "object items are stored as pickles, which zarr cannot read"
    if dtype.fields is not None or dtype.kind == "V":
        return f"structured or void dtype {dtype} is not supported"
    dataset = c.dataset
    if dataset is not None:
        where = dataset.path("meta/storage")
        obj = load_json(dataset.get("meta/storage"), where)
        extra = sorted(set(obj) - BCOLZ_STORAGE_KEYS)
        if extra:
            return f"a kind of bcolz_store's own (meta/storage has {extra}), not plain bcolz"
        try:
            decode_dtype(obj.get("dtype", ""), where)
        except FormatError:
            return f"a kind of bcolz_store's own (dtype {obj.get('dtype')!r} in meta/storage)"
    return None


# ------------------------------------------------------------ committed files

def _committed(c, where: str):
    """The carray's DatasetStore, checked: stored, and nothing unflushed."""
    dataset = c.dataset
    if dataset is None:
        raise ValueError(f"{where}: an in-memory carray has no files to reference; write it "
                         f"to a rootdir first")
    if dataset.interrupted_commit:
        raise ValueError(f"{where}: a committed change is not yet applied to the bcolz files "
                         f"(an interrupted writer); open it for writing once to finish it")
    for key in ("meta/sizes", "meta/storage"):
        if dataset.lookup(key)[0]:
            raise ValueError(f"{where}: has changes that are not flushed; call flush() first")
    sizes = load_sizes(dataset.get("meta/sizes"), dataset.path("meta/sizes"))
    if tuple(sizes.shape) != tuple(c.shape):
        raise ValueError(f"{where}: has changes that are not flushed (committed shape "
                         f"{list(sizes.shape)}, now {list(c.shape)}); call flush() first")
    return dataset


def _url_of(dataset, url, where: str):
    """A function ``key -> URL`` of the dataset's files."""
    if url is not None:
        base = str(url).rstrip("/")
        return lambda key: f"{base}/{dataset.prefix}{key}"
    store = dataset.store
    if isinstance(store, LocalStore):
        return lambda key: "file://" + os.path.abspath(dataset.path(key))
    if isinstance(store, FsspecStore):
        return dataset.path
    raise ValueError(f"{where}: its store ({type(store).__name__}) has no URL another program "
                     f"can read its files at; pass url= (where its folder can be read)")


def _chunk_ref(dataset, nchunk: int, nbytes: int, url_of, threshold: int, where: str):
    """``[url, 16, ctbytes]`` of full chunk ``nchunk``, or ``"base64:..."`` of
    its Blosc buffer when it is smaller than ``threshold`` bytes."""
    key = f"data/__{nchunk}.blp"
    if dataset.lookup(key)[0]:
        raise ValueError(f"{where}: has changes that are not flushed; call flush() first")
    path = dataset.path(key)
    data = dataset.get_chunk_range(key, 0, _HEAD)
    if data is None:
        data = dataset.get_chunk(key, nbytes + BLOSCPACK_HEADER_LENGTH + BLOSC_MAX_OVERHEAD)
    dataset.check_reading()
    parse_bloscpack_header(data, path)
    header = parse_blosc_header(memoryview(data)[BLOSCPACK_HEADER_LENGTH:], path, partial=True)
    if header.nbytes != nbytes:
        raise FormatError(f"{path}: Blosc header announces {header.nbytes} bytes, a full chunk "
                          f"holds {nbytes}")
    codec = header.flags >> 5
    if not header.memcpyed and codec not in _DECODABLE_CODES:
        raise CodecError(f"{where}: {path} is compressed with "
                         f"{_CODEC_NAMES.get(codec, f'codec {codec}')}, which numcodecs' Blosc "
                         f"cannot decode")
    if header.ctbytes < threshold and len(data) == _HEAD:
        data = dataset.get_chunk(key, nbytes + BLOSCPACK_HEADER_LENGTH + BLOSC_MAX_OVERHEAD)
        dataset.check_reading()
    if len(data) > _HEAD:
        view = split_chunk_file(data, path)     # the whole file: its length checked too
        if header.ctbytes < threshold:
            return "base64:" + base64.b64encode(view).decode("ascii")
    return [url_of(key), BLOSCPACK_HEADER_LENGTH, header.ctbytes]


# ------------------------------------------------------------ zarr metadata

def _codec_params(cparams) -> tuple:
    cname = cparams.cname if cparams.cname in DECODABLE_CNAMES else "lz4"
    return cname, int(cparams.clevel), int(cparams.shuffle)


def _encode(rows: np.ndarray, cname: str, clevel: int, shuffle: int) -> bytes:
    """One Blosc 1.x buffer of ``rows`` (numcodecs, else python-blosc)."""
    raw = np.ascontiguousarray(rows).view(np.uint8).reshape(-1)
    itemsize = rows.dtype.itemsize
    typesize = itemsize if 0 < itemsize <= 255 else 1
    try:
        from numcodecs import Blosc
    except ImportError:
        import blosc
        return blosc.compress(raw.tobytes(), typesize=typesize, clevel=clevel,
                              shuffle=shuffle, cname=cname)
    return bytes(Blosc(cname=cname, clevel=clevel, shuffle=shuffle,
                       typesize=typesize).encode(raw))


def _jsonable_attrs(attrs: dict, where: str) -> dict:
    out = {}
    for key, value in attrs.items():
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            warnings.warn(f"{where}: attribute {key!r} is not JSON; left out of the zarr "
                          f"attributes", UserWarning, stacklevel=4)
            continue
        out[key] = value
    return out


def _add_array(refs: dict, c, name: str, dims: list, url, threshold: int, column) -> None:
    """The zarr v2 array ``name`` of carray ``c`` (column ``column``) into ``refs``."""
    where = _where(c, column)
    reason = unsupported_reason(c)
    if reason is not None:
        hint = "" if column is None else \
            "; skip_unsupported=True (--skip-unsupported) leaves such columns out"
        raise TypeError(f"{where}: no zarr view: {reason}{hint}")
    dataset = _committed(c, where)
    url_of = _url_of(dataset, url, where)
    dtype, atom = c.dtype, tuple(c.shape[1:])
    chunklen, length = c.chunklen, len(c)
    cname, clevel, shuffle = _codec_params(c.cparams)
    dflt = c.dflt
    refs[f"{name}/.zarray"] = _json({
        "chunks": [chunklen, *atom], "compressor": {"id": "blosc", "cname": cname,
                                                    "clevel": clevel, "shuffle": shuffle,
                                                    "blocksize": 0},
        "dtype": dtype.str, "fill_value": None, "filters": None, "order": "C",
        "shape": [length, *atom], "zarr_format": 2})
    attrs = _jsonable_attrs(c.attrs.getall(), where)
    if column is not None and column != name:
        attrs[COLUMN_ATTR] = column
    attrs["_ARRAY_DIMENSIONS"] = dims
    refs[f"{name}/.zattrs"] = _json(attrs)
    suffix = ".0" * len(atom)
    nfull = length // chunklen
    nbytes = chunklen * int(np.prod(atom, dtype=np.int64)) * dtype.itemsize
    found = threads.map_ordered(
        lambda n: _chunk_ref(dataset, n, nbytes, url_of, threshold, where), range(nfull))
    for n, ref in enumerate(found):
        refs[f"{name}/{n}{suffix}"] = ref
    if length > nfull * chunklen:
        padded = np.empty((chunklen, *atom), dtype=dtype)
        padded[...] = dflt
        padded[:length - nfull * chunklen] = c[nfull * chunklen:length]
        encoded = _encode(padded, cname, clevel, shuffle)
        refs[f"{name}/{nfull}{suffix}"] = "base64:" + base64.b64encode(encoded).decode("ascii")


def _array_name(rootdir) -> str:
    text = str(rootdir or "").rstrip("/\\")
    name = text.replace("\\", "/").rsplit("/", 1)[-1]
    return name if name and not name.startswith(".") else "data"


def _is_array_name(name) -> bool:
    """Whether zarr (v2, through a reference filesystem) opens ``name`` as an
    array of the group: not empty, no path separator, and not starting with
    '.' ('.' and '..' are path segments, '.zarray' and the like its own keys)."""
    return isinstance(name, str) and bool(name) and "/" not in name and "\\" not in name \
        and not name.startswith(".")


def _check_name(name) -> str:
    if not _is_array_name(name):
        raise ValueError(f"name {name!r}: a zarr array name is a non-empty str without '/' "
                         f"or '\\' that does not start with '.'")
    return name


def _array_keys(t, names) -> dict:
    """``{column: array name}``: the column's name, or for a name zarr cannot
    open (see :func:`_is_array_name`) its folder in the dataset
    (``__c<N>_<ascii>``, format/names.py); a name that another column's
    folder takes gets its own folder too.  Folders are unique in a table."""
    keys = {name: name if _is_array_name(name) else t.cols.folder(name) for name in names}
    while True:
        count = {}
        for key in keys.values():
            count[key] = count.get(key, 0) + 1
        clashing = [name for name, key in keys.items()
                    if count[key] > 1 and key != t.cols.folder(name)]
        if not clashing:
            return keys
        for name in clashing:
            keys[name] = t.cols.folder(name)


def _group(attrs: dict) -> dict:
    return {".zgroup": _json({"zarr_format": 2}), ".zattrs": _json(attrs)}


# ------------------------------------------------------------ public

def carray_refs(c, url=None, *, name=None, inline_threshold: int = 0) -> dict:
    """kerchunk references (version 1) of a stored carray: a zarr v2 group
    holding one array.  See :meth:`bcolz_store.carray.to_kerchunk`.

    Raises
    ------
    TypeError, ValueError, CodecError, FormatError
        As :meth:`bcolz_store.carray.to_kerchunk`.
    """
    name = _array_name(c.rootdir) if name is None else _check_name(name)
    threshold = _check_threshold(inline_threshold)
    refs = _group({})
    dims = [f"dim_{k}" for k in range(len(c.shape))]
    _add_array(refs, c, name, dims, url, threshold, None)
    return {"version": 1, "refs": refs}


def ctable_refs(t, url=None, *, inline_threshold: int = 0,
                skip_unsupported: bool = False) -> dict:
    """kerchunk references (version 1) of a stored ctable: a zarr v2 group
    holding one array per column, all sharing the dimension ``row``.  See
    :meth:`bcolz_store.ctable.to_kerchunk`.

    Raises
    ------
    TypeError, ValueError, CodecError, FormatError
        As :meth:`bcolz_store.ctable.to_kerchunk`.
    """
    threshold = _check_threshold(inline_threshold)
    if t.dataset is None:
        raise ValueError("an in-memory ctable has no files to reference; write it to a "
                         "rootdir first")
    refs = _group(_jsonable_attrs(t.attrs.getall(), t.rootdir))
    keys = _array_keys(t, t.names)
    for column in t.names:
        col = t.cols[column]
        reason = unsupported_reason(col)
        if reason is not None and skip_unsupported:
            warnings.warn(f"column '{column}' left out of the zarr view: {reason}",
                          UserWarning, stacklevel=3)
            continue
        dims = ["row"] + [f"{keys[column]}_dim_{k}" for k in range(1, len(col.shape))]
        _add_array(refs, col, keys[column], dims, url, threshold, column)
    return {"version": 1, "refs": refs}


def _check_threshold(value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"inline_threshold must be an int, not {type(value).__name__}")
    if value < 0:
        raise ValueError(f"inline_threshold must be >= 0, not {value}")
    return int(value)
