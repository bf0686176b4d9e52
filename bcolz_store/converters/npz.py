"""numpy ``.npz`` archives <-> carray/ctable.

No extra is needed: this is numpy's own format, and ``numpy.load(path,
allow_pickle=False)`` reads what is written here.  Layout of the zip
archive::

    data.npy               a carray: its values, shape (len, *atom shape)
    <name>.npy             a ctable: one member per column, in column order
    <name>.missing.npy     a vlen or categorical column that may hold None:
                           one bool per row, True for a missing item
    bcolz_store.json.npy   a 0-d unicode array holding one JSON object:
                           {"version": 1, "kind": "carray" | "ctable",
                            "names": [column order], "attrs": {...},
                            "column_attrs": {"<name>": {...}},
                            "vlen": {"<name>": vlen type | {"category": ...}},
                            "missing": {"<name>": "<name>.missing"}}

(``bcolz_store.json`` cannot clash with a column: column names are
identifiers.)  Each member is a ``.npy`` file written as ``numpy.savez``
writes it (a zip64 member, a ``numpy.lib.format`` header, then the C-order
bytes), but block by block, so neither side ever holds a whole column; with
``compressed=True`` members are deflated as by ``numpy.savez_compressed``.

Every numpy dtype a bcolz column holds is kept exactly, byte order and
string widths included; object columns are refused (they would need
pickles, which ``allow_pickle=False`` refuses to read back).  The chunklen,
cparams and dflt of the columns are not kept.

vlen and categorical columns are written without pickles: their items as
fixed-width ``U<n>`` (str) or ``S<n>`` (bytes), n the longest item, a
missing item as an empty one, with the ``.missing`` member telling them
apart; ``bcolz_store.json`` records the vlen type (or the categories), so
they come back as they were.  Other readers see the text and the mask.  An
item ending in NUL, which a fixed width cannot tell from its padding, is
refused, naming the column.

Archives written by others: without ``bcolz_store.json``, a single member
becomes a carray and several become the columns of a ctable, in archive
order.  Members holding objects raise :class:`UnsafeDataError`; truncated or
malformed members raise :class:`FormatError`.
"""

from __future__ import annotations

import contextlib
import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np

from ..kinds.category.types import category_from_json, category_to_json
from ..errors import (DatasetExistsError, DatasetNotFoundError, FormatError, UnsafeDataError,
                      raised_in)
from ..limits import check_alloc
from ..kinds.vlen.meta import vlen_result_dtype
from ..kinds.vlen.types import vlen_from_json, vlen_to_json
from ..interop.columns import block_rows, column_attrs, columns_of, kind_of
from ._common import refuse_arrow_kinds, Sink, progress_bar
from .base import Converter, register_converter

__all__ = ["META_MEMBER", "NpzConverter", "from_npz", "npz_dtype", "to_npz"]

META_MEMBER = "bcolz_store.json"
MISSING_SUFFIX = ".missing"     # beside a vlen column's member: its missing items
META_VERSION = 1
_FORMAT = np.lib.format


def npz_dtype(dtype) -> np.dtype:
    """The dtype of the ``.npy`` member holding a column of ``dtype``.

    Parameters
    ----------
    dtype : numpy.dtype
        The column's dtype.

    Returns
    -------
    numpy.dtype
        ``dtype`` itself: every non-object dtype is stored as it is.

    Raises
    ------
    TypeError
        For object dtypes (they would be pickled).
    """
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise TypeError("object columns would be pickled in a .npy file, which "
                        "numpy.load(allow_pickle=False) refuses; convert them first")
    return dtype


@contextlib.contextmanager
def _npy_member(zf, member: str, dtype: np.dtype, shape: tuple):
    """A ``.npy`` member open for its C-order bytes, its header written."""
    header = {"descr": _FORMAT.dtype_to_descr(dtype), "fortran_order": False,
              "shape": tuple(int(n) for n in shape)}
    with zf.open(f"{member}.npy", "w", force_zip64=True) as out:
        try:
            _FORMAT.write_array_header_1_0(out, header)
        except ValueError:          # a header over 64 KiB (long structured dtypes)
            _FORMAT.write_array_header_2_0(out, header)
        yield out


def _write_member(zf, name: str, col, bar) -> None:
    try:
        dtype = npz_dtype(col.dtype)
    except TypeError as err:
        raise TypeError(f"column {name!r}: {err}") from None
    with _npy_member(zf, name, dtype, col.shape) as member:
        rows = block_rows(col)
        for block in (col[start:start + rows] for start in range(0, len(col), rows)):
            member.write(np.ascontiguousarray(block).tobytes())
            bar.update(len(block))


