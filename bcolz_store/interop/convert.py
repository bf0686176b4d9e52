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
hdf5     ``*.h5``, ``*.hdf5``                   ``interop.hdf5_io``          ``hdf5``
datadings ``*.msgpack`` (+ index files)         ``interop.datadings``        ``datadings``
======== ====================================== ============================ ==========

What each format keeps, and what it refuses, is in docs/converting.md.

A local destination is written in a fresh folder beside it and moved into
place only when complete: a failed conversion leaves nothing behind, and an
existing destination (replaced only with ``overwrite=True``) stays intact
until the new one is whole.  ``overwrite`` replaces only what the conversion
would write (a bcolz dataset with a bcolz dataset, a zarr store with a zarr
store, a file with a file), never an unrelated folder.

What the format modules share (the lazy import of an optional library,
progress bars, block sizes, :class:`Sink`) is in :mod:`._common`; the
``bcolz-store convert`` command is :mod:`bcolz_store.cli.convert`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path

import bcolz_store
from bcolz_store.errors import DatasetExistsError, DatasetNotFoundError

from bcolz_store.storage.urls import open_store

from ._common import (DATADINGS_SUFFIXES, Sink, block_rows, column_attrs, is_remote, kind_of,
                      local_path, progress_bar, require, rootdir_arg, row_blocks)
from .fixed_width import tofixed

# Sink, block_rows, progress_bar, require and row_blocks live in ._common; they
# stay importable from here.
__all__ = ["FORMATS", "Converted", "Sink", "block_rows", "convert", "detect_format",
           "progress_bar", "require", "row_blocks"]

FORMATS = ("arrow", "bcolz", "datadings", "hdf5", "npz", "parquet", "zarr")
SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".arrow": "arrow", ".feather": "arrow",
            ".ipc": "arrow", ".zarr": "zarr", ".npz": "npz", ".h5": "hdf5", ".hdf5": "hdf5",
            ".msgpack": "datadings", ".bcolz": "bcolz"}
# Formats that reach remote URLs (pyarrow.fs or fsspec; bcolz through its stores).
REMOTE_FORMATS = ("arrow", "bcolz", "parquet", "zarr")
# Names, in a folder or object store, that make it a bcolz dataset or a zarr store.
_BCOLZ_NAMES = ("__rootdirs__", "meta/sizes", "bcolz_store.json")
_ZARR_NAMES = ("zarr.json", ".zgroup", ".zarray")


# --- paths and formats --------------------------------------------------------------

def _is_bcolz_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in _BCOLZ_NAMES[:2])


def _is_zarr_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in _ZARR_NAMES)


def _remote_format(location, storage_options) -> str:
    """'zarr' for a URL holding a zarr store, else 'bcolz' (whose opening then
    says what is wrong)."""
    try:
        fsspec = importlib.import_module("fsspec")
        fs, inner = fsspec.core.url_to_fs(location, **(storage_options or {}))
        if any(fs.isfile(f"{inner.rstrip('/')}/{name}") for name in _ZARR_NAMES):
            return "zarr"
    except Exception:           # noqa: BLE001 - no fsspec, no access: opening tells
        pass
    return "bcolz"


