"""From what a user passes as ``rootdir`` to a :class:`~.base.Store`.

* a :class:`~.base.Store` instance: used as it is;
* a path (``str`` or ``os.PathLike``) or a ``file://`` URL: a
  :class:`~.local.LocalStore`;
* a path ending in ``.zip``: a read-only :class:`~.zip.ZipStore` (a pack made
  by ``bcolz-store pack``);
* any other URL (``s3://bucket/x.bcolz``, ``gs://...``, ``memory://...``,
  ``http(s)://...``): an :class:`~.fsspec.FsspecStore`, with ``storage_options``
  passed to fsspec.
"""

from __future__ import annotations

import os
import re

from .base import Store

__all__ = ["describe_rootdir", "is_url", "open_store", "portable_rootdir"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(rootdir) -> bool:
    """True for a string that starts with a URL scheme (``s3://``...)."""
    return isinstance(rootdir, str) and bool(_URL.match(rootdir))


def describe_rootdir(rootdir) -> str:
    """``rootdir`` as text for messages and attributes (a path, a URL, or a store's URL)."""
    if isinstance(rootdir, Store):
        return rootdir.url
    return os.fspath(rootdir)


def open_store(rootdir, readonly: bool = False, storage_options=None) -> Store:
    """The store for ``rootdir``.

    Parameters
    ----------
    rootdir : str, os.PathLike or Store
        A store is returned as it is.
    readonly : bool, default False
        For a path or URL: a store that refuses writes.
    storage_options : dict, optional
        Passed to fsspec for URLs (credentials, endpoint...).

    Returns
    -------
    Store

    Raises
    ------
    ValueError
        For ``storage_options`` with a local path, or an unknown scheme.
    ImportError
        For a URL when fsspec (or the scheme's package, such as s3fs) is not
        installed; the message names the extra to install.
    """
    if isinstance(rootdir, Store):
        # As it is: other datasets and writers may share it (a reader's
        # DatasetStore never writes; marking the store read-only here made
        # every later writer on it fail).
        return rootdir
    text = os.fspath(rootdir)
    if is_url(text) and not text.startswith("file://"):
        from .fsspec import FsspecStore
        return FsspecStore(text, readonly=readonly, storage_options=storage_options)
    if storage_options:
        raise ValueError(f"{text}: storage_options are for URLs (s3://...), not local paths")
    if text.startswith("file://"):
        text = text[len("file://"):]
    if text.endswith(".zip") and os.path.isfile(text):
        from .zip import ZipStore
        return ZipStore(text)
    from .local import LocalStore
    return LocalStore(text, readonly)


def portable_rootdir(rootdir, storage_options=None):
    """``(rootdir, storage_options)`` that open ``rootdir`` in another process,
    or None when it is a store whose bytes are in this process only.

    Parameters
    ----------
    rootdir : str, os.PathLike or Store
    storage_options : dict, optional
        Those given with a URL.
    """
    if isinstance(rootdir, Store):
        return rootdir.portable()
    text = os.fspath(rootdir)
    if text.startswith("memory://"):
        return None
    return (text, storage_options)
