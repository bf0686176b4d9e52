"""Conversions between bcolz datasets and other formats: the hub.

:func:`convert` tells the formats from the paths (or ``to=``), reads the
source and writes the destination.  One side is a bcolz dataset; between two
other formats the data goes through a temporary bcolz dataset beside the
destination, so memory stays bounded by one block.

The formats are the converters of :data:`.base.registry`
(:class:`~.base.Converter` subclasses, one module each); :func:`formats_table`
lists them, and what each keeps, and refuses, is in docs/converting.md.

A local destination is written in a fresh folder beside it and moved into
place only when complete: a failed conversion leaves nothing behind, and an
existing destination (replaced only with ``overwrite=True``) stays intact
until the new one is whole.  ``overwrite`` replaces only what the conversion
would write (a bcolz dataset with a bcolz dataset, a zarr store with a zarr
store, a file with a file), never an unrelated folder.

The ``bcolz-store convert`` command is :mod:`bcolz_store.cli.convert`.
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
from bcolz_store.interop.columns import kind_of
from bcolz_store.storage.urls import open_store

from ._common import is_remote, local_path
from .base import RemoteFormatError, UnknownFormatError, get_converter, registry
from .native import MARKER_NAMES

__all__ = ["Converted", "convert", "detect_format", "formats", "formats_table",
           "remote_formats", "suffixes"]

#: The format of bcolz datasets, one side of every conversion.
HUB = "bcolz"


# --- the formats, from the registry --------------------------------------------------

def formats() -> tuple:
    """The names of the registered formats, sorted.

    Returns
    -------
    tuple of str
    """
    return registry.names()


def suffixes() -> dict:
    """``{suffix: format}`` of the registered formats.

    Returns
    -------
    dict of str to str
    """
    return {suffix: registry.for_suffix(suffix).name for suffix in registry.suffixes()}


def remote_formats() -> tuple:
    """The formats that read and write URLs (``s3://...``).

    Returns
    -------
    tuple of str
    """
    return tuple(cls.name for cls in registry if cls.remote)


def formats_table() -> str:
    """The registered formats as a reStructuredText table.

    Returns
    -------
    str
        One row per format: its name, paths, module and pip extra.
    """
    rows = [("format", "path (or ``to=``)", "module", "extra")]
    for cls in registry:
        paths = ", ".join(f"``*{s}``" for s in cls.suffixes)
        if cls.name == HUB:
            paths = cls.description
        rows.append((cls.name, paths, f"``{cls.__module__}``", cls.extra or "(none)"))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    rule = " ".join("=" * w for w in widths)
    lines = [" ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join([rule, lines[0], rule, *lines[1:], rule])


def __getattr__(name):
    """``FORMATS``, ``SUFFIXES`` and ``REMOTE_FORMATS``, as the registry has them now."""
    lazy = {"FORMATS": formats, "SUFFIXES": suffixes, "REMOTE_FORMATS": remote_formats}
    if name in lazy:
        return lazy[name]()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --- paths and formats --------------------------------------------------------------

def _folder_formats() -> list:
    """Converters written as folders: bcolz first (a rootdir is never anything else)."""
    return sorted((cls for cls in registry if cls.folder_names), key=lambda c: c.name != HUB)


def _remote_format(location, storage_options) -> str:
    """The folder format whose names a URL holds (other than bcolz), else 'bcolz'
    (whose opening then says what is wrong)."""
    try:
        fsspec = importlib.import_module("fsspec")
        fs, inner = fsspec.core.url_to_fs(location, **(storage_options or {}))
        for cls in _folder_formats():
            if cls.name != HUB and cls.remote and \
                    any(fs.isfile(f"{inner.rstrip('/')}/{name}") for name in cls.folder_names):
                return cls.name
    except Exception:           # noqa: BLE001 - no fsspec, no access: opening tells
        pass
    return HUB


def _noun(cls) -> str:
    return cls.noun or f"{cls.name} file"


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
        One of :func:`formats`.

    Raises
    ------
    DatasetNotFoundError
        A local source that does not exist.
    UnknownFormatError
        When the format cannot be told (pass ``to=`` for a destination), or
        a ``.zip`` destination (packs are made by ``bcolz-store pack``); a
        ValueError.
    """
    path = local_path(location)
    name = urllib.parse.urlparse(location).path if path is None else path.name
    suffix = os.path.splitext(name.rstrip("/"))[1].lower()
    if reading and path is not None:
        if not os.path.lexists(path):
            raise DatasetNotFoundError(f"{path}: no such file or directory")
        if path.is_dir():
            folders = _folder_formats()
            for cls in folders:
                if cls().holds(path):
                    return cls.name
            if suffix not in {s for cls in folders for s in cls.suffixes}:
                nouns = " nor ".join(f"a {_noun(cls)}" for cls in folders)
                raise UnknownFormatError(f"{path}: a folder that is neither {nouns}")
        elif suffix == ".zip":
            return HUB                      # a pack (bcolz-store pack)
    if suffix in registry.suffixes():
        return registry.for_suffix(suffix).name
    if reading and path is None and suffix != ".zip":
        return _remote_format(location, storage_options)
    if not reading and suffix == "":
        return HUB
    if not reading and suffix == ".zip":
        raise UnknownFormatError(f"{location}: a .zip pack is made from a bcolz dataset by "
                                 f"bcolz-store pack; convert to a bcolz folder first")
    raise UnknownFormatError(f"{location}: cannot tell the format from the name (known "
                             f"suffixes: {', '.join(registry.suffixes())}); pass to=FORMAT")


def _check_suffix_agrees(dst, to: str) -> None:
    """Refuse a destination whose suffix names a format other than ``to``
    (``out.parquet`` with ``to='npz'`` would be an npz file named parquet)."""
    path = local_path(dst)
    name = urllib.parse.urlparse(str(dst)).path if path is None else path.name
    suffix = os.path.splitext(name.rstrip("/"))[1].lower()
    if suffix not in registry.suffixes():
        return
    named = registry.for_suffix(suffix).name
    if named != to:
        raise UnknownFormatError(
            f"{dst}: its suffix {suffix} names {named}, but to={to!r} (--to {to}) asks for "
            f"{to}; name the destination *{' or *'.join(get_converter(to).suffixes)} for "
            f"{to}, or leave out to= to write {named}")


# --- the dispatcher -----------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Converted:
    """What :func:`convert` wrote.

    Attributes
    ----------
    src, dst : str
        Source and destination as given (an open carray or ctable as source:
        its rootdir, or ``'(an in-memory ctable)'``).
    src_format, dst_format : str
        Their formats (see :func:`formats`).
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


def _check_replaceable(dst: Path, fmt: str, overwrite: bool) -> None:
    conv = get_converter(fmt)()
    existing = [p for p in conv.outputs(dst) if os.path.lexists(p)]
    if not existing:
        return
    if not overwrite:
        raise DatasetExistsError(f"{existing[0]}: exists; pass overwrite=True (bcolz-store "
                                 f"convert --overwrite) to replace it")
    for path in existing:
        if not conv.holds(path):
            raise DatasetExistsError(f"{path}: exists and is not a {_noun(type(conv))}; "
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
        finals = get_converter(self.fmt)().outputs(self.dst)
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


def _remote_bcolz(dst, storage_options, overwrite: bool):
    """The store of a bcolz destination at a URL, checked like a local one: an
    existing dataset is replaced only with ``overwrite``, anything else never."""
    store = open_store(dst, False, storage_options)
    if store.root_state() == "missing":
        return store, False
    if not overwrite:
        raise DatasetExistsError(f"{dst}: exists; pass overwrite=True (bcolz-store convert "
                                 f"--overwrite) to replace it")
    if not any(store.exists(name) for name in MARKER_NAMES):
        raise DatasetExistsError(f"{dst}: exists and is not a bcolz dataset; not replacing it")
    return store, True


def _open_source(src):
    """``src`` when it is an open carray or ctable, else None (a location).

    Raises
    ------
    TypeError
        When ``src`` is neither a location nor a carray or ctable.
    """
    if isinstance(src, (bcolz_store.carray, bcolz_store.ctable)):
        return src
    if not isinstance(src, (str, os.PathLike)):
        raise TypeError(f"convert(): src must be a path, a URL, or an open carray or ctable, "
                        f"not {type(src).__name__}")
    return None


def _source_name(container) -> str:
    rootdir = container.rootdir
    return str(rootdir) if rootdir else f"(an in-memory {kind_of(container)})"


def convert(src, dst, *, to=None, progress=None, storage_options=None, **options) -> Converted:
    """Convert between a bcolz dataset and another format (or two other formats).

    Parameters
    ----------
    src : str, os.PathLike, carray or ctable
        An open carray or ctable (stored or in memory), a bcolz rootdir
        (opened read-only), a bcolz pack (``*.zip``),
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
        The destination format, one of :func:`formats` (the registered
        converters' names).
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
    UnknownFormatError
        An unknown format name (``to=``), a name whose format cannot be
        told, or a ``to=`` other than the format the suffix of ``dst``
        names (``out.parquet`` with ``to='npz'``); a ValueError.
    RemoteFormatError
        A remote source or destination in a format that reads and writes
        local paths only (a ValueError).
    ValueError
        Overlapping ``src`` and ``dst``, ``storage_options`` without a URL,
        or data the target cannot hold without loss (see
        docs/converting.md).
    TypeError
        An unknown option, or a dtype the target cannot hold.
    MissingDependencyError
        When the optional library of a format is missing (an ImportError;
        the message names the extra to install).
    FormatError
        A malformed source.
    OSError
        When the operating system or a remote store refuses a read or write.
    """
    overwrite = bool(options.pop("overwrite", False))
    drop_attrs = bool(options.pop("drop_attrs", False))
    container = _open_source(src)
    if container is None:
        src_fmt, src_name = detect_format(src, reading=True, storage_options=storage_options), \
            str(src)
    else:
        src_fmt, src_name = HUB, _source_name(container)
    dst_fmt = to if to is not None else detect_format(dst, reading=False)
    src_conv, dst_conv = get_converter(src_fmt)(), get_converter(dst_fmt)()
    if to is not None:
        _check_suffix_agrees(dst, dst_fmt)
    if container is None or isinstance(container.rootdir, str):
        _check_apart(src if container is None else container.rootdir, dst)
    reader = src_conv.read if src_fmt != HUB else None
    writer = dst_conv.write
    read_opts, write_opts = _route(options, reader, writer, dst_fmt == HUB)
    if "drop_attrs" in inspect.signature(writer).parameters:
        write_opts["drop_attrs"] = drop_attrs
    if reader is not None and "drop_attrs" in inspect.signature(reader).parameters:
        read_opts["drop_attrs"] = drop_attrs
    src_remote, dst_path = is_remote(src), local_path(dst)
    if src_remote and not src_conv.remote:
        raise RemoteFormatError(f"{src}: {src_fmt} is read from local paths only")
    if dst_path is None and not dst_conv.remote:
        raise RemoteFormatError(f"{dst}: {dst_fmt} is written to local paths only")
    src_conv.check_available()
    dst_conv.check_available()
    if storage_options is not None:
        if not src_remote and dst_path is not None:
            raise ValueError("storage_options are for URLs (s3://...), and neither the source "
                             "nor the destination is one")
        if src_remote and reader is not None:
            read_opts["storage_options"] = storage_options
        if dst_path is None and dst_fmt != HUB:
            write_opts["storage_options"] = storage_options
    replaced = False
    if dst_path is not None:
        _check_replaceable(dst_path, dst_fmt, overwrite)
        stage = _Stage(dst_path, dst_fmt)
        target = stage.path
    elif dst_fmt == HUB:
        stage = None
        target, replaced = _remote_bcolz(dst, storage_options, overwrite)
    else:
        stage, target = None, dst
    try:
        with tempfile.TemporaryDirectory(prefix=".bcolz-store-convert-",
                                         dir=stage.folder if stage else None) as tmp:
            if container is not None:
                obj = container
            elif reader is None:
                obj = src_conv.read(src, storage_options=storage_options if src_remote else None)
            elif dst_fmt == HUB:
                obj = reader(src, target, progress=progress, **read_opts)
            else:
                obj = reader(src, os.path.join(tmp, "data.bcolz"), progress=progress,
                             **read_opts)
            kind, length = kind_of(obj), len(obj)
            if dst_fmt != HUB:
                writer(obj, target, progress=progress, **write_opts,
                       **({} if stage else {"overwrite": overwrite}))
            elif reader is None:
                writer(obj, target, progress=progress, **write_opts)
            obj = None
        written = stage.commit() if stage else [str(dst)]
    except BaseException:
        if dst_path is None and dst_fmt == HUB and not replaced:
            with contextlib.suppress(Exception):
                target.remove_root()        # what a failed copy left at the URL
        raise
    finally:
        if stage:
            stage.cleanup()
    return Converted(src_name, str(dst), src_fmt, dst_fmt, kind, length, tuple(written))
