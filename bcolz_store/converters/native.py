"""bcolz datasets themselves as a format: the side every conversion has.

Reading opens a rootdir, a ``.zip`` pack or a URL read-only (and copies it
when given a ``rootdir``); writing copies a carray or ctable with its attrs
and column attrs, and with ``strings='fixed'`` turns its vlen columns into
fixed-width ``U``/``S`` columns so that the real bcolz reads the copy
(:func:`bcolz_store.interop.fixed_width.tofixed`).
"""

from __future__ import annotations

import os

import bcolz_store
from bcolz_store.errors import DatasetExistsError
from bcolz_store.interop.columns import column_attrs
from bcolz_store.interop.fixed_width import tofixed

from ._common import is_remote, local_path, local_rootdir, progress_bar, rootdir_arg
from .base import Converter, register_converter

__all__ = ["BcolzConverter", "MARKER_NAMES", "copy_bcolz"]

#: Names in a folder or object store that make it a bcolz dataset.
MARKER_NAMES = ("__rootdirs__", "meta/sizes", "bcolz_store.json")


def copy_bcolz(obj, rootdir, mode="w", *, progress=None, strings="keep", missing=None,
               **kwargs):
    """A copy of a carray or ctable at ``rootdir``, with its attrs and column attrs.

    Parameters
    ----------
    obj : carray or ctable
    rootdir : str, os.PathLike or Store
        Where to write the copy.
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``.
    progress : bool or None, default None
        A progress bar for ``strings='fixed'`` (None: when stderr is a terminal).
    strings : {'keep', 'fixed'}, default 'keep'
        'fixed' turns vlen columns into fixed-width ``U``/``S`` columns, so
        that the real bcolz reads the copy.
    missing : str, optional
        With ``strings='fixed'``: written for missing items (default: refuse).
    **kwargs
        Other carray/ctable parameters (``cparams``, ``chunklen``...).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ValueError
        A bad ``strings``, ``missing`` without ``strings='fixed'``, or what
        :func:`~bcolz_store.interop.fixed_width.tofixed` refuses.
    """
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


@register_converter
class BcolzConverter(Converter):
    """bcolz datasets: rootdir folders (and ``.zip`` packs, read-only).

    Everything is kept: kind, dtypes, vlen and categorical columns, attrs
    and column attrs.
    """

    name = "bcolz"
    suffixes = (".bcolz",)
    description = "a rootdir folder (no suffix, or ``.bcolz``; a ``.zip`` pack to read)"
    remote = True
    folder_names = MARKER_NAMES[:2]
    noun = "bcolz dataset"
    vlen = True
    categorical = True

    def read(self, src, rootdir=None, mode="w", *, progress=None, storage_options=None,
             **kwargs):
        """Open a bcolz dataset read-only, or copy it to ``rootdir``.

        Parameters
        ----------
        src : str or os.PathLike
            A rootdir, a ``.zip`` pack or a URL.
        rootdir : str, os.PathLike or Store, optional
            Where to copy it (None: the dataset itself, opened read-only).
        mode : {'w', 'a'}, default 'w'
            'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
        progress : bool or None, default None
            Unused (the copy shows no bar).
        storage_options : dict, optional
            fsspec options for a URL.
        **kwargs
            carray/ctable parameters of the copy.

        Returns
        -------
        carray or ctable

        Raises
        ------
        DatasetNotFoundError
            When there is no dataset at ``src``.
        DatasetExistsError
            With mode 'a' when ``rootdir`` exists.
        """
        remote = is_remote(src)
        obj = bcolz_store.open(src if remote else os.fspath(local_path(src)), mode="r",
                               storage_options=storage_options if remote else None)
        if rootdir is None:
            return obj
        local = local_rootdir(rootdir)
        if mode == "a" and local is not None and os.path.lexists(local):
            raise DatasetExistsError(f"{local}: exists; use mode 'w' to replace it")
        return copy_bcolz(obj, rootdir, "w", **kwargs)

    def write(self, obj, path, *, overwrite=False, progress=None, strings="keep",
              missing=None, **kwargs):
        """Copy a carray or ctable to ``path`` (see :func:`copy_bcolz`).

        Parameters
        ----------
        obj : carray or ctable
        path : str, os.PathLike or Store
            The rootdir (or URL, or store) of the copy.
        overwrite : bool, default False
            Replace an existing local dataset.
        progress, strings, missing, **kwargs
            As :func:`copy_bcolz`.

        Returns
        -------
        carray or ctable
            The copy.

        Raises
        ------
        DatasetExistsError
            When ``path`` is a local path that exists and ``overwrite`` is
            False.
        ValueError
            As :func:`copy_bcolz`.
        """
        local = local_rootdir(path)
        if local is not None and os.path.lexists(local):
            if not overwrite:
                raise DatasetExistsError(f"{local}: exists; pass overwrite=True to replace it")
            if not self.holds(local):
                raise DatasetExistsError(f"{local}: exists and is not a bcolz dataset; not "
                                         f"replacing it")
        return copy_bcolz(obj, path, "w", progress=progress, strings=strings,
                          missing=missing, **kwargs)
