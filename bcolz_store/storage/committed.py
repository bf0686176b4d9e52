"""The committed state of a dataset as its journal sees it: recovery, lock-free
reads, the commit lock and the detection of other writers' commits.

:class:`CommittedState` is the component of a
:class:`~bcolz_store.storage.journal.Journal` (its :attr:`~.journal.Journal.state`)
that knows nothing of staging: :meth:`~CommittedState.recover` loads the
generation of the committed state, rolls a committed but unapplied record
forward (a writer) or reads through it (a reader), and collects a dead
writer's garbage; :meth:`~CommittedState.marker` and
:meth:`~CommittedState.read_consistently` let readers see one committed state
without locks.  What it needs of the writer (its store's durability, the
writer lock, its own blob folder, the lease and timeouts) it is given
explicitly.  The files of the generation loaded (its checksums, metadata
files, a record read through, what the consolidated metadata said) are its
part :attr:`~CommittedState.loaded`, a
:class:`~.generation.LoadedGeneration`; the state's methods of the same
names hand those reads to it.  See :mod:`bcolz_store.storage.journal` for
the protocol.
"""

from __future__ import annotations

import contextlib
import os
import time

from ..errors import ConcurrentWriteError, DatasetChangedError, DatasetNotFoundError, FormatError
from ..format.layout import CONSOLIDATED_FILE, JOURNAL_DIR
from .apply import apply_record
from .base import Store
from .commit_lock import COMMIT_LOCK_NAME, LockLostError
from .generation import LoadedGeneration
from .pending import ASIDE_NAME, check_blobs, forget_blobs_of, set_aside_if_incomplete
from .records import JOURNAL_PREFIX, LEGACY_MANIFEST, RECORD_NAME, UNSET, record_key

__all__ = ["CommittedState", "LOCK_LEASE", "READ_RETRIES", "RETAIN_RECORDS"]

# How often a reader retries opening while a writer is applying a commit.
READ_RETRIES = 400
#: Commit records stay this many commits after their own: a writer that finds
#: its generation current right before creating the next record cannot
#: recreate a removed one unless this many commits happened in between.
RETAIN_RECORDS = 32
#: Seconds after which a commit lock object (stores without OS locks) whose
#: holder has not renewed it is taken for a dead writer's (see
#: :mod:`~.commit_lock`; ``BCOLZ_STORE_LOCK_LEASE`` overrides).
LOCK_LEASE = float(os.environ.get("BCOLZ_STORE_LOCK_LEASE", "30"))


