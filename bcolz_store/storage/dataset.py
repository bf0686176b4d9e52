"""One dataset (a carray, a ctable, or a column of one) as its containers see it.

A :class:`DatasetStore` is a view of a :class:`~.base.Store` through the
dataset's :class:`~.journal.Journal`, and the one way into the commit
machinery from above ``storage/``.  Its reads are done by the
:class:`~.dataset_reads.DatasetReads` it makes and holds as ``reads`` (the
view's key paths, bounded reads, checksum checks and listing; the view's
reading methods hand over to it): they see this writer's staged changes, or
(for a reader) a committed but unapplied commit.  Writes are staged and
become visible only when :meth:`DatasetStore.commit` commits them, all at
once.  The columns of a ctable are views with a prefix (``"x/"``) sharing the
table's journal, so a change to several columns is one commit.

The containers take part in the commits through a
:class:`~.owner.DatasetOwner` (:meth:`DatasetStore.attach`): a failed write
(:meth:`DatasetStore.operation`) reloads them, every commit stages what they
hold, and an append another writer's commit overtook is rebased by them.
"""

from __future__ import annotations

import functools
import warnings

from ..errors import (ConcurrentWriteError, DatasetNotFoundError, FormatError, IntegrityWarning,
                      ReadOnlyError)
from ..format.layout import check_key
from .ahead import stage_ahead, write_ahead
from .base import Store
from .checksums import md5_parts
from .dataset_reads import DatasetReads
from .journal import Journal
from .owner import DatasetOwner

__all__ = ["DatasetOwner", "DatasetStore"]


