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
import uuid
import zipfile

from ..errors import DatasetExistsError, DatasetNotFoundError, FormatError
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR, LOCK_FILE,
                             MAX_OWN_FILE_BYTES, OWN_NAMES, ROOTDIRS_FILE, TEMP_PREFIX)
from .checksums import read_limit
from .dataset import DatasetStore
from .urls import open_store
from .zip import ZipStore

__all__ = ["pack", "unpack"]

# A pack holds a dataset when it holds one of these at its root: a carray's
# meta/sizes, a ctable's __rootdirs__, or the consolidated metadata.
DATASET_FILES = ("meta/sizes", ROOTDIRS_FILE, CONSOLIDATED_FILE)


def pack(src, dst, *, storage_options=None, overwrite=False, progress=None) -> dict:
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
    progress : callable, optional
        Called as ``progress('pack', done, total)`` after each file packed.

    Returns
    -------
    dict
        ``{"files": number of entries, "bytes": bytes packed}``.

    Raises
    ------
    ValueError
        If ``dst`` does not end in ``.zip``.
    DatasetExistsError
        If ``dst`` exists and ``overwrite`` is false, or ``dst`` is not a
        regular file (a folder, a link or a device is never replaced).
    DatasetNotFoundError
        If there is no dataset at ``src``.
    IntegrityError
        If a file does not match the checksum file.
    """
    dst = os.fspath(dst)
    if not dst.lower().endswith(".zip"):
        raise ValueError(f"{dst}: a pack's name ends in .zip (it is opened as a pack by that)")
    if os.path.lexists(dst):
        if not overwrite:
            raise DatasetExistsError(f"{dst}: exists already (pass overwrite=True to replace it)")
        if not stat.S_ISREG(os.lstat(dst).st_mode):
            raise DatasetExistsError(f"{dst}: exists and is not a file; not replacing it")
    store = open_store(src, True, storage_options)
    if store.root_state() != "folder":
        raise DatasetNotFoundError(f"{store.url}: no dataset here")
    view = DatasetStore(store, readonly=True, verify=True, consolidated=False)
    state = view.journal.state

    def keys():
        names = set(store.list(""))
        names.update(k for k, b in state.overlay.items() if b is not None)
        names.difference_update(k for k, b in state.overlay.items() if b is None)
        return sorted(names)
    names = state.read_consistently(keys)
    tmp = f"{dst}.{TEMP_PREFIX}{os.getpid()}"
    total = 0
    entries = len(names)
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for done, key in enumerate(names, 1):
                data = view.get(key, read_limit(key))
                zf.writestr(_entry(key), data)
                total += len(data)
                if progress is not None:
                    progress("pack", done, len(names))
            view.verify = False          # our own files have no checksums of their own
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                try:
                    data = view.get(key, MAX_OWN_FILE_BYTES)
                except DatasetNotFoundError:
                    continue
                zf.writestr(_entry(key), data)
                total += len(data)
                entries += 1
        state.check_reading()
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


def unpack(src, dst, *, overwrite=False, progress=None) -> dict:
    """Unzip the pack ``src`` into the new folder ``dst`` (a dataset folder).

    Every entry is checked before anything is written (its name, that it is
    a stored, unencrypted file and not a link, its sizes; see
    :mod:`~.zip`).  The files are written into a new folder beside ``dst``
    (``<dst>.tmp-<pid>-<random>``), which becomes ``dst`` when all are
    written and is removed when anything fails: nothing is written outside
    ``dst`` and that folder, and a failed unpack leaves neither behind (nor,
    with ``overwrite``, touches the folder it would have replaced).

    Parameters
    ----------
    src : str or os.PathLike
        A pack written by :func:`pack`.
    dst : str or os.PathLike
        The folder to make.
    overwrite : bool, default False
        Replace an existing ``dst``.
    progress : callable, optional
        Called as ``progress('unpack', done, total)`` after each file written.

    Returns
    -------
    dict
        ``{"files": entries written, "bytes": bytes written}``.

    Raises
    ------
    DatasetNotFoundError
        If there is no file ``src``.
    DatasetExistsError
        If ``dst`` exists and ``overwrite`` is false (or appears while
        unpacking), or ``dst`` is not a bcolz dataset folder (a file, a link
        or any other folder is never replaced).
    FormatError
        If ``src`` is not a zip file, holds no dataset's files, or holds an
        entry that is not a plain, stored file inside it (named in the
        message).
    LimitError
        If an entry is larger than this process can allocate.
    OSError
        If the operating system refuses a write (naming the file).
    """
    pack_ = ZipStore(src)
    try:
        return _unpack(pack_, os.fspath(src), os.fspath(dst), overwrite, progress)
    finally:
        pack_.close()


def _unpack(pack_, src: str, dst: str, overwrite: bool, progress=None) -> dict:
    if not dst or not os.path.basename(os.path.normpath(dst)) or \
            os.path.basename(os.path.normpath(dst)) in (".", ".."):
        raise ValueError(f"{dst!r}: not a folder name to unpack into")
    dst = os.path.abspath(dst)
    if os.path.lexists(dst):
        if not overwrite:
            raise DatasetExistsError(f"{dst}: exists already (pass overwrite=True to replace it)")
        if not _is_dataset_folder(dst):
            raise DatasetExistsError(f"{dst}: exists and is not a bcolz dataset; not replacing it")
    keys = []
    for key in sorted(pack_._entries):
        top = key.split("/")[0]
        if top in (JOURNAL_DIR, LOCK_FILE) or key.rpartition("/")[2].startswith(TEMP_PREFIX):
            continue
        limit = MAX_OWN_FILE_BYTES if top in OWN_NAMES else read_limit(key)
        info = pack_._info(key)          # encrypted, compressed, links, sizes: before writing
        if info.file_size > limit:
            raise FormatError(f"{pack_.path(key)}: holds {info.file_size} bytes, more than "
                              f"the {limit} such a file may hold")
        keys.append((key, limit))
    if not any(k in DATASET_FILES for k, _ in keys):
        raise FormatError(f"{src}: holds no dataset (no {' or '.join(DATASET_FILES)} entry)")
    parent = os.path.dirname(dst)
    os.makedirs(parent, exist_ok=True)
    tmp = f"{dst}{TEMP_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.mkdir(tmp)
    total = 0
    try:
        for done, (key, limit) in enumerate(keys, 1):
            data = pack_.get(key, limit)
            target = os.path.join(tmp, *key.split("/"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "xb") as fh:
                fh.write(data)
            total += len(data)
            if progress is not None:
                progress("unpack", done, len(keys))
        if os.path.exists(os.path.join(tmp, "meta")):
            for folder in ("data", "meta"):
                os.makedirs(os.path.join(tmp, folder), exist_ok=True)
        _move_into_place(tmp, dst, overwrite)
    finally:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return {"files": len(keys), "bytes": total}


def _is_dataset_folder(path: str) -> bool:
    """Whether ``path`` is a folder (not a link) holding one of ``DATASET_FILES``."""
    return os.path.isdir(path) and not os.path.islink(path) and \
        any(os.path.isfile(os.path.join(path, *name.split("/"))) for name in DATASET_FILES)


def _move_into_place(tmp: str, dst: str, overwrite: bool) -> None:
    """Rename the folder ``tmp`` to ``dst``, replacing what is there with
    ``overwrite`` (moved aside first, removed once ``tmp`` is in place)."""
    old = None
    if os.path.lexists(dst):
        if not overwrite:
            raise DatasetExistsError(f"{dst}: exists already (pass overwrite=True to replace "
                                     f"it)")
        old = f"{tmp}-old"
        os.rename(dst, old)
    try:
        os.rename(tmp, dst)
    except OSError as err:
        if old is not None:
            os.rename(old, dst)
        if os.path.lexists(dst):
            raise DatasetExistsError(f"{dst}: appeared while unpacking") from err
        raise
    if old is not None:
        if os.path.isdir(old) and not os.path.islink(old):
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.unlink(old)