def _lexists(path: str) -> bool:
    """os.path.lexists, one call less on every read of a local reader."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


class CommittedState:
    """The committed state of one dataset root, as loaded by :meth:`recover`,
    and the lock-free checks of its readers.

    Parameters
    ----------
    store : Store
        The dataset's store (its root is the dataset root).
    readonly : bool
        A reader: it reads through a committed but unapplied record; a writer
        applies it (under the commit lock) and collects garbage.
    consolidated : bool, optional
        Serve metadata reads from ``bcolz_store.json``; default: on remote
        stores only.
    sync : bool
        Sync what applying a record writes (fsync wanted, on a store that
        needs it).
    locked : bool, lock or None
        The dataset's writer lock this process holds (``lock=True``; True:
        held for good, None: none): while it is held every blob folder but this writer's
        own is a dead writer's.  A lock object whose ``is_locked`` turned
        false (an object-store lock lost after a stall past its lease) no
        longer counts.
    lock_lease : float
        The lease of the commit lock on stores without OS locks, in seconds.
    retry_timeout : float
        Seconds to wait for the commit lock.
    stale_after : float
        Seconds after which a blob folder no commit names is a dead writer's.

    Attributes
    ----------
    loaded : LoadedGeneration
        The files of the generation the last :meth:`recover` loaded (or this
        writer's own last commit).
    loaded_marker
        :meth:`marker` of the state the last :meth:`recover` loaded.
    reader_marker
        What :meth:`check_reading` compares against (``UNSET``: nothing yet).
    """

    def __init__(self, store: Store, readonly: bool = False, *,
                 consolidated: bool | None = None, sync: bool = False, locked=False,
                 lock_lease: float = LOCK_LEASE, retry_timeout: float = 120.0,
                 stale_after: float = 900.0):
        self.store = store
        self.root = store.url
        self._sync = sync
        self._writer_lock = locked
        self.lock_lease = lock_lease
        self.retry_timeout = retry_timeout
        self.stale_after = stale_after
        self._own_folder = None    # the writer's current blob folder (never collected)
        self._commit_lock = None   # made when first used
        self.loaded_marker = None
        self.reader_marker = UNSET
        self._reading_own = False  # see reading_own_rows()
        self._stable_keys = {}     # record name -> the keys is_stable() checks for it
        self.loaded = LoadedGeneration(store, readonly, consolidated)

    def keep_folder(self, token: str) -> None:
        """The writer's blob folder is now ``token`` (see :meth:`_stale_folders`)."""
        self._own_folder = token

    # -------------------------------------------------------------- recovery

    def recover(self) -> None:
        """Load the committed state's generation, and finish or discard what an
        interrupted writer left (see module docstring).  A writer loads the
        state's checksums too, again when a newer commit replaced them
        meanwhile (not when no newer commit did: a checksum file that does
        not match the consolidated metadata is read as it is).

        Raises
        ------
        FormatError
            If the journal folder, a commit record or a blob it names is not
            what this library writes (nothing is moved or deleted then).
        DatasetChangedError
            When other writers kept committing while the state was loaded.
        """
        self._recover_once()
        if self.readonly:
            return
        for attempt in range(READ_RETRIES):
            if self.loaded.load_checksum_file():
                return
            generation = self.generation
            time.sleep(0.001 * min(attempt + 1, 20))
            self._recover_once()
            if self.generation == generation:
                return  # no newer commit: a checksum file that is not its own (checksums())
        raise DatasetChangedError(f"{self.root}: writers kept committing while this writer "
                                  f"loaded the dataset")

    def _recover_once(self) -> None:
        for _attempt in range(READ_RETRIES):
            try:
                return self._recover_attempt()
            except LockLostError:
                continue        # another writer took over the commit lock: look again
        raise ConcurrentWriteError(f"{self.root}: the commit lock kept being taken over "
                                   f"while this writer rolled a commit forward")

    def _recover_attempt(self) -> None:
        store = self.store
        store.check_folder(JOURNAL_PREFIX)
        with contextlib.ExitStack() as locked:
            while True:
                self.loaded.reset()         # of the state loaded now, read when needed
                if not store.remote:            # earlier versions wrote only local folders
                    self._recover_legacy()
                # What marker() compares later, taken before anything is read, so a
                # commit beginning or ending meanwhile shows.
                local_marker = None if store.remote else self._local_marker()
                generation = self.loaded.load_consolidated()
                listing = None
                if store.remote and not self.readonly:
                    # One listing, taken after the generation was read, tells whether the
                    # next record exists and serves the garbage collection below.
                    listing = store.list_times(JOURNAL_PREFIX)
                entries = None
                key = record_key(generation + 1)
                if listing is None or key in listing:
                    try:
                        entries, info = self.read_record(key)
                    except DatasetNotFoundError:
                        pass
                self.loaded_marker = local_marker if not store.remote else \
                    (entries is not None, ("generation", generation))
                self.loaded.note_snapshot()
                if entries is not None and self.commit_lock.held and not self.readonly and \
                        set_aside_if_incomplete(store, key, entries, generation + 1, info.writer):
                    continue            # it can never be completed: the state stays
                if entries is None or self.readonly or self.commit_lock.held:
                    break
                # A committed record not applied yet: its writer is applying it
                # under the commit lock, or died.  Take the lock and look again.
                locked.enter_context(self.commit_lock.hold(self.retry_timeout))
            if entries is not None:
                blobs = check_blobs(store, entries)
                if self.readonly:
                    self.loaded.read_through(blobs)
                else:
                    self.apply(entries, newer_than=generation + 1)
                    forget_blobs_of(store, entries)
                    generation += 1
                    self.loaded.drop_metadata()
            self.loaded.mark_loaded(generation)
            if not self.readonly:
                # Best effort: a failure leaves garbage for a later writer.
                with contextlib.suppress(OSError):
                    self._collect_garbage(listing)

    @property
    def commit_lock(self):
        """The dataset's :class:`~.commit_lock.CommitLock` (made when first used)."""
        if self._commit_lock is None:
            self._commit_lock = self.store.commit_lock(JOURNAL_PREFIX + COMMIT_LOCK_NAME,
                                                       self.lock_lease)
        return self._commit_lock

    def changed_since_loaded(self) -> bool:
        """True when a commit began or ended since :meth:`recover` loaded the state."""
        return not self.is_stable(self.loaded_marker)

    def _recover_legacy(self) -> None:
        """Roll forward (or read through) a record of the one-writer protocol
        of earlier versions (``.bcolz_store-journal/manifest.json``)."""
        try:
            entries = self.read_record(LEGACY_MANIFEST)[0]
        except DatasetNotFoundError:
            return
        blobs = check_blobs(self.store, entries)
        if self.readonly:
            self.loaded.read_through(blobs)
            return
        with self.commit_lock.hold(self.retry_timeout):
            if self.store.exists(LEGACY_MANIFEST):
                self.apply(entries)
                self.store.delete(LEGACY_MANIFEST)

    def _collect_garbage(self, listing=None) -> None:
        """Remove records older than the committed generation and blob folders
        no live writer can own (all under the writer lock, else stale ones);
        ``listing`` is the journal's ``{key: mtime}`` when already read.

        Blob folders go only under the commit lock, and only while no record
        waits to be applied: a writer checks under that lock that the blobs
        its record names exist before creating it
        (:meth:`~.commit.Committer._check_own_blobs`), so a record never
        names a removed blob."""
        store = self.store
        if listing is None:
            listing = store.list_times(JOURNAL_PREFIX)
        expired = sorted(key for key in listing
                         if (m := RECORD_NAME.fullmatch(key[len(JOURNAL_PREFIX):]))
                         and int(m.group(1)) <= self.generation - RETAIN_RECORDS)
        for key in expired:         # oldest first (see is_stable)
            store.delete(key)
        if self._stale_folders(listing):
            with self.commit_lock.hold(self.retry_timeout):
                listing = store.list_times(JOURNAL_PREFIX)
                generation = self.current_generation()
                if record_key(generation + 1) not in listing:
                    for folder in self._stale_folders(listing):
                        store.delete_prefix(f"{JOURNAL_PREFIX}{folder}/")
                        store.delete(f"{JOURNAL_PREFIX}{folder}")
        store.remove_folder_if_empty(JOURNAL_DIR)

    @property
    def locked(self) -> bool:
        """Whether this process holds the dataset's writer lock now."""
        lock = self._writer_lock
        if isinstance(lock, bool) or lock is None:
            return bool(lock)
        return bool(lock.is_locked)

    def _stale_folders(self, listing: dict) -> list:
        """Blob folders of ``listing`` that no live writer can own: all but this
        writer's under the writer lock, else those untouched for
        :attr:`stale_after` seconds."""
        now = time.time()
        folders = {}
        for key, mtime in listing.items():
            name = key[len(JOURNAL_PREFIX):]
            if RECORD_NAME.fullmatch(name) or ASIDE_NAME.fullmatch(name) or \
                    name == COMMIT_LOCK_NAME:
                continue
            folder = name.partition("/")[0] if "/" in name else name
            folders[folder] = max(folders.get(folder, 0.0), mtime)
        return sorted(folder for folder, newest in folders.items()
                      if folder != self._own_folder and
                      (self.locked or now - newest > self.stale_after))

    # ------------------------------------------------- lock-free readers

    def marker(self):
        """Identity of the committed state (changes with every commit).

        A commit begins by creating the record of the next generation (the
        newest record stays until the next commit is applied) and ends by
        replacing the consolidated metadata.  On a local disk the marker is
        the names of the records present (never the same after a commit) and
        the consolidated metadata's identity; on a remote store, whether the
        next generation's record exists and the generation the consolidated
        metadata holds.  A record left by a writer that died stays unchanged:
        readers then read through it.  :meth:`recover` takes the marker of the
        state it loads as :attr:`loaded_marker`, before reading anything.
        """
        # (a reader that accepted appends since it loaded watches the record after them)
        generation = max(self.generation or 0, self.loaded.appends_upto)
        if self.store.remote:          # an existence check and one small read
            return (self.store.exists(record_key(generation + 1)),
                    ("generation", self.current_generation()))
        return self._local_marker()

    def _local_marker(self) -> tuple:
        """The names of the commit records and the identity of the consolidated
        metadata.  Every commit creates a record of a new name (generations only
        grow), so the names alone never repeat, whatever the file system's
        timestamps and inode numbers do."""
        names = tuple(sorted(name for name in self.store.listdir(JOURNAL_PREFIX)
                             if RECORD_NAME.fullmatch(name) or name == "manifest.json"))
        return (names, self.store.identity(CONSOLIDATED_FILE))

    def is_stable(self, marker) -> bool:
        """True when no commit has begun or ended since ``marker`` was taken.

        On a local disk whose marker holds records, the newest
        ``commit-<k>.json`` (the usual state), two existence checks decide it
        without listing the journal: a commit begins by creating record
        ``k+1``, and records are removed only :data:`RETAIN_RECORDS` commits
        later, oldest first, so once any commit has begun, record ``k+1``
        exists or record ``k`` is gone, for good.  (A state loaded through a
        record not yet applied is the state that applying it makes.)
        """
        if self.store.remote or marker is None or marker is UNSET:
            return self.marker() == marker
        names = marker[0]
        if not names or "manifest.json" in names:
            return self._local_marker() == marker
        newest = names[-1]
        keys = self._stable_keys.get(newest)
        if keys is None:
            k = int(RECORD_NAME.fullmatch(newest).group(1))
            keys = (record_key(k), record_key(k + 1))
            if self.store.on_disk:
                keys = tuple(self.store.path(key) for key in keys)
            self._stable_keys = {newest: keys}
        if self.store.on_disk:
            return _lexists(keys[0]) and not _lexists(keys[1])
        exists = self.store.exists
        return exists(keys[0]) and not exists(keys[1])

    def read_consistently(self, read, just_loaded: bool = False):
        """Call ``read()`` until it ran while no commit happened; return its result.

        A reader that opens while a writer commits may see files of two states;
        it then simply tries again (a commit is applied in milliseconds).  Each
        attempt loads the committed state first (:meth:`recover`), except the
        first one when ``just_loaded``: the state :meth:`recover` has just
        loaded is read (``open()`` loaded it before the container existed; a
        reload after a failed write has loaded it).

        Raises
        ------
        Whatever ``read`` raised, when it failed on a stable dataset.
        DatasetChangedError
            When writers kept committing during every attempt.
        """
        for attempt in range(READ_RETRIES):
            if attempt or not just_loaded:
                self.recover()
            marker = self.loaded_marker
            self.reader_marker = marker
            if self.loaded.snapshot and self.readonly:
                # The metadata came from one object read at once (the consolidated
                # metadata of a remote store): a consistent state by itself.  A
                # writer also reads the leftover chunks, which a commit being
                # applied may have replaced already: it checks.
                return read()
            try:
                result = read()
            except (FormatError, FileNotFoundError, DatasetChangedError, ConcurrentWriteError):
                if self.is_stable(marker):
                    raise
            else:
                if self.is_stable(marker):
                    return result
            time.sleep(0.001 * min(attempt + 1, 20))
        raise DatasetChangedError(f"{self.root}: writers kept committing while reading")

    def check_reading(self, failed: bool = False) -> None:
        """Raise :class:`DatasetChangedError` if a commit happened since the
        state this reader loaded that may have changed what was read:
        anything but commits that only appended rows (those leave every full
        chunk as it was, and the leftover's first items too).

        After a read that ``failed`` (a chunk file missing or malformed), a
        writer raises :class:`ConcurrentWriteError` when another writer
        committed since the state it holds: concurrency, not damage.
        """
        if self._reading_own:
            return          # rows this writer staged itself (a rebase reads them back)
        generation = self.generation
        if failed and not self.readonly and generation is not None and (
                self.current_generation() != generation
                or self.store.exists(record_key(generation + 1))):
            raise self.changed_under_writer()
        marker = self.reader_marker
        if marker is not UNSET and not self.is_stable(marker):
            if self.appended_since_loaded():
                self.reader_marker = self.marker()   # cheap again until the next commit
                return
            if not self.readonly:
                raise self.changed_under_writer()
            raise DatasetChangedError(
                f"{self.root}: a writer committed since this reader opened the dataset; "
                f"call refresh() to read the new state")

    @contextlib.contextmanager
    def reading_own_rows(self):
        """A context in which this writer reads back rows it appended itself
        (a rebase): :meth:`check_reading` does not check those reads against
        other writers' commits."""
        self._reading_own = True
        try:
            yield
        finally:
            self._reading_own = False

    def changed_under_writer(self) -> ConcurrentWriteError:
        """The error of a writer whose read found files of another writer's newer commit."""
        return ConcurrentWriteError(
            f"{self.root}: another writer committed since this writer loaded the dataset, "
            f"and the files it reads changed; call refresh() to load the new state (pending "
            f"changes are dropped) or pass lock=True to serialise writers")

    def committed_own(self, generation: int) -> None:
        """After this writer's commit of ``generation``: later reads check that
        no other commit followed (the marker of exactly that state)."""
        self.reader_marker = (False, ("generation", generation)) if self.store.remote \
            else ((record_key(generation)[len(JOURNAL_PREFIX):],), None)

    # ------------------------------------------------------ other writers

    def committed_elsewhere(self) -> bool:
        """True when another writer committed since this journal loaded its state
        (the consolidated metadata holds another generation)."""
        generation = self.generation
        return generation is not None and self.current_generation() != generation

    def concurrent_error(self) -> ConcurrentWriteError:
        """The error for a writer whose loaded state another writer replaced."""
        return ConcurrentWriteError(
            f"{self.root}: another writer committed to this dataset since it was loaded; "
            f"nothing of this change was committed: refresh() and write again, or pass "
            f"lock=True to serialise writers")

    def apply(self, entries: list, newer_than: int | None = None) -> None:
        """Apply the record ``entries`` (see :func:`~.apply.apply_record`);
        the caller holds the commit lock, which is confirmed before each
        write.  A writer applying another's record of generation
        ``newer_than`` stops before a step once that generation is applied or
        a newer commit has begun.

        Raises
        ------
        LockLostError
            When the lock was taken over (stores without OS locks: this writer
            stalled past the lease); nothing more is written.
        """
        def superseded():
            return (self.current_generation() >= newer_than
                    or self.store.exists(record_key(newer_than + 1)))
        apply_record(self.store, entries, self.commit_lock.confirm, self._sync,
                     None if newer_than is None else superseded)

    # -------------------------------------------------- the generation loaded

    @property
    def readonly(self) -> bool:
        """A reader, reading through a committed record (:attr:`.LoadedGeneration.readonly`)."""
        return self.loaded.readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self.loaded.readonly = value

    @property
    def use_consolidated(self) -> bool:
        """Whether metadata reads are served from the consolidated metadata."""
        return self.loaded.use_consolidated

    @property
    def snapshot(self) -> bool:
        """The state loaded is consistent by itself (:attr:`.LoadedGeneration.snapshot`)."""
        return self.loaded.snapshot

    @property
    def generation(self):
        """The generation of the committed state loaded (None before :meth:`recover`)."""
        return self.loaded.generation

    @property
    def rewritten_at(self):
        """See :attr:`.LoadedGeneration.rewritten_at` (None when not known)."""
        return self.loaded.rewritten_at

    @property
    def reshaped_at(self):
        """See :attr:`.LoadedGeneration.reshaped_at` (None when not known)."""
        return self.loaded.reshaped_at

    @property
    def overlay(self) -> dict:
        """A committed record this reader reads through (:attr:`.LoadedGeneration.overlay`)."""
        return self.loaded.overlay

    def set_committed(self, generation: int, checksums: dict, metadata: dict,
                      rewritten_at: int, reshaped_at: int) -> None:
        """This writer's commit is the state loaded (:meth:`.LoadedGeneration.set_committed`)."""
        self.loaded.set_committed(generation, checksums, metadata, rewritten_at, reshaped_at)

    def unload(self) -> None:
        """Forget the checksums and metadata files loaded (read again when needed)."""
        self.loaded.unload()

    def reset(self) -> None:
        """Forget the loaded files, and a record read through (the root is removed)."""
        self.loaded.reset()

    def forget(self, prefix: str) -> None:
        """Drop what is loaded under ``prefix`` (:meth:`.LoadedGeneration.forget`)."""
        self.loaded.forget(prefix)

    def adopt(self, prefix: str) -> None:
        """Checksum the files under ``prefix`` (:meth:`.LoadedGeneration.adopt`)."""
        self.loaded.adopt(prefix)

    def lookup(self, key: str):
        """Where a record read through has ``key`` (:meth:`.LoadedGeneration.lookup`)."""
        return self.loaded.lookup(key)

    def lacks(self, key: str) -> bool:
        """:meth:`.LoadedGeneration.lacks`."""
        return self.loaded.lacks(key)

    def metadata(self, key: str):
        """``key``'s bytes from the consolidated metadata (:meth:`.LoadedGeneration.metadata`)."""
        return self.loaded.metadata(key)

    def recorded(self):
        """The checksum file's checksums, or None (:meth:`.LoadedGeneration.recorded`)."""
        return self.loaded.recorded()

    def checksums(self) -> dict:
        """The committed files' checksums (:meth:`.LoadedGeneration.checksums`)."""
        return self.loaded.checksums()

    def metadata_files(self) -> dict:
        """The committed metadata files (:meth:`.LoadedGeneration.metadata_files`)."""
        return self.loaded.metadata_files()

    def read_record(self, key: str):
        """The commit record ``key``, validated (:meth:`.LoadedGeneration.read_record`)."""
        return self.loaded.read_record(key)

    def current_generation(self) -> int:
        """The generation the consolidated metadata records now (0 if unreadable)."""
        return self.loaded.current_generation()

    def consolidated_generation(self):
        """That generation now, None when unreadable (:meth:`consolidated_now`)."""
        return self.loaded.consolidated_generation()

    def consolidated_now(self):
        """The consolidated metadata now, or None (:meth:`.LoadedGeneration.consolidated_now`)."""
        return self.loaded.consolidated_now()

    def appended_since_loaded(self) -> bool:
        """Whether commits since only appended (:meth:`.LoadedGeneration.appended_since_loaded`)."""
        return self.loaded.appended_since_loaded()