def _handed_to_reads(name: str):
    """A method of the view that hands over to the same method of its
    :class:`DatasetReads` (its signature and docstring too)."""
    @functools.wraps(getattr(DatasetReads, name))
    def method(self, *args, **kwargs):
        return getattr(self.reads, name)(*args, **kwargs)
    return method


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
    locked : bool, lock or None, default False
        The writer lock this process holds (``lock=True``), taken
        before the committed state is loaded: the blob folders of other
        writers are dead writers' garbage.

    Attributes
    ----------
    store : Store
        The store of the dataset's root.
    journal : Journal
        The dataset's journal (one for a table and all its columns).
    prefix : str
        This folder's key relative to the root ('' or 'name/').
    root : str
        This folder, for messages.
    reads : DatasetReads
        The view's reading side: every read of its files goes through it.
    """

    def __init__(self, store: Store, readonly: bool = False, journal: Journal | None = None,
                 prefix: str = "", verify: bool = False, consolidated: bool | None = None,
                 locked=False):
        readonly = readonly or store.readonly      # a pack, an http URL: never written
        if journal is None:
            journal = Journal(store, readonly, consolidated=consolidated, locked=locked)
        self.store = store
        self.journal = journal
        self.prefix = prefix
        self.reads = DatasetReads(store, journal, prefix, readonly, verify)
        self.root = self.reads.root
        self.readonly = readonly            # the root's view sets its journal's too

    @property
    def readonly(self) -> bool:
        """True when every write raises :class:`ReadOnlyError`; setting it on
        the root's view (``prefix`` '') sets the journal's too."""
        return self.reads.readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self.reads.readonly = bool(value)
        if not self.prefix:
            self.journal.readonly = self.reads.readonly

    @property
    def verify(self) -> bool:
        """True when each file read is checked against the dataset's checksum
        file (:class:`IntegrityError` on a mismatch); it may be switched."""
        return self.reads.verify

    @verify.setter
    def verify(self, value: bool) -> None:
        self.reads.verify = value

    # ------------------------------------------------------------ reading

    def path(self, key: str) -> str:
        """Where ``key`` of this dataset is, for messages (see :meth:`DatasetReads.path`).

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        return self.reads.path(key)

    def get(self, key: str, limit: int | None = None) -> bytes:
        """Read the current content of ``key`` (staged, committed, or stored).

        Parameters
        ----------
        key : str
        limit : int, optional
            Largest size accepted, in bytes (default: what the format allows
            for such a file).

        Raises
        ------
        DatasetNotFoundError, FormatError, IntegrityError, DatasetChangedError
            See :meth:`DatasetReads.get`.
        """
        return self.reads.get(key, limit)

    def get_chunk(self, key: str, limit: int) -> bytes:
        """:meth:`get` for a chunk file (see :meth:`DatasetReads.get_chunk`).

        Raises
        ------
        DatasetNotFoundError, FormatError, IntegrityError, DatasetChangedError
            As :meth:`get`.
        """
        return self.reads.get_chunk(key, limit)

    # Ranged reads of a chunk file: those of DatasetReads, documented there.
    get_chunk_range = _handed_to_reads("get_chunk_range")
    get_chunk_ranges = _handed_to_reads("get_chunk_ranges")

    def get_many(self, keys, limit: int) -> dict:
        """``{key: bytes or exception}`` of several files, fetched together
        (see :meth:`DatasetReads.get_many`)."""
        return self.reads.get_many(keys, limit)

    def check_reading(self, failed: bool = False) -> None:
        """After a read: raise :class:`DatasetChangedError` when a writer
        committed since a reader opened (see :meth:`DatasetReads.check_reading`)."""
        self.reads.check_reading(failed)

    def warn_if_unverifiable(self) -> None:
        """With ``verify`` on, warn when the dataset has no checksum file to verify against
        (an :class:`IntegrityWarning` pointing at the code that opened it)."""
        if self.verify and self.journal.state.recorded() is None:
            warnings.warn(f"{self.root}: verify=True, but the dataset has no checksum file "
                          f"(bcolz wrote it, or no bcolz_store commit has been made); nothing "
                          f"is verified", IntegrityWarning, stacklevel=4)

    def exists(self, key: str) -> bool:
        """True when the file ``key`` currently exists (see :meth:`DatasetReads.exists`).

        Raises
        ------
        IntegrityError
            With ``verify`` on, when the file is missing but the checksum file
            lists it.
        """
        return self.reads.exists(key)

    def listdir(self, folder: str = "") -> list:
        """Names in ``folder`` of this dataset (empty when it does not exist)."""
        return self.reads.listdir(folder)

    # ---------------------------------------------------------- the folder

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
        out = DatasetStore(self.store, journal=self.journal, prefix=self.prefix + name + "/",
                           verify=self.verify)
        out.readonly = self.readonly if readonly is None else bool(readonly)
        out.reads.check_contents = self.reads.check_contents
        return out

    def shares_commits_with(self, other: "DatasetStore") -> bool:
        """True when ``other`` commits with this view (one journal: the same
        table, or a column of it)."""
        return self.journal is other.journal

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    # ------------------------------------------------------------ writing

    def digest(self, parts) -> str:
        """The md5 hex the journal records for content of ``parts`` (for :meth:`set`)."""
        return md5_parts(parts)

    def set(self, key: str, data, digest: str | None = None, repair: bool = False) -> None:
        """Stage ``data`` (bytes-like, or a list of parts to concatenate) as the
        new content of ``key`` (visible after :meth:`commit`); ``digest`` is its
        :meth:`digest` when already computed; with ``repair`` a metadata file is
        committed even where the checksums record ``data`` (damaged on disk).

        Raises
        ------
        ReadOnlyError
            If the store is read-only.
        OSError
            If the medium refuses the write; nothing committed changes.
        """
        self._check_writable()
        self.journal.stage(self.prefix + key, data, digest, repair)

    def write_ahead(self, key: str, data, digest: str | None = None):
        """Write ``data`` for ``key`` on the calling thread, any thread (see
        :mod:`~.ahead`); returns the ``Written`` that :meth:`stage_ahead` stages.

        Raises
        ------
        ReadOnlyError, OSError
            As :meth:`set`.
        """
        self._check_writable()
        return write_ahead(self.journal, self.prefix + key, data, digest)

    def stage_ahead(self, key: str, written) -> None:
        """Stage ``written`` (see :meth:`write_ahead`) as the new content of ``key``.

        Raises
        ------
        ValueError, ReadOnlyError, OSError
            See :func:`~.ahead.stage_ahead`.
        """
        self._check_writable()
        stage_ahead(self.journal, self.prefix + key, written)

    def stage_written(self, key: str, blob: str, digest: str) -> None:
        """Stage ``blob``, a file others wrote into a name the journal reserved
        (:meth:`reserve_blobs`), as the new content of ``key``.

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

    # ---------------------------------------------------- the containers

    def attach(self, owner: DatasetOwner) -> None:
        """Make ``owner`` (the carray, or the ctable for all its columns) take
        part in the commits of this dataset (see :class:`~.owner.DatasetOwner`).

        Attached once the container exists: by then its creation's commit is
        made, or the state ``open()`` loaded is read into it.
        """
        self.journal.attach(owner)

    def recover(self) -> None:
        """Load the committed state, finishing a commit an interrupted writer
        left (a writer) or reading through it (a reader).

        Raises
        ------
        FormatError
            If the journal folder, a commit record or a blob it names is not
            what this library writes (nothing is moved or deleted then).
        LockTimeoutError
            When a writer holds the commit lock for longer than the timeout.
        """
        self.journal.recover()

    def read_consistently(self, read, just_loaded: bool = False):
        """Load the committed state and call ``read()`` (the container's load
        of it) until it ran while no commit happened; return its result.

        Parameters
        ----------
        read : callable
            Reads the state loaded (metadata, attrs, chunks).
        just_loaded : bool, default False
            :meth:`recover` has just loaded the state (``open()`` did, to tell
            a carray from a ctable): the first attempt reads it as it is.

        A writer whose load fails is :attr:`broken` until :meth:`reload`
        succeeds: the state loaded may be newer than what its containers
        hold, and writing from them would put an older state over it.

        Raises
        ------
        Whatever ``read`` raised, when it failed on a stable dataset.
        DatasetChangedError
            When writers kept committing during every attempt.
        """
        try:
            return self.journal.state.read_consistently(read, just_loaded)
        except BaseException as err:
            if not self.journal.readonly:
                self.journal.broken = err
            raise

    @property
    def broken(self) -> bool:
        """True when a write failed and even reloading the committed state
        failed: writes raise :class:`WriteFailedError` until :meth:`reload`
        succeeds."""
        return self.journal.broken is not None

    def reload(self) -> None:
        """Forget staged changes, finish or discard an interrupted commit, and
        reload the committed state into the attached containers.

        Raises
        ------
        FormatError, OSError
            When the committed state cannot be read (the dataset stays broken).
        """
        self.journal.reload_committed()

    def forget_all(self) -> None:
        """Forget staged changes and the state loaded: the dataset's root is
        being removed."""
        self.journal.reset()

    # ---------------------------------------------------------- commits

    def note(self, op: str) -> None:
        """Record that the pending change includes ``op`` (``"append"``,
        ``"setitem"``, ``"create"``... see :data:`~.records.OPS`): the commit
        record names it, and a change that only appended is rebased on
        another writer's commit instead of failing."""
        self.journal.note(op)

    def operation(self, what: str | None = None):
        """A context for one write operation of a container (``what``: its
        name, noted for the commit record): on any exception, every container
        of the dataset returns to its last committed state, and the exception
        is raised again.

        Raises
        ------
        WriteFailedError
            On entry, when an earlier failure left the dataset :attr:`broken`.
        """
        return self.journal.operation(what)

    def batch(self):
        """A context grouping several operations into one commit: commits asked
        for inside it are made once, when the outermost block ends."""
        return self.journal.batch()

    def discard(self) -> None:
        """Forget the staged changes of the whole dataset and remove their blobs."""
        self.journal.discard()

    def adopt(self, folder: str) -> None:
        """Checksum the files already under ``folder`` of this view (a folder
        moved in outside commits)."""
        self.journal.adopt(self.prefix + folder)

    def forget(self, folder: str) -> None:
        """Drop the checksums and staged changes of the files under ``folder``
        of this view (a folder removed outside commits)."""
        self.journal.forget(self.prefix + folder)

    def scratch_folder(self, name: str) -> str:
        """The key of a folder ``name`` in this writer's own folder of the
        journal, where files are built that :meth:`stage_moved` then stages
        (an on-disk reshape builds its new dataset there)."""
        return self.journal.scratch_prefix(name)

    def stage_moved(self, key: str, src: str, digest: str) -> None:
        """Make the written (and synced) file ``src`` (a key of the store,
        inside a :meth:`scratch_folder`), of md5 ``digest``, the new content of
        ``key``: it is moved into the journal now.

        Raises
        ------
        OSError
            When the move fails, naming the file.
        """
        self.journal.stage_moved(self.prefix + key, src, digest)

    def reserve_blobs(self, count: int) -> tuple:
        """Reserve ``count`` blob names in this writer's folder for files that
        others write (dask's workers); return ``(folder, first)``: blob ``i`` is
        :func:`~.records.blob_key` ``(folder, first + i)``, staged by
        :meth:`stage_written`.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        OSError
            When the folder cannot be made, naming it.
        """
        return self.journal.reserve_blobs(count)

    @property
    def sync_blobs(self) -> bool:
        """True when a blob must be synced once written (fsync is wanted and
        the store needs it): writers of reserved blobs in other processes too."""
        return self.journal.sync_blobs

    # ------------------------------------------------- the state loaded

    @property
    def generation(self):
        """The generation of the committed state loaded (None before the first
        load)."""
        return self.journal.state.generation

    @property
    def loaded_marker(self):
        """The identity of the committed state the last load found (it changes
        with every commit)."""
        return self.journal.state.loaded_marker

    @property
    def consolidated(self) -> bool:
        """True when metadata is read from the consolidated metadata file."""
        return self.journal.state.use_consolidated

    @property
    def is_reader(self) -> bool:
        """True when the dataset is open for reading only: its journal never
        writes (a ctable column's view may say otherwise of itself)."""
        return self.journal.readonly

    @property
    def interrupted_commit(self) -> bool:
        """True when the state loaded holds a committed record an interrupted
        writer did not apply (a reader reads through it)."""
        return bool(self.journal.state.overlay)

    def lookup(self, key: str):
        """Where the current content of ``key`` lives, if not at its bcolz name.

        Returns
        -------
        (found, source)
            ``found`` False: the bcolz file itself.  Else the blob key, the
            content itself (bytes), or None when the key is deleted, by a
            staged change or a committed record not yet applied.
        """
        return self.journal.lookup(self.prefix + key)

    def committed_metadata(self, key: str):
        """The committed bytes of the metadata file ``key`` from the
        consolidated metadata, or None when they are not used or not known."""
        return self.journal.state.metadata(self.prefix + key)

    def recorded_checksums(self):
        """``{key: md5 hex}`` as the dataset's checksum file records them
        (keys relative to the root), or None when it has none.

        Raises
        ------
        FormatError
            When the checksum file is not a plain file, too large, or malformed.
        """
        return self.journal.state.recorded()

    def appended_since_loaded(self) -> bool:
        """True when every commit since the state was loaded only appended
        rows (full chunks and the leftover's first items are as they were)."""
        return self.journal.state.appended_since_loaded()

    def changed_since_loaded(self) -> bool:
        """True when a commit began or ended since the state was loaded."""
        return self.journal.state.changed_since_loaded()

    def writer_conflict(self):
        """For a writer whose read of a file failed: the
        :class:`ConcurrentWriteError` to raise when another writer committed
        since the state it loaded (the committed state is reloaded at once
        when no write :meth:`operation` is under way), or None when that is
        not what happened (a reader, or damage)."""
        state = self.journal.state
        if self.journal.readonly or not (state.committed_elsewhere()
                                         or state.changed_since_loaded()):
            return None
        error: ConcurrentWriteError = state.concurrent_error()
        if not self.journal.in_operation:     # not inside a write operation: reload here
            self.journal.roll_back(error)
        return error

    def reading_own_rows(self):
        """A context in which this writer reads back rows it appended itself
        (a rebase): those reads are not checked against other writers'
        commits."""
        return self.journal.state.reading_own_rows()
