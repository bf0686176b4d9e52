"""Bytes by key in a local directory: the only place that touches files.

Keys are ``/``-separated paths relative to the store's root, e.g.
``"meta/sizes"`` or ``"data/__3.blp"``.  Writes go to a temporary name in the
same folder and are moved into place with :func:`os.replace`, so a reader
never sees a half-written file.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from ..errors import DatasetNotFoundError, FormatError, ReadOnlyError

__all__ = ["LocalStore", "TEMP_PREFIX"]

# Temporary files carry this prefix; bcolz ignores them (it reads only the
# files it names) and so do we.
TEMP_PREFIX = ".tmp-"


class LocalStore:
    """A directory holding one bcolz dataset (carray or ctable rootdir).

    Parameters
    ----------
    root : str or os.PathLike
        The rootdir.
    readonly : bool, default False
        When true every write raises :class:`ReadOnlyError`.
    """

    def __init__(self, root, readonly: bool = False):
        self.root = os.fspath(root)
        self.readonly = readonly

    def path(self, key: str) -> str:
        """Absolute path of ``key``; refuses keys that would leave the root.

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        parts = key.split("/")
        if key.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise FormatError(f"{self.root}: unsafe key {key!r}")
        return os.path.join(self.root, *parts)

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def get(self, key: str) -> bytes:
        """Read the whole file ``key``.

        Raises
        ------
        DatasetNotFoundError
            If the file does not exist (a FileNotFoundError).
        FormatError
            If ``key`` is unsafe, or the file is a symlink leaving the root.
        """
        path = self.path(key)
        if os.path.islink(path) and not os.path.realpath(path).startswith(
                os.path.realpath(self.root) + os.sep):
            raise FormatError(f"{path}: symlink leads outside the rootdir")
        try:
            with open(path, "rb") as fh:
                return fh.read()
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{path}: no such file") from err
        except IsADirectoryError as err:
            raise FormatError(f"{path}: expected a file, found a directory") from err

    def exists(self, key: str) -> bool:
        """True when the file ``key`` exists."""
        return os.path.isfile(self.path(key))

    def set(self, key: str, data: bytes) -> None:
        """Write ``data`` as file ``key`` atomically (temp file, then replace).

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        OSError
            If the disk refuses the write; the old file is then left intact.
        """
        self._check_writable()
        path = self.path(key)
        folder = os.path.dirname(path)
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def delete(self, key: str) -> None:
        """Remove file ``key`` if it exists.

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        try:
            os.unlink(self.path(key))
        except FileNotFoundError:
            pass

    def makedirs(self, *folders: str) -> None:
        """Create the root and the given sub-folders."""
        self._check_writable()
        os.makedirs(self.root, exist_ok=True)
        for folder in folders:
            os.makedirs(self.path(folder), exist_ok=True)

    def listdir(self, folder: str = "") -> list:
        """Names in ``folder`` (empty list when it does not exist)."""
        try:
            return os.listdir(self.path(folder) if folder else self.root)
        except FileNotFoundError:
            return []

    def remove_all(self) -> None:
        """Delete the whole rootdir."""
        self._check_writable()
        if os.path.isdir(self.root) and not os.path.islink(self.root):
            shutil.rmtree(self.root)
        elif os.path.lexists(self.root):
            os.unlink(self.root)