def detect_format(location, *, reading: bool = True, storage_options=None) -> str:
    """The format of ``location``, a local path or URL.

    Parameters
    ----------
    location : str or os.PathLike
    reading : bool, default True
        True for a source: a local folder is recognised by its content (a
        bcolz rootdir, a zarr store), a ``.zip`` file is a bcolz pack, other
        files by their suffix, and a URL without a known suffix by its
        content (a zarr store, else a bcolz dataset).  False for a
        destination: by the suffix; no suffix means a bcolz rootdir.
    storage_options : dict, optional
        fsspec options for looking into a URL.

    Returns
    -------
    str
        One of :data:`FORMATS`.

    Raises
    ------
    DatasetNotFoundError
        A local source that does not exist.
    ValueError
        When the format cannot be told (pass ``to=`` for a destination), or
        a ``.zip`` destination (packs are made by ``bcolz-store pack``).
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
        elif suffix == ".zip":
            return "bcolz"                  # a pack (bcolz-store pack)
    if suffix in SUFFIXES:
        return SUFFIXES[suffix]
    if reading and path is None and suffix != ".zip":
        return _remote_format(location, storage_options)
    if not reading and suffix == "":
        return "bcolz"
    if not reading and suffix == ".zip":
        raise ValueError(f"{location}: a .zip pack is made from a bcolz dataset by "
                         f"bcolz-store pack; convert to a bcolz folder first")
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
    "hdf5": ("bcolz_store.interop.hdf5_io", "read_hdf5", "write_hdf5"),
    "datadings": ("bcolz_store.interop.datadings", "from_datadings", "to_datadings"),
}


def _function(fmt: str, which: int):
    module, *names = _FUNCTIONS[fmt]
    return getattr(importlib.import_module(module), names[which])


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
             "overwrite", "drop_attrs", "storage_options"}

    def named(func):
        if func is None:
            return set(), False
        params = inspect.signature(func).parameters.values()
        return ({p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
                - fixed, any(p.kind == p.VAR_KEYWORD for p in params))

    # Reading into a bcolz destination builds it: the copy function is not used
    # then, and other options go to the reader.
    to_bcolz = dst_is_bcolz and reader is not None
    (rnames, rmore), (wnames, wmore) = named(reader), named(None if to_bcolz else writer)
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
    if a is None and b is None:
        a, b = str(src).rstrip("/"), str(dst).rstrip("/")
        if a == b or b.startswith(a + "/") or a.startswith(b + "/"):
            raise ValueError(f"source {src} and destination {dst} overlap")
        return
    if a is None or b is None:
        return
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    if a == b or a in b.parents or b in a.parents:
        raise ValueError(f"source {src} and destination {dst} overlap")


def _copy_bcolz(obj, rootdir, mode="w", *, progress=None, strings="keep", missing=None,
                **kwargs):
    """A bcolz dataset copied to ``rootdir`` with its attrs (and column attrs);
    with ``strings='fixed'``, vlen columns become fixed-width (for the real bcolz)."""
    if strings not in ("keep", "fixed"):
        raise ValueError(f"strings must be 'keep' or 'fixed', not {strings!r}")
    if strings == "fixed":
        with progress_bar(progress, len(obj), "to fixed width") as bar:
            return tofixed(obj, rootdir_arg(rootdir), mode, missing=missing, bar=bar,
                           **kwargs)
    if missing is not None:
        raise ValueError("missing= is for strings='fixed' only")
    out = obj.copy(rootdir=rootdir_arg(rootdir), mode=mode, **kwargs)
    for key, value in obj.attrs:
        out.attrs[key] = value
    for name, values in column_attrs(obj).items():
        for key, value in values.items():
            out.cols[name].attrs[key] = value
    out.flush()
    return out


def _remote_bcolz(dst, storage_options, overwrite: bool):
    """The store of a bcolz destination at a URL, checked like a local one: an
    existing dataset is replaced only with ``overwrite``, anything else never."""
    store = open_store(dst, False, storage_options)
    if store.root_state() == "missing":
        return store, False
    if not overwrite:
        raise DatasetExistsError(f"{dst}: exists; pass overwrite=True (bcolz-store convert "
                                 f"--overwrite) to replace it")
    if not any(store.exists(name) for name in _BCOLZ_NAMES):
        raise DatasetExistsError(f"{dst}: exists and is not a bcolz dataset; not replacing it")
    return store, True


def convert(src, dst, *, to=None, progress=None, storage_options=None, **options) -> Converted:
    """Convert between a bcolz dataset and another format (or two other formats).

    Parameters
    ----------
    src : str or os.PathLike
        A bcolz rootdir (opened read-only), a bcolz pack (``*.zip``),
        ``*.parquet``, ``*.arrow``/``*.feather``, ``*.zarr``, ``*.npz``,
        ``*.h5``/``*.hdf5`` or a datadings ``*.msgpack`` file; a local path,
        a ``file://`` URL, or (bcolz, parquet, arrow, zarr) a remote URL
        (``s3://...``; without a known suffix, a zarr store or a bcolz
        dataset by its content).
    dst : str or os.PathLike
        Where to write; its format from its suffix (no suffix: a bcolz
        rootdir) unless ``to`` is given.  A remote URL for bcolz, parquet,
        arrow and zarr.
    to : str, optional
        The destination format, one of :data:`FORMATS`.
    progress : bool or None, default None
        Progress bars on stderr: None shows them when stderr is a terminal
        (and tqdm is installed).
    storage_options : dict, optional
        fsspec options (credentials, endpoint...) for the source and
        destination given as URLs.
    overwrite : bool, default False
        Replace an existing destination of the same format.
    drop_attrs : bool, default False
        Convert even where the destination has no place for the attrs
        (datadings; column attrs in HDF5; HDF5 attributes that JSON cannot
        hold, such as bytes, read into bcolz); elsewhere attrs are kept
        anyway.
    strings : {'keep', 'fixed'}, default 'keep'
        bcolz to bcolz: 'fixed' turns vlen columns into fixed-width ``U``/``S``
        columns, so that the real bcolz reads the copy.
    missing : str, optional
        With ``strings='fixed'``: written for missing items (default: refuse).
    **options
        Passed to the reader or writer that names them (e.g.
        ``compression`` for Parquet, ``nodepath`` for HDF5, ``key_column``
        for datadings, ``cparams``/``chunklen`` for a bcolz destination).

    Returns
    -------
    Converted
        Formats, kind, length and the paths (or URL) written.

    Raises
    ------
    DatasetNotFoundError
        When ``src`` does not exist.
    DatasetExistsError
        When ``dst`` exists and ``overwrite`` is False, or exists as
        something other than what would be written.
    ValueError
        An unknown format, overlapping ``src`` and ``dst``, a remote source
        or destination in a format that needs a local path,
        ``storage_options`` without a URL, or data the target cannot hold
        without loss (see docs/converting.md).
    TypeError
        An unknown option, or a dtype the target cannot hold.
    ImportError
        When the optional library of a format is missing (the message names
        the extra to install).
    FormatError
        A malformed source.
    OSError
        When the operating system or a remote store refuses a read or write.
    """
    overwrite = bool(options.pop("overwrite", False))
    drop_attrs = bool(options.pop("drop_attrs", False))
    src_fmt = detect_format(src, reading=True, storage_options=storage_options)
    dst_fmt = to if to is not None else detect_format(dst, reading=False)
    if dst_fmt not in FORMATS:
        raise ValueError(f"unknown format {dst_fmt!r}; expected one of {', '.join(FORMATS)}")
    _check_apart(src, dst)
    reader = _function(src_fmt, 0) if src_fmt != "bcolz" else None
    writer = _function(dst_fmt, 1) if dst_fmt != "bcolz" else _copy_bcolz
    read_opts, write_opts = _route(options, reader, writer, dst_fmt == "bcolz")
    if "drop_attrs" in inspect.signature(writer).parameters:
        write_opts["drop_attrs"] = drop_attrs
    if reader is not None and "drop_attrs" in inspect.signature(reader).parameters:
        read_opts["drop_attrs"] = drop_attrs
    src_remote, dst_path = is_remote(src), local_path(dst)
    if src_remote and src_fmt not in REMOTE_FORMATS:
        raise ValueError(f"{src}: {src_fmt} is read from local paths only")
    if dst_path is None and dst_fmt not in REMOTE_FORMATS:
        raise ValueError(f"{dst}: {dst_fmt} is written to local paths only")
    if storage_options is not None:
        if not src_remote and dst_path is not None:
            raise ValueError("storage_options are for URLs (s3://...), and neither the source "
                             "nor the destination is one")
        if src_remote and reader is not None:
            read_opts["storage_options"] = storage_options
        if dst_path is None and dst_fmt != "bcolz":
            write_opts["storage_options"] = storage_options
    replaced = False
    if dst_path is not None:
        _check_replaceable(dst_path, dst_fmt, overwrite)
        stage = _Stage(dst_path, dst_fmt)
        target = stage.path
    elif dst_fmt == "bcolz":
        stage = None
        target, replaced = _remote_bcolz(dst, storage_options, overwrite)
    else:
        stage, target = None, dst
    try:
        with tempfile.TemporaryDirectory(prefix=".bcolz-store-convert-",
                                         dir=stage.folder if stage else None) as tmp:
            if reader is None:
                obj = bcolz_store.open(src if src_remote else os.fspath(local_path(src)),
                                       mode="r",
                                       storage_options=storage_options if src_remote else None)
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
    except BaseException:
        if dst_path is None and dst_fmt == "bcolz" and not replaced:
            with contextlib.suppress(Exception):
                target.remove_root()        # what a failed copy left at the URL
        raise
    finally:
        if stage:
            stage.cleanup()
    return Converted(str(src), str(dst), src_fmt, dst_fmt, kind, length, tuple(written))