def _items(block) -> list:
    """A block of a vlen or categorical column as a list of items (None missing)."""
    return block.tolist() if isinstance(block, np.ndarray) else list(block)


def _write_vlen_member(zf, name: str, col, missing_member, bar) -> None:
    """A vlen or categorical column as fixed-width items (and its missing mask):
    a first pass finds the width (writing the mask), a second writes the items."""
    kind = col.vlen.kind
    blen = block_rows(col)
    empty, nul = ("", "\x00") if kind == "str" else (b"", b"\x00")
    width = 1
    with contextlib.ExitStack() as stack:
        mask_out = None if missing_member is None else stack.enter_context(
            _npy_member(zf, missing_member, np.dtype("?"), (len(col),)))
        for start in range(0, len(col), blen):
            items = _items(col[start:start + blen])
            for i, item in enumerate(items):
                if item is not None and item.endswith(nul):
                    raise ValueError(f"column {name!r}: item {start + i} ends in NUL, which a "
                                     f"fixed-width .npy member cannot tell from its padding; "
                                     f"convert to Parquet, Arrow or zarr instead")
            width = max(width, max((len(v) for v in items if v is not None), default=0))
            if mask_out is not None:
                mask_out.write(np.array([v is None for v in items], dtype="?").tobytes())
    dtype = np.dtype(f"{'U' if kind == 'str' else 'S'}{width}")
    with _npy_member(zf, name, dtype, (len(col),)) as member:
        for start in range(0, len(col), blen):
            items = _items(col[start:start + blen])
            values = np.array([empty if v is None else v for v in items], dtype=dtype)
            member.write(values.tobytes())
            bar.update(len(items))


def _vlen_record(col) -> dict:
    """What ``bcolz_store.json`` records of a vlen or categorical column."""
    category = getattr(col, "category", None)
    if category is not None:
        return {"category": category_to_json(category)}
    return vlen_to_json(col.vlen)


def to_npz(obj, path, *, compressed=False, overwrite=False, progress=None):
    """Write a carray or ctable to a ``.npz`` archive, column by column.

    Parameters
    ----------
    obj : carray or ctable
    path : str or os.PathLike
    compressed : bool, default False
        Deflate the members (as ``numpy.savez_compressed``).
    overwrite : bool, default False
        Replace an existing file.
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).

    Raises
    ------
    DatasetExistsError
        When ``path`` exists and ``overwrite`` is False.
    TypeError
        For object columns (nothing is left at ``path`` then).
    ValueError
        For an item of a vlen or categorical column that ends in NUL (a
        fixed width cannot hold it).
    OSError
        When the file cannot be written.

    Notes
    -----
    Compatibility: ``numpy.load(path)`` gives ``data`` (a carray) or one
    array per column, plus ``bcolz_store.json`` (and a ``.missing`` mask for
    each vlen or categorical column that may hold None).
    """
    refuse_arrow_kinds(obj, "npz")
    path = Path(os.fspath(path))
    if os.path.lexists(path) and not overwrite:
        raise DatasetExistsError(f"{path}: exists; pass overwrite=True to replace it")
    meta = {"version": META_VERSION, "kind": kind_of(obj),
            "names": [name for name, _ in columns_of(obj)], "attrs": obj.attrs.getall(),
            "column_attrs": column_attrs(obj)}
    vlens = {name: col for name, col in columns_of(obj) if getattr(col, "vlen", None)}
    if vlens:
        meta["vlen"] = {name: _vlen_record(col) for name, col in vlens.items()}
        meta["missing"] = {name: f"{name}{MISSING_SUFFIX}" for name, col in vlens.items()
                           if col.vlen.nullable}
    method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
    try:
        with zipfile.ZipFile(path, "w", compression=method, allowZip64=True) as zf, \
                progress_bar(progress, len(obj) * len(meta["names"]), "to npz") as bar:
            for name, col in columns_of(obj):
                if name in vlens:
                    _write_vlen_member(zf, name, col, meta["missing"].get(name), bar)
                else:
                    _write_member(zf, name, col, bar)
            with zf.open(f"{META_MEMBER}.npy", "w", force_zip64=True) as member:
                _FORMAT.write_array(member, np.array(json.dumps(meta)), allow_pickle=False)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise


# --- .npz -> bcolz ------------------------------------------------------------------

