"""Bytes by key in a local directory: the only place that touches dataset files.

Keys are ``/``-separated paths relative to a store's folder, e.g.
``"meta/sizes"`` or ``"data/__3.blp"``.  Writes are staged in the dataset's
:class:`~bcolz_store.storage.journal.Journal` and become visible on disk only
when :meth:`LocalStore.commit` makes them durable, all at once.  The columns of
a ctable are stores with a prefix (``"x/"``) sharing the table's journal, so a
change to several columns is one commit.
"""

from __future__ import annotations

import os
import shutil
import warnings

from ..errors import DatasetNotFoundError, FormatError, IntegrityError, IntegrityWarning, ReadOnlyError
from ..format.layout import TEMP_PREFIX, check_key
from .files import read_regular
from .journal import Journal, md5_hex, read_limit

__all__ = ["LocalStore", "TEMP_PREFIX"]


class LocalStore:
    """A dataset folder (carray rootdir, or a column inside a ctable rootdir).

    Parameters
    ----------
    root : str or os.PathLike
        The folder of this store.
    readonly : bool, default False
        When true every write raises :class:`ReadOnlyError`.
    journal : Journal, optional
        The dataset's journal; by default this folder's own.
    prefix : str, default ''
        This folder's path relative to the journal's root ('' or 'name/').
    verify : bool, default False
        Check each file read against the dataset's checksum file and raise
        :class:`IntegrityError` on a mismatch.
    """

    def __init__(self, root, readonly: bool = False, journal: Journal | None = None,
                 prefix: str = "", verify: bool = False):
        self.root = os.fspath(root)
        self.readonly = readonly
        self.journal = journal if journal is not None else Journal(self.root, readonly)
        self.prefix = prefix
        self.verify = verify

    @property
    def readonly(self) -> bool:
        return self._readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self._readonly = bool(value)
        journal = getattr(self, "journal", None)
        if journal is not None and not self.prefix:
            journal.readonly = self._readonly

    def sub(self, name: str, readonly: bool | None = None) -> "LocalStore":
        """The store of sub-folder ``name`` (a ctable column), sharing this journal."""
        self.path(name)
        return LocalStore(os.path.join(self.root, name), self.readonly if readonly is None
                          else readonly, self.journal, self.prefix + name + "/", self.verify)

    def path(self, key: str) -> str:
        """Absolute path of ``key``; refuses keys that would leave the root.

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        check_key(key, self.root)
        return os.path.join(self.root, *key.split("/"))

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def _check_inside(self, path: str) -> None:
        """Refuse a file that symlinks lead outside the dataset root.

        Each folder is resolved once per journal (a dataset open); the file
        itself is resolved only when it is a symlink.
        """
        journal = self.journal
        real = self._resolve(os.path.dirname(path))
        if real is not None and os.path.islink(path):
            real = self._within(journal.resolved_folders[None], os.path.realpath(path))
        if real is None:
            raise FormatError(f"{path}: leads outside the rootdir {journal.root} "
                              f"(to {os.path.realpath(path)})")

    def _resolve(self, folder: str):
        """Real path of ``folder`` if it stays inside the root, else None (memoized)."""
        resolved = self.journal.resolved_folders
        if None not in resolved:
            resolved[None] = os.path.realpath(self.journal.root)
            resolved[self.journal.root] = resolved[None]
        if folder in resolved:
            return resolved[folder]
        parent = os.path.dirname(folder)
        if parent != folder and len(parent) >= len(self.journal.root):
            base = self._resolve(parent)   # a folder below the root: one lstat each
            real = (None if base is None else
                    self._within(resolved[None], os.path.realpath(folder))
                    if os.path.islink(folder) else os.path.join(base, os.path.basename(folder)))
        else:
            real = self._within(resolved[None], os.path.realpath(folder))
        resolved[folder] = real
        return real

    @staticmethod
    def _within(root: str, real: str):
        """``real`` when it is ``root`` or below it, else None."""
        if real == root or os.path.commonpath([root, real]) == root:
            return real
        return None

    def get(self, key: str, limit: int | None = None) -> bytes:
        """Read the current content of ``key`` (staged, committed, or on disk).

        Parameters
        ----------
        key : str
        limit : int, optional
            Largest size accepted, in bytes (default: what the format allows
            for such a file, see :func:`~bcolz_store.storage.journal.read_limit`).

        Raises
        ------
        DatasetNotFoundError
            If the file does not exist (a FileNotFoundError).
        FormatError
            If ``key`` is unsafe, names a folder, a FIFO, a device or another
            non-file, is larger than ``limit``, or leads outside the rootdir
            through a symlink.
        IntegrityError
            With ``verify`` on, when the content does not match its checksum.
        """
        path = self.path(key)
        if limit is None:
            limit = read_limit(key)
        full_key = self.prefix + key
        found, blob = self.journal.lookup(full_key)
        if found and blob is None:
            raise DatasetNotFoundError(f"{path}: no such file")
        if found:
            try:
                data = read_regular(blob, limit)   # a blob is never a symlink
            except DatasetNotFoundError:           # moved into place meanwhile by the writer
                return self.get_committed(key, limit)
            if self.verify and self.journal.in_overlay(full_key):
                self.check(key, data)
            return data
        return self.get_committed(key, limit)

    def get_committed(self, key: str, limit: int | None = None) -> bytes:
        """Read ``key`` from its bcolz file on disk (see :meth:`get`)."""
        path = self.path(key)
        self._check_inside(path)
        data = read_regular(path, read_limit(key) if limit is None else limit, follow=True)
        if self.verify:
            self.check(key, data)
        return data

    def check(self, key: str, data: bytes) -> None:
        """Compare ``data`` with the recorded checksum of ``key``.

        Does nothing for a dataset without a checksum file (opening it with
        ``verify=True`` warns once, see :meth:`warn_if_unverifiable`).

        Raises
        ------
        IntegrityError
            When the checksum differs, or the file has none recorded.
        FormatError
            When the checksum file itself is unreadable.
        """
        recorded = self.journal.recorded()
        if recorded is None:
            return
        expected = recorded.get(self.prefix + key)
        if expected is None:
            raise IntegrityError(f"{self.path(key)}: no checksum recorded for this file")
        if md5_hex(data) != expected:
            raise IntegrityError(f"{self.path(key)}: content does not match its md5 checksum")

    def warn_if_unverifiable(self) -> None:
        """With ``verify`` on, warn when the dataset has no checksum file to verify against."""
        if self.verify and self.journal.recorded() is None:
            warnings.warn(f"{self.root}: verify=True, but the dataset has no checksum file "
                          f"(bcolz wrote it, or no bcolz_store commit has been made); nothing "
                          f"is verified", IntegrityWarning, stacklevel=4)

    def exists(self, key: str) -> bool:
        """True when the file ``key`` currently exists (staged, committed or on
        disk; on disk, anything at its path counts, so that reading it explains
        what is wrong when it is not a file).

        Raises
        ------
        IntegrityError
            With ``verify`` on, when the file is missing but the checksum file
            lists it.
        """
        found, blob = self.journal.lookup(self.prefix + key)
        if found:
            return blob is not None
        # Anything at the path counts (a FIFO, a device, a symlink): reading
        # it then says what is wrong, instead of the file seeming absent.
        present = os.path.lexists(self.path(key))
        if not present and self.verify:
            recorded = self.journal.recorded()
            if recorded is not None and self.prefix + key in recorded:
                raise IntegrityError(f"{self.path(key)}: missing, but the checksum file "
                                     f"lists it")
        return present

    def set(self, key: str, data) -> None:
        """Stage ``data`` (bytes-like, or a list of parts to concatenate) as the
        new content of ``key`` (visible after :meth:`commit`).

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        OSError
            If the disk refuses the write; nothing committed changes.
        """
        self._check_writable()
        self.path(key)
        self.journal.stage(self.prefix + key, data)

    def delete(self, key: str) -> None:
        """Stage the removal of file ``key``.

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        self.path(key)
        if self.exists(key):
            self.journal.stage_delete(self.prefix + key)

    def commit(self) -> None:
        """Commit everything staged in the dataset's journal (see :mod:`.journal`)."""
        self._check_writable()
        self.journal.commit()

    def makedirs(self, *folders: str) -> None:
        """Create the root and the given sub-folders."""
        self._check_writable()
        os.makedirs(self.root, exist_ok=True)
        for folder in folders:
            os.makedirs(self.path(folder), exist_ok=True)

    def listdir(self, folder: str = "") -> list:
        """Names in ``folder`` on disk (empty list when it does not exist)."""
        try:
            return os.listdir(self.path(folder) if folder else self.root)
        except FileNotFoundError:
            return []

    def remove_all(self) -> None:
        """Stage the removal of every file of this folder (part of the next commit).

        Replacing a dataset (mode 'w'), purging it, or removing a column are
        all one commit: the old files stay whole until the new state is
        committed.
        """
        self._check_writable()
        self.journal.stage_delete_all(self.prefix)
