"""Conversions between bcolz datasets and other formats: the hub.

:func:`convert` tells the formats from the paths (or ``to=``), reads the
source and writes the destination.  One side is a bcolz dataset; between two
other formats the data goes through a temporary bcolz dataset beside the
destination, so memory stays bounded by one block::

    parquet  arrow  zarr  npz  hdf5  datadings  --read-->  bcolz
    bcolz  --write-->  parquet  arrow  zarr  npz  hdf5  datadings

======== ====================================== ============================ ==========
format   path (or ``to=``)                      module                       extra
======== ====================================== ============================ ==========
bcolz    a rootdir folder, ``*.bcolz``          bcolz_store                  (none)
parquet  ``*.parquet``, ``*.pq``                ``interop.arrow``            ``arrow``
arrow    ``*.arrow``, ``*.feather``, ``*.ipc``  ``interop.arrow``            ``arrow``
zarr     ``*.zarr`` (a zarr v3 store)           ``interop.zarr_io``          ``zarr``
npz      ``*.npz``                              ``interop.npz``              (none)
hdf5     ``*.h5``, ``*.hdf5``                   ``interop.hdf5``             ``hdf5``
datadings ``*.msgpack`` (+ index files)         ``interop.datadings``        ``datadings``
======== ====================================== ============================ ==========

What each format keeps, and what it refuses, is in docs/converting.md.

A local destination is written in a fresh folder beside it and moved into
place only when complete: a failed conversion leaves nothing behind, and an
existing destination (replaced only with ``overwrite=True``) stays intact
until the new one is whole.  ``overwrite`` replaces only what the conversion
would write (a bcolz dataset with a bcolz dataset, a zarr store with a zarr
store, a file with a file), never an unrelated folder.

This module also holds what the format modules share: the lazy import of
an optional library (:func:`require`), progress bars (:func:`progress_bar`),
block sizes, and :class:`Sink`, which builds a carray or ctable from blocks.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import inspect
import os
import re
import shutil
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

import bcolz_store
from bcolz_store.errors import BcolzStoreError, DatasetExistsError, DatasetNotFoundError

__all__ = ["FORMATS", "Converted", "Sink", "add_convert_parser", "block_rows", "convert",
           "detect_format", "progress_bar", "require", "row_blocks", "run_convert"]

FORMATS = ("arrow", "bcolz", "datadings", "hdf5", "npz", "parquet", "zarr")
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
            ".ipc": "arrow", ".zarr": "zarr", ".npz": "npz", ".h5": "hdf5", ".hdf5": "hdf5",
            ".msgpack": "datadings", ".bcolz": "bcolz"}
# Formats that reach remote URLs through their own library (pyarrow.fs, fsspec).
REMOTE_FORMATS = ("arrow", "parquet", "zarr")
# Files beside a datadings ``NAME.msgpack`` that belong to it (the legacy index too).
DATADINGS_SUFFIXES = ("", ".offsets", ".keys", ".key_hashes", ".filter", ".md5", ".index")
BLOCK_BYTES = 16 << 20      # uncompressed bytes per streamed block (all columns)
PROG = "bcolz-store"


# --- what the format modules share ---------------------------------------------

def require(module: str, extra: str, what: str):
    """Import an optional library, or raise an ImportError naming the extra.

    Parameters
    ----------
    module : str
        The module to import (e.g. ``'pyarrow.parquet'``).
    extra : str
        The bcolz_store extra that installs it (e.g. ``'arrow'``).
    what : str
        What needs it, for the message (e.g. ``'Parquet conversions'``).

    Returns
    -------
    module

    Raises
    ------
    ImportError
        When the library is not installed; the message says
        ``pip install bcolz_store[EXTRA]``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"{module.split('.')[0]} is needed for {what}; install it, "
                          f"e.g. `pip install bcolz_store[{extra}]`") from err


class _NoBar:
    def update(self, n=1):
        pass

    def close(self):
        pass