class _Member:
    """One ``.npy`` member: its dtype and shape, and its rows block by block."""

    def __init__(self, zf, member: str, where: str):
        self.zf, self.member, self.where = zf, member, f"{where}: member {member}"
        with zf.open(member) as f:
            try:
                version = _FORMAT.read_magic(f)
                reader = {(1, 0): _FORMAT.read_array_header_1_0,
                          (2, 0): _FORMAT.read_array_header_2_0}.get(version)
                if reader is None:
                    raise ValueError(f"npy format version {version} is not read block by block")
                shape, fortran, dtype = reader(f)
            except (ValueError, SyntaxError, TypeError) as err:
                raise FormatError(f"{self.where}: not a .npy array: {err}") from err
            except RecursionError:
                raise FormatError(f"{self.where}: not a .npy array: its header is nested "
                                  f"too deeply") from None
            self.offset = f.tell()
        if dtype.hasobject:
            raise UnsafeDataError(f"{self.where}: holds Python objects, which would be "
                                  f"unpickled; refused (allow_pickle=False)")
        if fortran and len(shape) > 1:
            raise FormatError(f"{self.where}: Fortran-ordered arrays are not read block by "
                              f"block; save it in C order")
        if len(shape) == 0:
            raise ValueError(f"{self.where}: a 0-d array has no rows")
        self.dtype, self.shape = dtype, tuple(shape)
        self.rowbytes = int(np.prod(shape[1:], dtype=object)) * dtype.itemsize
        check_alloc(self.rowbytes, f"{self.where}: one row of {shape[1:]} {dtype}")
        expected = self.offset + shape[0] * self.rowbytes
        found = zf.getinfo(member).file_size
        if found != expected:
            raise FormatError(f"{self.where}: {found} bytes, expected {expected} for "
                              f"{shape} {dtype}")

    def blocks(self, blen: int):
        with self.zf.open(self.member) as f:
            f.seek(self.offset)
            for start in range(0, self.shape[0], blen):
                nrows = min(blen, self.shape[0] - start)
                data = f.read(nrows * self.rowbytes)
                if len(data) != nrows * self.rowbytes:
                    raise FormatError(f"{self.where}: truncated at row {start}")
                yield np.frombuffer(data, dtype=self.dtype).reshape((nrows,) + self.shape[1:])


def _read_meta(zf, stored: list, where: str) -> tuple:
    """``(meta, column members)``: the JSON of ``bcolz_store.json`` ({} without
    one) and the members that are columns (not the metadata, not masks)."""
    present = [n for n in stored if n != META_MEMBER]
    if f"{META_MEMBER}.npy" not in zf.namelist():
        return {}, present
    with zf.open(f"{META_MEMBER}.npy") as f:
        try:
            text = _FORMAT.read_array(f, allow_pickle=False)
            meta = json.loads(str(text[()]))
        except (ValueError, TypeError) as err:
            raise FormatError(f"{where}: malformed {META_MEMBER}: {err}") from err
        except RecursionError:
            raise FormatError(f"{where}: malformed {META_MEMBER}: JSON nested too "
                              f"deeply") from None
    masks = meta.get("missing", {}) if isinstance(meta, dict) else None
    if isinstance(masks, dict) and all(isinstance(m, str) for m in masks.values()):
        present = [n for n in present if n not in set(masks.values())]
    if not isinstance(meta, dict) or not isinstance(meta.get("names"), list) \
            or sorted(meta["names"]) != sorted(present) \
            or not isinstance(meta.get("attrs", {}), dict) \
            or not isinstance(meta.get("column_attrs", {}), dict) \
            or not isinstance(meta.get("vlen", {}), dict) or not isinstance(masks, dict) \
            or not set(masks) <= set(meta.get("vlen", {})) \
            or any(f"{m}.npy" not in zf.namelist() for m in masks.values()):
        raise FormatError(f"{where}: {META_MEMBER} does not describe the members {stored}")
    return meta, present


def _vlen_types(meta: dict, names: list, where: str) -> dict:
    """``{name: vlen or category type}`` of the columns ``meta`` records as such."""
    out = {}
    for name, entry in meta.get("vlen", {}).items():
        if name not in names:
            continue
        try:
            out[name] = (category_from_json(entry["category"])
                         if isinstance(entry, dict) and "category" in entry
                         else vlen_from_json(entry))
        except (TypeError, ValueError, KeyError) as err:
            raise FormatError(f"{where}: column {name!r}: bad recorded vlen type "
                              f"({err})") from err
    return out


def _vlen_block(values: np.ndarray, missing, vtype, name: str, where: str) -> np.ndarray:
    """Fixed-width items of a vlen column back as items, None where missing."""
    if values.dtype.kind != ("U" if vtype.kind == "str" else "S") or values.ndim != 1:
        raise FormatError(f"{where}: member {name}: {values.dtype} rows shaped "
                          f"{values.shape[1:]} do not hold {vtype.kind} items")
    items = values.astype(object)
    if missing is not None:
        items[missing] = None
    return items


