"""What the format converters of :mod:`bcolz_store.converters` share.

- :func:`progress_bar`: a tqdm bar on stderr, or nothing;
- :class:`Sink`, which builds a carray or ctable from blocks of exactly its
  dtypes and removes what it built when the conversion fails;
- :func:`check_attrs_kept`, the refusal to drop attrs silently;
- :func:`is_remote`, :func:`local_path`, :func:`rootdir_arg` and
  :func:`local_rootdir`, for locations given as paths or URLs.

A carray or ctable as columns read in blocks (``columns_of``, ``block_rows``...)
is :mod:`bcolz_store.interop.columns`, which the fixed-width copy shares; the
lazy import of an optional library (``require``) is :mod:`.base`.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np

import bcolz_store
from bcolz_store.errors import DatasetExistsError
from bcolz_store.interop.columns import column_attrs
from bcolz_store.storage.base import Store
from bcolz_store.storage.urls import open_store

__all__ = ["Sink", "check_attrs_kept", "destination_kwargs", "is_remote", "local_path",
           "local_rootdir", "progress_bar", "refuse_arrow_kinds", "rootdir_arg"]


# --- progress bars -------------------------------------------------------------------

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


# --- attrs and building containers ----------------------------------------------

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
    rootdir : str, os.PathLike or Store, optional
        Where to build it (None: in memory): a path, a URL or a store.
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``; 'a' refuses an existing local
        one.
    expectedlen : int, optional
        Expected number of rows (chooses chunklen, as in bcolz).
    dtypes : dict of str to vlen, optional
        Columns of items of any length: name -> :class:`~bcolz_store.vlen`
        (their blocks are lists or object arrays, converted by the column).
    nullable : collection of str, optional
        Nullable columns (their blocks are masked arrays).
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
    ``rootdir`` is removed (from a store or URL too, as far as it lets).
    Blocks must match exactly because ``ctable.append`` casts silently (it
    truncates longer strings).
    """

    def __init__(self, kind, atoms, rootdir=None, mode="w", expectedlen=None, dtypes=None,
                 nullable=(), **kwargs):
        if mode not in ("w", "a"):
            raise ValueError(f"mode must be 'w' or 'a', not {mode!r}")
        if kind not in ("carray", "ctable"):
            raise ValueError(f"kind must be 'carray' or 'ctable', not {kind!r}")
        if kind == "carray" and len(atoms) != 1:
            raise ValueError(f"a carray holds one column, not {len(atoms)}: {list(atoms)}")
        self.rootdir = rootdir_arg(rootdir)
        local = local_rootdir(self.rootdir)
        if local is not None and mode == "a" and os.path.lexists(local):
            raise DatasetExistsError(f"{local}: exists; use mode 'w' to replace it")
        self.atoms = dict(atoms)
        self.vlens = dict(dtypes or {})
        empty = [np.ma.MaskedArray(np.empty(0, dtype=atom)) if name in nullable else
                 np.empty(0, dtype=atom) for name, atom in self.atoms.items()]
        kwargs.setdefault("expectedlen", max(int(expectedlen or 0), 1))
        self.storage_options = kwargs.get("storage_options")
        if self.rootdir is not None:
            kwargs.update(rootdir=self.rootdir, mode="w")
        if self.vlens:
            if "dtype" in kwargs:
                raise ValueError("dtype cannot be given for a conversion with vlen columns")
            kwargs["dtype"] = (self.vlens if kind == "ctable"
                               else next(iter(self.vlens.values())))
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
            local = local_rootdir(self.rootdir)
            if local is not None:
                shutil.rmtree(local, ignore_errors=True)
            else:
                with contextlib.suppress(Exception):
                    store = self.rootdir if isinstance(self.rootdir, Store) else \
                        open_store(self.rootdir, False, self.storage_options)
                    store.remove_root()
        return False

    def append(self, blocks: list) -> None:
        """Append one block per column (in column order), all of one length."""
        for (name, atom), block in zip(self.atoms.items(), blocks):
            if name in self.vlens:
                continue            # converted strictly by the vlen column
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
        if attrs:
            self.obj.attrs.update(attrs)
        if isinstance(self.obj, bcolz_store.ctable):
            for name, values in (col_attrs or {}).items():
                if values:
                    self.obj.cols[name].attrs.update(values)
        self.obj.flush()
        return self.obj


# --- locations --------------------------------------------------------------------

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_remote(location) -> bool:
    """True for a URL other than ``file://`` (read through pyarrow.fs or fsspec)."""
    return isinstance(location, str) and bool(_URL.match(location)) \
        and not location.lower().startswith("file://")


def rootdir_arg(rootdir):
    """``rootdir`` as the carray and ctable constructors take it: None, a
    :class:`~bcolz_store.storage.base.Store` as it is, else a path or URL string."""
    if rootdir is None or isinstance(rootdir, Store):
        return rootdir
    return os.fspath(rootdir)


def local_rootdir(rootdir):
    """The local path of a rootdir given as a path or ``file://`` URL; None for
    None, a store or a remote URL."""
    if rootdir is None or isinstance(rootdir, Store):
        return None
    return local_path(os.fspath(rootdir))


def local_path(location):
    """A local ``Path`` for a path or ``file://`` URL; None for a remote URL."""
    if is_remote(location):
        return None
    if isinstance(location, str) and location.lower().startswith("file://"):
        return Path(urllib.request.url2pathname(urllib.parse.urlparse(location).path))
    return Path(os.fspath(location))


def refuse_arrow_kinds(obj, fmt: str) -> None:
    """Refuse, naming the column, a column of a kind only Arrow and Parquet keep
    (nullable, list or map, struct, decimal), before ``fmt`` writes anything:
    ``fmt`` has no place for its missing items or its items' type, and writing
    the values alone would lose them.

    Raises
    ------
    TypeError
        For the first such column.
    """
    from bcolz_store.interop.columns import columns_of
    for name, col in columns_of(obj):
        if getattr(col, "listtype", None) is not None:
            kind = "a list or map column"
        elif getattr(col, "column_type", None) is not None:
            kind = f"a {type(col.column_type).__name__} column"
        elif getattr(col, "nullable", False):
            kind = "a nullable column (its missing items)"
        else:
            continue
        raise TypeError(f"column {name!r}: {fmt} cannot hold {kind}; write Parquet or Arrow "
                        f"IPC, which keep it exactly")


def destination_kwargs(rootdir, storage_options, kwargs) -> dict:
    """The constructor arguments of the dataset a ``from_*`` reader writes: a URL
    ``rootdir`` takes the reader's ``storage_options`` unless it has its own."""
    if storage_options is not None and isinstance(rootdir, str) and "://" in rootdir \
            and local_path(rootdir) is None and "storage_options" not in kwargs:
        return {**kwargs, "storage_options": storage_options}
    return kwargs