@contextlib.contextmanager
def progress_bar(progress, total: int, desc: str, unit: str = "row"):
    """A tqdm progress bar on stderr, or a stand-in that shows nothing.

    Parameters
    ----------
    progress : bool or None
        None: show a bar when stderr is a terminal; True/False: force it on
        or off.  Without tqdm installed nothing is shown.
    total : int
        Expected count of ``unit``.
    desc : str
        Label of the bar.
    unit : str, default 'row'

    Yields
    ------
    object with ``update(n)``
    """
    show = sys.stderr.isatty() if progress is None else bool(progress)
    bar = _NoBar()
    if show:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            bar = tqdm(total=total, desc=desc, unit=unit, unit_scale=True, leave=False,
                       file=sys.stderr)
    try:
        yield bar
    finally:
        bar.close()


def kind_of(obj) -> str:
    """``'ctable'`` or ``'carray'``; TypeError for anything else."""
    if isinstance(obj, bcolz_store.ctable):
        return "ctable"
    if isinstance(obj, bcolz_store.carray):
        return "carray"
    raise TypeError(f"expected a bcolz_store carray or ctable, not {type(obj).__name__}")


def columns_of(obj) -> list:
    """``[(name, carray)]``: a ctable's columns, or a carray as one column ``data``."""
    if kind_of(obj) == "carray":
        return [("data", obj)]
    return [(name, obj.cols[name]) for name in obj.names]


def column_attrs(obj) -> dict:
    """``{name: attrs}`` for the ctable columns that have attrs ({} for a carray)."""
    if kind_of(obj) == "carray":
        return {}
    return {name: col.attrs.getall() for name, col in columns_of(obj) if len(col.attrs)}


def atom_of(col) -> np.dtype:
    """A column's atom: its dtype, with the shape of one row as a subarray shape."""
    return np.dtype((col.dtype, tuple(col.shape[1:]))) if len(col.shape) > 1 else col.dtype


