"""A dataset packed in one ``.zip`` file, as a read-only :class:`~.base.Store`.

``bcolz-store pack DIR OUT.zip`` (:func:`pack`) writes every file of a
dataset as a zip entry, *stored* (not recompressed: chunk files are Blosc
data already), at the path it has in the folder, so unzipping gives a folder
the real bcolz opens; the checksum file and the consolidated metadata go in
too, so ``verify`` works on a pack.  This answers bcolz issue #328 (300 MB of
CSV became 300,000 files): one file to copy, one file for a file system to
hold.

Reading a pack from anyone is as safe as reading a folder: only stored
entries are read (a compressed entry could be a zip bomb), each within the
size its name allows, entries whose names could leave the root or that are
symlinks are refused, and Python's zipfile checks each entry's CRC.
"""

from __future__ import annotations

import os
import stat
import threading
import zipfile

from ..errors import DatasetExistsError, DatasetNotFoundError, FormatError
from ..format.layout import JOURNAL_DIR, LOCK_FILE, OWN_NAMES, TEMP_PREFIX, check_key
from .base import Store

__all__ = ["ZipStore", "pack", "unpack"]


class ZipStore(Store):
    """A ``.zip`` pack of one dataset (read-only).

    Parameters
    ----------
    path : str or os.PathLike
        The pack.

    Raises
    ------
    DatasetNotFoundError
        If there is no such file.
    FormatError
        If it is not a zip file.
    """

    def __init__(self, path):
        path = os.fspath(path)
        super().__init__(path, readonly=True)
        try:
            self._zip = zipfile.ZipFile(path, "r")
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{path}: no such pack") from err
        except (zipfile.BadZipFile, OSError) as err:
            raise FormatError(f"{path}: not a zip pack ({err})") from err
        self._lock = threading.Lock()
        self._entries = {}
        for info in self._zip.infolist():
            name = info.filename
            if info.is_dir():
                continue
            try:
                check_key(name, path)
            except FormatError as err:
                raise FormatError(f"{path}: entry {name!r:.80} could leave the dataset") from err
            self._entries[name] = info

    def path(self, key: str) -> str:
        check_key(key, self.url)
        return f"{self.url}!{key}"

    def _info(self, key: str):
        self.path(key)
        info = self._entries.get(key)
        if info is None:
            raise DatasetNotFoundError(f"{self.path(key)}: no such entry")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise FormatError(f"{self.path(key)}: a symlink entry (packs hold only files)")
        if info.compress_type != zipfile.ZIP_STORED:
            raise FormatError(f"{self.path(key)}: a compressed entry (packs store their "
                              f"entries as they are)")
        return info

    def get(self, key, limit):
        info = self._info(key)
        if info.file_size > limit:
            raise FormatError(f"{self.path(key)}: holds {info.file_size} bytes, more than the "
                              f"{limit} such a file may hold")
        try:
            with self._lock:
                return self._zip.read(info)
        except (zipfile.BadZipFile, OSError, ValueError) as err:
            raise FormatError(f"{self.path(key)}: cannot be read ({err})") from err

    def exists(self, key):
        self.path(key)
        return key in self._entries

    def size(self, key):
        try:
            return self._info(key).file_size
        except DatasetNotFoundError:
            return None

    def identity(self, key):
        info = self._entries.get(key)
        return None if info is None else (info.CRC, info.file_size)

    def list(self, prefix=""):
        return sorted(k for k in self._entries if k.startswith(prefix)
                      and not any(p in OWN_NAMES for p in k.split("/"))
                      and not k.rpartition("/")[2].startswith(TEMP_PREFIX))

    def list_times(self, prefix):
        import time
        return {k: time.mktime(info.date_time + (0, 0, -1))
                for k, info in self._entries.items() if k.startswith(prefix)}

    def root_state(self):
        return "folder" if self._entries else "missing"

    def put(self, key, data):
        self._check_writable()

    def delete(self, key):
        self._check_writable()

    def close(self):
        self._zip.close()


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
    DatasetExistsError
        If ``dst`` exists and ``overwrite`` is false.
    DatasetNotFoundError
        If there is no dataset at ``src``.
    IntegrityError
        If a file does not match the checksum file.
    """
    from .checksums import read_limit
    from .dataset import DatasetStore
    from .journal import read_consistently
    from .urls import open_store
    from ..format.layout import CHECKSUM_FILE, CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES
    dst = os.fspath(dst)
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
        journal.check_reading()
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return {"files": len(names), "bytes": total}


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
    import shutil
    from .checksums import read_limit
    from ..format.layout import MAX_OWN_FILE_BYTES
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
