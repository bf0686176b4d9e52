"""A dataset packed in one ``.zip`` file, as a read-only :class:`~.base.Store`.

``bcolz-store pack DIR OUT.zip`` (:func:`~.packs.pack`) writes every file of a
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

from ..errors import DatasetNotFoundError, FormatError
from ..format.layout import OWN_NAMES, TEMP_PREFIX, check_key
from .base import Store

__all__ = ["ZipStore"]


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

    def portable(self):
        return (self.url, None)

    def close(self):
        self._zip.close()