def block_rows(obj, target_bytes: int = BLOCK_BYTES) -> int:
    """Rows per streamed block: about ``target_bytes`` of all columns, a whole
    number of the smallest chunklen (at least one chunk)."""
    cols = [col for _, col in columns_of(obj)]
    chunklen = min((int(c.chunklen) for c in cols), default=1)
    rowbytes = sum(atom_of(c).itemsize for c in cols) or 1
    return max(chunklen, (target_bytes // rowbytes) // chunklen * chunklen)


def row_blocks(obj, blen: int):
    """Yield, for consecutive row ranges of ``blen`` rows, one block per column
    (a carray is one column), read column by column."""
    cols = [col for _, col in columns_of(obj)]
    for start in range(0, len(obj), blen):
        yield [col[start:start + blen] for col in cols]


def check_attrs_kept(obj, drop_attrs: bool, where: str, table: bool = True) -> None:
    """Refuse (ValueError) to lose attrs that a format ``where`` cannot hold:
    the column attrs, and with ``table`` the attrs of ``obj`` too."""
    if drop_attrs:
        return
    lost = []
    if table and len(obj.attrs):
        lost.append(f"attrs {sorted(obj.attrs.getall())}")
    if column_attrs(obj):
        lost.append(f"column attrs on {sorted(column_attrs(obj))}")
    if lost:
        raise ValueError(f"{where} has no place for the {' and '.join(lost)}; pass "
                         f"drop_attrs=True (bcolz-store convert --drop-attrs) to convert "
                         f"without them")


class Sink:
    """A carray or ctable being built from blocks of exactly its dtypes.

    Parameters
    ----------
    kind : {'carray', 'ctable'}
    atoms : dict of str to numpy.dtype
        Column name -> atom (dtype, with a subarray shape for rows that are
        arrays).  A carray has one entry.
    rootdir : str or os.PathLike, optional
        Where to build it (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    expectedlen : int, optional
        Expected number of rows (chooses chunklen, as in bcolz).
    kwargs
        Other carray/ctable constructor parameters (cparams, chunklen...).

    Raises
    ------
    ValueError
        A bad ``mode`` or ``kind``, or (from :meth:`append`) a block whose
        dtype or row shape differs from its column's.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.

    Notes
    -----
    Used as a context manager: when the body fails, what was built at
    ``rootdir`` is removed.  Blocks must match exactly because
    ``ctable.append`` casts silently (it truncates longer strings).
    """

    def __init__(self, kind, atoms, rootdir=None, mode="w", expectedlen=None, **kwargs):
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', not {mode!r}")
        if kind not in ("carray", "ctable"):
            raise ValueError(f"kind must be 'carray' or 'ctable', not {kind!r}")
        if kind == "carray" and len(atoms) != 1:
            raise ValueError(f"a carray holds one column, not {len(atoms)}: {list(atoms)}")
        self.rootdir = os.fspath(rootdir) if rootdir is not None else None
        if self.rootdir is not None and mode == "a" and os.path.lexists(self.rootdir):
            raise DatasetExistsError(f"{self.rootdir}: exists; use mode 'w' to replace it")
        self.atoms = dict(atoms)
        empty = [np.empty(0, dtype=atom) for atom in self.atoms.values()]
        kwargs.setdefault("expectedlen", max(int(expectedlen or 0), 1))
        if self.rootdir is not None:
            kwargs.update(rootdir=self.rootdir, mode="w")
        if kind == "carray":
            self.obj = bcolz_store.carray(empty[0], **kwargs)
        else:
            if self.rootdir is not None:
                kwargs.setdefault("auto_flush", False)
            self.obj = bcolz_store.ctable(empty, list(self.atoms), **kwargs)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and self.rootdir is not None:
            with contextlib.suppress(Exception):
                self.obj.close()
            shutil.rmtree(self.rootdir, ignore_errors=True)
        return False

    def append(self, blocks: list) -> None:
        """Append one block per column (in column order), all of one length."""
        for (name, atom), block in zip(self.atoms.items(), blocks):
            if block.dtype != atom.base or block.shape[1:] != atom.shape:
                raise ValueError(f"column {name!r}: a block of {block.dtype} rows shaped "
                                 f"{block.shape[1:]} does not fit {atom.base} rows shaped "
                                 f"{atom.shape}")
        if isinstance(self.obj, bcolz_store.ctable):
            self.obj.append(list(blocks))
        else:
            self.obj.append(blocks[0])

    def finish(self, attrs=None, col_attrs=None):
        """Set the attrs, flush, and return the carray or ctable."""
        for key, value in (attrs or {}).items():
            self.obj.attrs[key] = value
        if isinstance(self.obj, bcolz_store.ctable):
            for name, values in (col_attrs or {}).items():
                for key, value in values.items():
                    self.obj.cols[name].attrs[key] = value
        self.obj.flush()
        return self.obj


# --- paths and formats --------------------------------------------------------------

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_remote(location) -> bool:
    """True for a URL other than ``file://`` (read through pyarrow.fs or fsspec)."""
    return isinstance(location, str) and bool(_URL.match(location)) \
        and not location.lower().startswith("file://")


def local_path(location):
    """A local ``Path`` for a path or ``file://`` URL; None for a remote URL."""
    if is_remote(location):
        return None
    if isinstance(location, str) and location.lower().startswith("file://"):
        return Path(urllib.request.url2pathname(urllib.parse.urlparse(location).path))
    return Path(os.fspath(location))


def _is_bcolz_dir(path: Path) -> bool:
    return (path / "__rootdirs__").is_file() or (path / "meta" / "sizes").is_file()


def _is_zarr_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in ("zarr.json", ".zgroup", ".zarray"))


def detect_format(location, *, reading: bool = True) -> str:
    """The format of ``location``, a local path or URL.

    Parameters
    ----------
    location : str or os.PathLike
    reading : bool, default True
        True for a source: a local folder is recognised by its content (a
        bcolz rootdir, a zarr store), a file by its suffix.  False for a
        destination: by the suffix; no suffix means a bcolz rootdir.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    DatasetNotFoundError
        A local source that does not exist.
    ValueError
        When the format cannot be told (pass ``to=`` for a destination).
    """
    path = local_path(location)
    name = urllib.parse.urlparse(location).path if path is None else path.name
    suffix = os.path.splitext(name.rstrip("/"))[1].lower()
    if reading and path is not None:
        if not os.path.lexists(path):
            raise DatasetNotFoundError(f"{path}: no such file or directory")
        if path.is_dir():
            if _is_bcolz_dir(path):
                return "bcolz"
            if _is_zarr_dir(path):
                return "zarr"
            if suffix not in (".zarr", ".bcolz"):
                raise ValueError(f"{path}: a folder that is neither a bcolz dataset nor a "
                                 f"zarr store")
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if not reading and suffix == "":
        return "bcolz"
    raise ValueError(f"{location}: cannot tell the format from the name (known suffixes: "
                     f"{', '.join(sorted(SUFFIXES))}); pass to=FORMAT")


# --- reading and writing, by format ---------------------------------------------

# format -> (module, reader, writer); a reader takes (src, rootdir, mode, ...) and
# returns a carray/ctable, a writer takes (obj, dst, ...).
_FUNCTIONS = {
    "parquet": ("bcolz_store.interop.arrow", "from_parquet", "to_parquet"),
    "arrow": ("bcolz_store.interop.arrow", "from_feather", "to_feather"),
    "zarr": ("bcolz_store.interop.zarr_io", "from_zarr", "to_zarr"),
    "npz": ("bcolz_store.interop.npz", "from_npz", "to_npz"),
    "hdf5": ("bcolz_store.interop.convert", "read_hdf5", "write_hdf5"),
    "datadings": ("bcolz_store.interop.datadings", "from_datadings", "to_datadings"),
}


def _function(fmt: str, which: int):
    module, *names = _FUNCTIONS[fmt]
    return getattr(importlib.import_module(module), names[which])


HDF5_KIND_ATTR = "bcolz_store_kind"


def write_hdf5(obj, path, *, nodepath="/ctable", drop_attrs=False, overwrite=False,
               progress=None):
    """Write a carray or ctable as a PyTables Table (via :func:`..hdf5.tohdf5`).

    Parameters
    ----------
    obj : carray or ctable
        A carray becomes a Table with one column ``data`` and the attribute
        ``bcolz_store_kind = 'carray'``, which :func:`read_hdf5` reads back.
    path : str or os.PathLike
    nodepath : str, default '/ctable'
    drop_attrs : bool, default False
        Convert even when columns have attrs (a Table column has none).
    overwrite : bool, default False
        Replace an existing file.
    progress : bool or None
        Ignored (PyTables writes in one call).

    Raises
    ------
    ImportError
        When PyTables is not installed (``pip install bcolz_store[hdf5]``).
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For unicode (U) columns (PyTables stores them as ASCII bytes,
        corrupting non-ASCII text) and for datetime64, timedelta64 and object
        columns (PyTables Tables cannot hold them).
    ValueError
        When columns have attrs and ``drop_attrs`` is False.
    """
    from .hdf5 import tohdf5
    path = os.fspath(path)
    unicode = [name for name, col in columns_of(obj) if col.dtype.kind == "U"]
    if unicode:
        raise TypeError(f"HDF5 (PyTables) cannot hold the unicode columns {unicode}: it "
                        f"stores them as ASCII bytes and corrupts other text; convert them "
                        f"to bytes (S) first")
    check_attrs_kept(obj, drop_attrs, "HDF5 (a PyTables Table column)", table=False)
    if overwrite and os.path.isfile(path):
        os.unlink(path)
    table = obj
    if kind_of(obj) == "carray":
        table = bcolz_store.ctable(columns=[obj], names=["data"])
        for key, value in obj.attrs:
            table.attrs[key] = value
        table.attrs[HDF5_KIND_ATTR] = "carray"
    tohdf5(table, path, nodepath=nodepath, mode="w")


def read_hdf5(path, rootdir=None, mode="w", *, nodepath="/ctable", progress=None, **kwargs):
    """Read a PyTables Table into a ctable (or the carray :func:`write_hdf5` wrote).

    Parameters
    ----------
    path : str or os.PathLike
    rootdir : str or os.PathLike, optional
        Where to store the result (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    nodepath : str, default '/ctable'
    progress : bool or None
        Ignored.
    kwargs
        Other ctable/carray constructor parameters.

    Returns
    -------
    ctable, or carray when the Table has ``bcolz_store_kind = 'carray'``.

    Raises
    ------
    ImportError
        When PyTables is not installed.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    OSError, tables.NoSuchNodeError
        As :func:`..hdf5.fromhdf5`.
    """
    from .hdf5 import fromhdf5
    tables = require("tables", "hdf5", "HDF5 conversions")
    if rootdir is not None and mode == "a" and os.path.lexists(rootdir):
        raise DatasetExistsError(f"{rootdir}: exists; use mode 'w' to replace it")
    with tables.open_file(os.fspath(path), mode="r") as h5:
        node = h5.get_node(nodepath)
        kind = node.attrs[HDF5_KIND_ATTR] if HDF5_KIND_ATTR in node.attrs._f_list() else None
    if kind != "carray":
        target = {} if rootdir is None else {"rootdir": os.fspath(rootdir), "mode": "w"}
        return fromhdf5(bcolz_store.ctable, path, nodepath, **target, **kwargs)
    table = fromhdf5(bcolz_store.ctable, path, nodepath)      # in memory, compressed
    data = table.cols["data"]
    target = {} if rootdir is None else {"rootdir": os.fspath(rootdir), "mode": "w"}
    out = data.copy(**target, **kwargs)
    for key, value in table.attrs:
        if key != HDF5_KIND_ATTR:
            out.attrs[key] = value
    out.flush()
    return out


# --- the dispatcher -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Converted:
    """What :func:`convert` wrote.

    Attributes
    ----------
    src, dst : str
        Source and destination as given.
    src_format, dst_format : str
        Their formats (see :data:`FORMATS`).
    kind : {'carray', 'ctable'}
        What travelled.
    length : int
        Rows written.
    paths : tuple of str
        Every file or folder written (datadings writes six files).
    """

    src: str
    dst: str
    src_format: str
    dst_format: str
    kind: str
    length: int
    paths: tuple


def _outputs(dst: Path, fmt: str) -> list:
    """The paths a conversion to ``dst`` writes (and so would replace)."""
    if fmt == "datadings":
        return [dst.with_name(dst.name + suffix) for suffix in DATADINGS_SUFFIXES]
    return [dst]


def _check_replaceable(dst: Path, fmt: str, overwrite: bool) -> None:
    existing = [p for p in _outputs(dst, fmt) if os.path.lexists(p)]
    if not existing:
        return
    if not overwrite:
        raise DatasetExistsError(f"{existing[0]}: exists; pass overwrite=True (bcolz-store "
                                 f"convert --overwrite) to replace it")
    for path in existing:
        if fmt in ("bcolz", "zarr"):
            ours = path.is_dir() and not path.is_symlink() and \
                (_is_bcolz_dir(path) if fmt == "bcolz" else _is_zarr_dir(path))
        else:
            ours = not path.is_dir()
        if not ours:
            raise DatasetExistsError(f"{path}: exists and is not a {fmt} "
                                     f"{'dataset' if fmt in ('bcolz', 'zarr') else 'file'}; "
                                     f"not replacing it")


class _Stage:
    """A fresh folder beside ``dst`` where the conversion writes; :meth:`commit`
    moves the result into place (the replaced outputs go away last)."""

    def __init__(self, dst: Path, fmt: str):
        self.dst, self.fmt = dst, fmt
        dst.parent.mkdir(parents=True, exist_ok=True)
        self.folder = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".converting",
                                            dir=dst.parent))
        self.path = self.folder / dst.name

    def commit(self) -> list:
        """Move the staged outputs into place; on failure, put the replaced ones back."""
        trash = self.folder / ".replaced"
        trash.mkdir()
        finals = _outputs(self.dst, self.fmt)
        written = []
        try:
            for final in finals:
                if os.path.lexists(final):
                    os.replace(final, trash / final.name)
            for final in finals:
                staged = self.folder / final.name
                if os.path.lexists(staged):
                    os.replace(staged, final)
                    written.append(str(final))
        except BaseException:
            for final in finals:
                if os.path.lexists(trash / final.name):
                    if str(final) in written:
                        os.replace(final, self.folder / final.name)
                    os.replace(trash / final.name, final)
            raise
        return written

    def cleanup(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _route(options: dict, reader, writer, dst_is_bcolz: bool):
    """Split ``options`` between the reader and the writer by their signatures."""
    fixed = {"src", "rootdir", "mode", "progress", "obj", "path", "source", "table",
             "overwrite", "drop_attrs"}

    def named(func):
        if func is None:
            return set(), False
        params = inspect.signature(func).parameters.values()
        return ({p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
                - fixed, any(p.kind == p.VAR_KEYWORD for p in params))

    (rnames, rmore), (wnames, wmore) = named(reader), named(writer)
    # Other options go to what builds the destination: the reader for a bcolz one.
    to_bcolz = dst_is_bcolz and reader is not None
    catcher, catch_all = (reader, rmore) if to_bcolz else (writer, wmore)
    to_reader, to_writer = {}, {}
    for key, value in options.items():
        took = False
        if key in rnames:
            to_reader[key], took = value, True
        if key in wnames:
            to_writer[key], took = value, True
        if not took and catch_all:
            (to_reader if catcher is reader else to_writer)[key], took = value, True
        if not took:
            raise TypeError(f"convert() got an unexpected option {key!r}; this conversion "
                            f"takes {sorted(rnames | wnames | {'overwrite', 'drop_attrs'})}")
    return to_reader, to_writer


def _check_apart(src, dst) -> None:
    a, b = local_path(src), local_path(dst)
    if a is None or b is None:
        return
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    if a == b or a in b.parents or b in a.parents:
        raise ValueError(f"source {src} and destination {dst} overlap")


def _copy_bcolz(obj, rootdir, mode="w", *, progress=None, **kwargs):
    """A bcolz dataset copied to ``rootdir`` with its attrs (and column attrs)."""
    out = obj.copy(rootdir=os.fspath(rootdir), mode=mode, **kwargs)
    for key, value in obj.attrs:
        out.attrs[key] = value
    for name, values in column_attrs(obj).items():
        for key, value in values.items():
            out.cols[name].attrs[key] = value
    out.flush()
    return out


def convert(src, dst, *, to=None, progress=None, **options) -> Converted:
    """Convert between a bcolz dataset and another format (or two other formats).

    Parameters
    ----------
    src : str or os.PathLike
        A bcolz rootdir (opened read-only), ``*.parquet``, ``*.arrow``/
        ``*.feather``, ``*.zarr``, ``*.npz``, ``*.h5``/``*.hdf5`` or a
        datadings ``*.msgpack`` file; a local path, a ``file://`` URL, or
        (parquet, arrow, zarr) a remote URL their libraries can open.
    dst : str or os.PathLike
        Where to write; its format from its suffix (no suffix: a bcolz
        rootdir) unless ``to`` is given.
    to : str, optional
        The destination format, one of :data:`FORMATS`.
    progress : bool or None, default None
        Progress bars on stderr: None shows them when stderr is a terminal
        (and tqdm is installed).
    overwrite : bool, default False
        Replace an existing destination of the same format.
    drop_attrs : bool, default False
        Convert even where the destination has no place for the attrs
        (datadings; column attrs in HDF5); elsewhere attrs are kept anyway.
    **options
        Passed to the reader or writer that names them (e.g.
        ``compression`` for Parquet, ``nodepath`` for HDF5, ``key_column``
        for datadings, ``cparams``/``chunklen`` for a bcolz destination).

    Returns
    -------
    Converted
        Formats, kind, length and the paths written.

    Raises
    ------
    DatasetNotFoundError
        When ``src`` does not exist.
    DatasetExistsError
        When ``dst`` exists and ``overwrite`` is False, or exists as
        something other than what would be written.
    ValueError
        An unknown format, overlapping ``src`` and ``dst``, a remote
        destination in a format that needs a local path, or data the target
        cannot hold without loss (see docs/converting.md).
    TypeError
        An unknown option, or a dtype the target cannot hold.
    ImportError
        When the optional library of a format is missing (the message names
        the extra to install).
    FormatError
        A malformed source.
    OSError
        When the operating system refuses a read or write.
    """
    overwrite = bool(options.pop("overwrite", False))
    drop_attrs = bool(options.pop("drop_attrs", False))
    src_fmt = detect_format(src, reading=True)
    dst_fmt = to if to is not None else detect_format(dst, reading=False)
    if dst_fmt not in FORMATS:
        raise ValueError(f"unknown format {dst_fmt!r}; expected one of {', '.join(FORMATS)}")
    _check_apart(src, dst)
    reader = _function(src_fmt, 0) if src_fmt != "bcolz" else None
    writer = _function(dst_fmt, 1) if dst_fmt != "bcolz" else _copy_bcolz
    read_opts, write_opts = _route(options, reader, writer, dst_fmt == "bcolz")
    if "drop_attrs" in inspect.signature(writer).parameters:
        write_opts["drop_attrs"] = drop_attrs
    if is_remote(src) and src_fmt not in REMOTE_FORMATS:
        raise ValueError(f"{src}: {src_fmt} is read from local paths only")
    dst_path = local_path(dst)
    if dst_path is None and dst_fmt not in REMOTE_FORMATS:
        raise ValueError(f"{dst}: {dst_fmt} is written to local paths only")
    if dst_path is not None:
        _check_replaceable(dst_path, dst_fmt, overwrite)
        stage = _Stage(dst_path, dst_fmt)
        target = stage.path
    else:
        stage, target = None, dst
    try:
        with tempfile.TemporaryDirectory(prefix=".bcolz-store-convert-",
                                         dir=stage.folder if stage else None) as tmp:
            if reader is None:
                obj = bcolz_store.open(os.fspath(local_path(src)), mode="r")
            elif dst_fmt == "bcolz":
                obj = reader(src, target, progress=progress, **read_opts)
            else:
                obj = reader(src, os.path.join(tmp, "data.bcolz"), progress=progress,
                             **read_opts)
            kind, length = kind_of(obj), len(obj)
            if dst_fmt != "bcolz":
                writer(obj, target, progress=progress, **write_opts,
                       **({} if stage else {"overwrite": overwrite}))
            elif reader is None:
                writer(obj, target, progress=progress, **write_opts)
            obj = None
        written = stage.commit() if stage else [str(dst)]
    finally:
        if stage:
            stage.cleanup()
    return Converted(str(src), str(dst), src_fmt, dst_fmt, kind, length, tuple(written))


# --- the ``bcolz-store convert`` command -----------------------------------------

def add_convert_parser(subparsers) -> argparse.ArgumentParser:
    """Add the ``convert`` command to ``bcolz-store``'s subparsers.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        From ``parser.add_subparsers()``.

    Returns
    -------
    argparse.ArgumentParser
        The ``convert`` parser; its ``func`` default is :func:`run_convert`.
    """
    parser = subparsers.add_parser(
        "convert", help="convert between a bcolz dataset and parquet, arrow, zarr, npz, "
                        "hdf5 or datadings",
        description="Convert SRC into DST.  Formats come from the names: a bcolz rootdir "
                    "(a folder; no suffix or .bcolz), .parquet, .arrow/.feather, .zarr, "
                    ".npz, .h5/.hdf5, .msgpack (datadings).  Exit status 0 on success, "
                    "1 on failure.")
    parser.add_argument("src", help="what to convert")
    parser.add_argument("dst", help="where to write it")
    parser.add_argument("--to", choices=FORMATS, help="the destination format (default: "
                                                      "from DST's name)")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace DST if it exists (only with the same format)")
    parser.add_argument("--drop-attrs", action="store_true",
                        help="convert even where the destination has no place for attrs")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_convert)
    return parser


# Errors reported as a plain one-line failure; anything else is a bug ("unexpected").
_EXPECTED = (BcolzStoreError, OSError, ValueError, TypeError, ImportError, LookupError)


def run_convert(args) -> int:
    """Run ``bcolz-store convert`` with parsed ``args``.

    Parameters
    ----------
    args : argparse.Namespace
        ``src``, ``dst``, ``to``, ``overwrite``, ``drop_attrs``,
        ``no_progress`` (and ``traceback`` when the main parser has it).

    Returns
    -------
    int
        0 on success (one summary line on stdout), 1 on failure (one line on
        stderr: ``bcolz-store: error: convert: ...``).

    Raises
    ------
    KeyboardInterrupt
        Left to the caller (``bcolz-store`` exits 130).
    """
    options = {"overwrite": args.overwrite}
    if getattr(args, "drop_attrs", False):
        options["drop_attrs"] = True
    try:
        done = convert(args.src, args.dst, to=args.to,
                       progress=False if args.no_progress else None, **options)
    except Exception as err:        # noqa: BLE001 - reported in one line, as cli.main does
        if getattr(args, "traceback", False):
            import traceback
            traceback.print_exc()
        if isinstance(err, _EXPECTED):
            message = f"{PROG}: error: convert: {err}"
        else:
            message = (f"{PROG}: unexpected error: {type(err).__name__}: {err} "
                       f"(rerun with --traceback for details)")
        print(" ".join(message.split()), file=sys.stderr)
        return 1
    print(f"{done.dst}: {done.dst_format}, {done.kind} of {done.length} rows "
          f"(from {done.src_format} {done.src})")
    return 0