def from_npz(path, rootdir=None, mode="w", *, kind=None, columns=None, progress=None,
             **kwargs):
    """A carray or ctable holding a ``.npz`` archive, read block by block.

    Parameters
    ----------
    path : str or os.PathLike
    rootdir : str or os.PathLike, optional
        Where to store it (None: in memory).
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
    kind : {None, 'carray', 'ctable'}, default None
        None: as recorded in ``bcolz_store.json``; else a carray for a
        single member (unless ``columns`` is given) and a ctable otherwise.
    columns : list of str, optional
        Members to take as columns, in this order.
    progress : bool or None, default None
        A progress bar on stderr (None: when stderr is a terminal).
    **kwargs
        Other carray/ctable parameters (``cparams``, ``chunklen``...).

    Returns
    -------
    carray or ctable

    Raises
    ------
    DatasetNotFoundError
        When ``path`` does not exist.
    LimitError
        A member whose one row is more than this process can allocate.
    FormatError
        Not a zip archive, an archive with no arrays, a malformed (JSON
        nested too deeply included) or truncated member, or a
        ``bcolz_store.json`` that does not match the members.
    UnsafeDataError
        A member holding Python objects.
    ValueError
        Members of different lengths, 0-d members, names that are not
        identifiers, a bad ``mode`` or ``kind``.
    KeyError
        An unknown name in ``columns``.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    """
    where = os.fspath(path)
    if not os.path.isfile(where):
        raise DatasetNotFoundError(f"{where}: no such file")
    try:
        zf = zipfile.ZipFile(where)
    except zipfile.BadZipFile as err:
        raise FormatError(f"{where}: not an .npz (zip) archive: {err}") from err
    try:
        with zf:
            stored = [n[:-4] for n in zf.namelist() if n.endswith(".npy")]
            if not stored:
                raise FormatError(f"{where}: an .npz archive that holds no arrays (no .npy "
                                  f"members)")
            meta, present = _read_meta(zf, stored, where)
            names = meta.get("names", present)
            if columns is not None:
                missing = [c for c in columns if c not in present]
                if missing:
                    raise KeyError(f"{where}: no members {missing}")
                names = list(columns)
            vlens = _vlen_types(meta, names, where)
            members = {name: _Member(zf, f"{name}.npy", where) for name in names}
            masks = {name: _Member(zf, f"{meta['missing'][name]}.npy", where)
                     for name in vlens if name in meta.get("missing", {})}
            lengths = {name: m.shape[0] for name, m in {**members, **{
                f"{n}{MISSING_SUFFIX}": m for n, m in masks.items()}}.items()}
            if len(set(lengths.values())) > 1:
                raise ValueError(f"{where}: members of different lengths {lengths} are not a table")
            kind = kind or meta.get("kind") or \
                ("carray" if len(names) == 1 and columns is None else "ctable")
            atoms = {name: vlen_result_dtype(vlens[name].kind, vlens[name].nullable)
                     if name in vlens else
                     np.dtype((m.dtype, m.shape[1:])) if len(m.shape) > 1 else m.dtype
                     for name, m in members.items()}
            nrows = next(iter(lengths.values()), 0)
            blen = max(1, (16 << 20) // max(sum(m.rowbytes for m in members.values()), 1))
            with Sink(kind, atoms, rootdir, mode, expectedlen=nrows, dtypes=vlens,
                      **kwargs) as sink, \
                    progress_bar(progress, nrows, f"from {os.path.basename(where)}") as bar:
                mask_blocks = {name: m.blocks(blen) for name, m in masks.items()}
                for blocks in zip(*(m.blocks(blen) for m in members.values())):
                    blocks = [_vlen_block(block, next(mask_blocks[name])
                                          if name in mask_blocks else None,
                                          vlens[name], name, where)
                              if name in vlens else block
                              for name, block in zip(members, blocks)]
                    sink.append(blocks)
                    bar.update(len(blocks[0]))
                col_attrs = {n: a for n, a in (meta.get("column_attrs") or {}).items()
                             if n in names and kind == "ctable"}
                return sink.finish(meta.get("attrs") or {}, col_attrs)
    except (zipfile.BadZipFile, zlib.error, EOFError) as err:   # damaged members
        raise FormatError(f"{where}: a damaged member: {err}") from err
    except OSError as err:
        if raised_in(err) != os.path.abspath(zipfile.__file__):   # writing failed: the OS's error
            raise
        raise FormatError(f"{where}: a damaged member (an offset outside the file: "
                          f"{err})") from err


@register_converter
class NpzConverter(Converter):
    """numpy ``.npz`` archives, one member per column (:func:`from_npz`,
    :func:`to_npz`)."""

    name = "npz"
    suffixes = (".npz",)
    description = "a numpy archive"
    vlen = True
    categorical = True
    read = staticmethod(from_npz)
    write = staticmethod(to_npz)
