"""One dataset (a carray, a ctable, or a column of one) as its containers see it.

A :class:`DatasetStore` is a view of a :class:`~.base.Store` through the
dataset's :class:`~.journal.Journal`: reads see this writer's staged changes,
or (for a reader) a committed but unapplied commit; writes are staged and
become visible only when :meth:`DatasetStore.commit` commits them, all at
once.  The columns of a ctable are views with a prefix (``"x/"``) sharing the
table's journal, so a change to several columns is one commit.

With ``verify=True`` every file read is checked against the dataset's checksum
file.  On a remote store a reader checks every chunk it reads against the
checksum file anyway (an md5 costs less than a request): that is how it
notices a writer's commit without asking the store before each read.
"""

from __future__ import annotations

import warnings

from ..errors import (DatasetChangedError, DatasetNotFoundError, FormatError, IntegrityError,
                      IntegrityWarning, ReadOnlyError)
from ..format.layout import check_key, is_metadata_key
from .base import Store
from .checksums import md5_hex, md5_parts, read_limit
from .journal import Journal

__all__ = ["DatasetStore"]


class DatasetStore:
    """A dataset folder (carray rootdir, or a column inside a ctable rootdir).

    Parameters
    ----------
    store : Store
        The store of the dataset's root.
    readonly : bool, default False
        When true every write raises :class:`ReadOnlyError`.
    journal : Journal, optional
        The dataset's journal; by default a new one for ``store``.
    prefix : str, default ''
        This folder's key relative to the root ('' or 'name/').
    verify : bool, default False
        Check each file read against the dataset's checksum file and raise
        :class:`IntegrityError` on a mismatch.
    consolidated : bool, optional
        Read metadata from the consolidated metadata file (default: on
        remote stores).
    """

    def __init__(self, store: Store, readonly: bool = False, journal: Journal | None = None,
                 prefix: str = "", verify: bool = False, consolidated: bool | None = None):
        readonly = readonly or store.readonly      # a pack, an http URL: never written
        self.store = store
        self.prefix = prefix
        self.journal = journal if journal is not None else Journal(store, readonly,
                                                                   consolidated=consolidated)
        self.readonly = readonly
        self.verify = verify
        self.root = store.path(prefix.rstrip("/")) if prefix else store.url
        # A remote reader checks chunk contents instead of asking the store
        # whether a commit happened before each read.
        self.check_contents = store.remote

    @property
    def readonly(self) -> bool:
        return self._readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self._readonly = bool(value)
        if not self.prefix:
            self.journal.readonly = self._readonly

    @property
    def local_root(self):
        """The dataset's folder on a local disk (None on other stores)."""
        root = getattr(self.store, "root", None)
        return None if root is None else (self.store.path(self.prefix.rstrip("/"))
                                          if self.prefix else root)

    def state(self) -> str:
        """``"missing"`` (nothing stored for this dataset), ``"folder"``, or
        ``"other"`` (a local file where its folder should be)."""
        if not self.prefix:
            return self.store.root_state()
        is_folder = getattr(self.store, "is_folder", None)
        if is_folder is not None:
            return "folder" if is_folder(self.prefix.rstrip("/")) else (
                "other" if self.store.exists(self.prefix.rstrip("/")) else "missing")
        return "folder" if self.store.list(self.prefix) else "missing"

    def check_column(self, name: str) -> None:
        """Check that column ``name`` of this table is stored inside it.

        Raises
        ------
        FormatError
            When its folder leads outside the table's root (or to the root
            itself) through a symlink.
        DatasetNotFoundError
            When it is missing.
        """
        path = self.path(name)
        check_inside = getattr(self.store, "check_inside", None)
        if check_inside is not None:
            import os
            real = os.path.realpath(path)
            if real == os.path.realpath(self.store.path(self.prefix.rstrip("/"))
                                        if self.prefix else self.store.url):
                raise FormatError(f"{path}: column '{name}' leads outside the rootdir "
                                  f"{self.root} (to {real})")
            check_inside(path)
            if not os.path.isdir(path):
                raise DatasetNotFoundError(f"{path}: column '{name}' listed in "
                                           f"__rootdirs__ is missing")
            return
        if not (self.exists(f"{name}/meta/sizes") or self.exists(f"{name}/meta/storage")):
            raise DatasetNotFoundError(f"{path}: column '{name}' listed in __rootdirs__ "
                                       f"is missing")

    def sub(self, name: str, readonly: bool | None = None) -> "DatasetStore":
        """The view of sub-folder ``name`` (a ctable column), sharing this journal."""
        check_key(name, self.root)
        out = DatasetStore.__new__(DatasetStore)
        out.store = self.store
        out.prefix = self.prefix + name + "/"
        out.journal = self.journal
        out._readonly = self.readonly if readonly is None else bool(readonly)
        out.verify = self.verify
        out.root = self.store.path(out.prefix.rstrip("/"))
        out.check_contents = self.check_contents
        return out

    def path(self, key: str) -> str:
        """Where ``key`` of this dataset is, for messages.

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        return self.store.path(self.prefix + key)

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    # ------------------------------------------------------------ reading

    def get(self, key: str, limit: int | None = None) -> bytes:
        """Read the current content of ``key`` (staged, committed, or stored).

        Parameters
        ----------
        key : str
        limit : int, optional
            Largest size accepted, in bytes (default: what the format allows
            for such a file, see :func:`~.checksums.read_limit`).

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
        DatasetChangedError
            A remote reader whose chunk changed under it (a writer committed).
        """
        full = self.prefix + key
        if limit is None:
            limit = read_limit(key)
        found, blob = self.journal.lookup(full)
        if found:
            if blob is None:
                if self.verify and self.journal.in_overlay(full):
                    self._check_deletion(key)
                raise DatasetNotFoundError(f"{self.path(key)}: no such file")
            if isinstance(blob, bytes):              # carried by the commit record
                if len(blob) > limit:
                    raise FormatError(f"{self.path(key)}: holds {len(blob)} bytes, more than "
                                      f"the {limit} such a file may hold")
                if self.verify and self.journal.in_overlay(full):
                    self.check(key, blob)
                return blob
            try:
                data = self.store.get(blob, limit)   # a blob is never a symlink
            except DatasetNotFoundError:             # moved into place meanwhile by the writer
                return self.get_committed(key, limit)
            if self.verify and self.journal.in_overlay(full):
                self.check(key, data)
            return data
        return self.get_committed(key, limit)

    def get_chunk(self, key: str, limit: int) -> bytes:
        """:meth:`get` for a chunk file, which is never in the consolidated
        metadata: straight from the store when nothing is staged or waits
        in a record, and no content is checked (the read path of every
        chunk of a local reader).

        Raises
        ------
        DatasetNotFoundError, FormatError, IntegrityError, DatasetChangedError
            As :meth:`get`.
        """
        if self.verify or self.check_contents or not self.journal.reads_through():
            return self.get(key, limit)
        return self.store.get(self.prefix + key, limit)

    def get_committed(self, key: str, limit: int | None = None) -> bytes:
        """Read ``key`` from its bcolz file (see :meth:`get`)."""
        full = self.prefix + key
        if limit is None:
            limit = read_limit(key)
        data = self.journal.metadata(full) if is_metadata_key(full) else None
        if data is None:
            data = self.store.get(full, limit)
            if self.verify:
                self.check(key, data)
            elif self.check_contents and not is_metadata_key(full):
                self._check_unchanged(key, data)
        elif self.verify:
            self.check(key, data)
        return data

    def get_many(self, keys, limit: int) -> dict:
        """``{key: bytes or exception}`` of several files, fetched together
        (concurrently on remote stores); staged or overlaid keys one by one."""
        out, direct = {}, []
        for key in keys:
            if self.journal.lookup(self.prefix + key)[0] or \
                    is_metadata_key(self.prefix + key):
                try:
                    out[key] = self.get(key, limit)
                except Exception as err:  # returned, raised by the caller where it belongs
                    out[key] = err
            else:
                direct.append(key)
        if direct:
            got = self.store.get_many([self.prefix + key for key in direct], limit)
            for key in direct:
                data = got[self.prefix + key]
                if not isinstance(data, Exception):
                    try:
                        if self.verify:
                            self.check(key, data)
                        elif self.check_contents:
                            self._check_unchanged(key, data)
                    except Exception as err:
                        data = err
                out[key] = data
        return out

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

    def _check_deletion(self, key: str) -> None:
        """With ``verify`` on: a pending commit deleting ``key`` must come with a
        checksum file that no longer lists it.

        Raises
        ------
        IntegrityError
            When the checksums still list ``key``.
        """
        recorded = self.journal.recorded()
        if recorded is not None and self.prefix + key in recorded:
            raise IntegrityError(f"{self.path(key)}: a pending commit deletes it, but the "
                                 f"checksum file lists it")

    def _check_unchanged(self, key: str, data: bytes) -> None:
        """A remote reader's or writer's check that ``key`` is the committed
        file of the state it loaded."""
        journal = self.journal
        recorded = journal.recorded() if self.readonly else journal.checksums()
        expected = None if recorded is None else recorded.get(self.prefix + key)
        if expected is None or md5_hex(data) == expected:
            return
        if journal.appended_since_loaded():
            return      # only a leftover changes so: its reader takes the items it had
        if not journal.is_stable(getattr(journal, "reader_marker", None)):
            if not self.readonly:
                raise journal.changed_under_writer()
            raise DatasetChangedError(
                f"{self.path(key)}: a writer committed since this reader opened the dataset; "
                f"call refresh() to read the new state")
        raise IntegrityError(f"{self.path(key)}: content does not match its md5 checksum")

    def check_reading(self, failed: bool = False) -> None:
        """After a read: raise :class:`DatasetChangedError` when a writer
        committed since a reader opened.

        Local stores ask the store after every read; remote readers check the
        contents they read against the checksums instead, and ask the store
        only after a read ``failed`` (a missing or malformed chunk file may be
        a writer's commit rather than damage).
        """
        if failed or not self.check_contents:
            self.journal.check_reading(failed)

    def warn_if_unverifiable(self) -> None:
        """With ``verify`` on, warn when the dataset has no checksum file to verify against."""
        if self.verify and self.journal.recorded() is None:
            warnings.warn(f"{self.root}: verify=True, but the dataset has no checksum file "
                          f"(bcolz wrote it, or no bcolz_store commit has been made); nothing "
                          f"is verified", IntegrityWarning, stacklevel=4)

    def exists(self, key: str) -> bool:
        """True when the file ``key`` currently exists (staged, committed, or
        anything stored at its key, so that reading it explains what is wrong).

        Raises
        ------
        IntegrityError
            With ``verify`` on, when the file is missing but the checksum file
            lists it.
        """
        full = self.prefix + key
        found, blob = self.journal.lookup(full)
        if found:
            if blob is None and self.verify and self.journal.in_overlay(full):
                self._check_deletion(key)
            return blob is not None
        if is_metadata_key(full) and self.journal.metadata(full) is not None:
            return True
        present = self.store.exists(full)
        if not present and self.verify:
            recorded = self.journal.recorded()
            if recorded is not None and full in recorded:
                raise IntegrityError(f"{self.path(key)}: missing, but the checksum file "
                                     f"lists it")
        return present

    def listdir(self, folder: str = "") -> list:
        """Names in ``folder`` of this dataset (empty when it does not exist)."""
        lister = getattr(self.store, "listdir", None)
        if lister is not None:
            return lister(self.prefix + folder)
        prefix = self.prefix + (folder.rstrip("/") + "/" if folder else "")
        return sorted({key[len(prefix):].partition("/")[0] for key in self.store.list(prefix)})

    # ------------------------------------------------------------ writing

    def digest(self, parts) -> str:
        """The checksum the journal records for content made of ``parts``
        (md5 hex; a caller may compute it ahead and pass it to :meth:`set`)."""
        return md5_parts(parts)

    def set(self, key: str, data, digest: str | None = None) -> None:
        """Stage ``data`` (bytes-like, or a list of parts to concatenate) as the
        new content of ``key`` (visible after :meth:`commit`); ``digest`` is
        its :meth:`digest` when already computed.

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        OSError
            If the medium refuses the write; nothing committed changes.
        """
        self._check_writable()
        self.journal.stage(self.prefix + key, data, digest)

    def stage_written(self, key: str, blob: str, digest: str) -> None:
        """Stage ``blob``, a file others wrote into a name the journal reserved
        (:meth:`~.journal.Journal.reserve_blobs`), as the new content of ``key``.

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        ValueError
            When ``blob`` is not a reserved name.
        """
        self._check_writable()
        self.journal.stage_written(self.prefix + key, blob, digest)

    def delete(self, key: str) -> None:
        """Stage the removal of file ``key``.

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        """
        self._check_writable()
        if self.exists(key):
            self.journal.stage_delete(self.prefix + key)

    def commit(self) -> None:
        """Commit everything staged in the dataset's journal (see :mod:`.journal`)."""
        self._check_writable()
        self.journal.commit()

    def makedirs(self, *folders: str) -> None:
        """Create the root and the given sub-folders (where the store has folders)."""
        self._check_writable()
        self.store.makedirs(self.prefix.rstrip("/"))
        for folder in folders:
            self.store.makedirs(self.prefix + folder)

    def remove_all(self) -> None:
        """Stage the removal of every file of this folder (part of the next commit).

        Replacing a dataset (mode 'w'), purging it, or removing a column are
        all one commit: the old files stay whole until the new state is
        committed.
        """
        self._check_writable()
        self.journal.stage_delete_all(self.prefix)
