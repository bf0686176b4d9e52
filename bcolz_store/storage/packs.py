"""Packing a dataset into one ``.zip`` file and unpacking it into a folder.

:func:`pack` reads a dataset from any store (a folder, a URL) through its
journal, so a pack holds one committed generation even while a writer
commits beside it; :func:`unpack` writes the entries back as the folder the
real bcolz opens.  The pack is read through :class:`~.zip.ZipStore`, with
its checks on entry names, sizes and CRCs.
"""

from __future__ import annotations

import os
import shutil
import stat
import zipfile

from ..errors import DatasetExistsError, DatasetNotFoundError
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR, LOCK_FILE,
                             MAX_OWN_FILE_BYTES, OWN_NAMES, TEMP_PREFIX)
from .checksums import read_limit
from .dataset import DatasetStore
from .journal import read_consistently
from .urls import open_store
from .zip import ZipStore

__all__ = ["pack", "unpack"]


def pack(src, dst, *, storage_options=None, overwrite=False) -> dict:
    """Write the dataset ``src`` into the pack ``dst`` (a ``.zip`` file).

    The committed state is packed (a commit in progress is read through);
    with a checksum file, every file is checked against it on the way.

    Parameters
    ----------
    src : str, os.PathLike or Store
        A dataset folder or URL.
    dst : str or os.PathLike
        The pack to write (``.zip``).
    storage_options : dict, optional
        For a URL ``src``.
    overwrite : bool, default False
        Replace an existing ``dst``.

    Returns
    -------
    dict
        ``{"files": number of entries, "bytes": bytes packed}``.

    Raises
    ------
    ValueError
        If ``dst`` does not end in ``.zip``.
    DatasetExistsError
        If ``dst`` exists and ``overwrite`` is false.
    DatasetNotFoundError
        If there is no dataset at ``src``.
    IntegrityError
        If a file does not match the checksum file.
    """
    dst = os.fspath(dst)
    if not dst.lower().endswith(".zip"):
        raise ValueError(f"{dst}: a pack's name ends in .zip (it is opened as a pack by that)")
    if os.path.lexists(dst) and not overwrite:
        raise DatasetExistsError(f"{dst}: exists already (pass overwrite=True to replace it)")
    store = open_store(src, True, storage_options)
    if store.root_state() != "folder":
        raise DatasetNotFoundError(f"{store.url}: no dataset here")
    view = DatasetStore(store, readonly=True, verify=True, consolidated=False)
    journal = view.journal

    def keys():
        names = set(store.list(""))
        names.update(k for k, b in journal._overlay.items() if b is not None)
        names.difference_update(k for k, b in journal._overlay.items() if b is None)
        return sorted(names)
    names = read_consistently(journal, keys)
    tmp = f"{dst}.{TEMP_PREFIX}{os.getpid()}"
    total = 0
    entries = len(names)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for key in names:
                data = view.get(key, read_limit(key))
                zf.writestr(_entry(key), data)
                total += len(data)
            view.verify = False          # our own files have no checksums of their own
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                try:
                    data = view.get(key, MAX_OWN_FILE_BYTES)
                except DatasetNotFoundError:
                    continue
                zf.writestr(_entry(key), data)
                total += len(data)
                entries += 1
        journal.check_reading()
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"files": entries, "bytes": total}


def _entry(key: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(key, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = (stat.S_IFREG | 0o644) << 16
    return info


def unpack(src, dst, *, overwrite=False) -> dict:
    """Unzip the pack ``src`` into the new folder ``dst`` (a dataset folder).

    Parameters
    ----------
    src : str or os.PathLike
        A pack written by :func:`pack`.
    dst : str or os.PathLike
        The folder to make.
    overwrite : bool, default False
        Replace an existing ``dst``.

    Returns
    -------
    dict
        ``{"files": entries written, "bytes": bytes written}``.

    Raises
    ------
    DatasetExistsError
        If ``dst`` exists and ``overwrite`` is false.
    FormatError
        If the pack holds an entry that is not a plain, stored file inside it.
    """
    pack_ = ZipStore(src)
    dst = os.fspath(dst)
    if os.path.lexists(dst):
        if not overwrite:
            raise DatasetExistsError(f"{dst}: exists already (pass overwrite=True to replace "
                                     f"it)")
        shutil.rmtree(dst) if os.path.isdir(dst) and not os.path.islink(dst) else os.unlink(dst)
    total = 0
    tmp = f"{dst}.{TEMP_PREFIX}{os.getpid()}"
    try:
        for key in sorted(pack_._entries):
            if key.split("/")[0] in (JOURNAL_DIR, LOCK_FILE):
                continue
            limit = MAX_OWN_FILE_BYTES if key.split("/")[0] in OWN_NAMES else read_limit(key)
            data = pack_.get(key, limit)
            target = os.path.join(tmp, *key.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as fh:
                fh.write(data)
            total += len(data)
        for folder in ("data", "meta"):
            if os.path.exists(os.path.join(tmp, "meta")):
                os.makedirs(os.path.join(tmp, folder), exist_ok=True)
        os.replace(tmp, dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        pack_.close()
    return {"files": len(pack_._entries), "bytes": total}
