"""The committed state of a dataset as its journal sees it: recovery, lock-free
reads, checksums and the detection of other writers' commits.

:class:`CommittedState` is the base class of
:class:`~bcolz_store.storage.journal.Journal` that knows nothing of staging:
:meth:`~CommittedState.recover` loads the generation of the committed state,
rolls a committed but unapplied record forward (a writer) or reads through it
(a reader), and collects a dead writer's garbage; :meth:`~CommittedState.marker`
and :func:`read_consistently` let readers see one committed state without
locks.  See :mod:`bcolz_store.storage.journal` for the protocol.
"""

from __future__ import annotations

import itertools
import os
import random
import time
from concurrent.futures import Future

from ..errors import ConcurrentWriteError, DatasetChangedError, DatasetNotFoundError, FormatError
from ..format.consolidated import load_consolidated
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR, MAX_OWN_FILE_BYTES,
                             commit_key_limit)
from .checksums import load_checksums, md5_hex
from .committed_files import CommittedFiles
from .records import (JOURNAL_PREFIX, LEGACY_MANIFEST, RECORD_NAME, UNSET, commit_order,
                      parse_record, record_key)

__all__ = ["APPLY_LEASE", "READ_RETRIES", "RETAIN_RECORDS", "CommittedState",
           "read_consistently"]

# How often a reader retries opening while a writer is applying a commit.
READ_RETRIES = 400
#: Commit records stay this many commits after their own: a writer that finds
#: its generation current right before creating the next record cannot
#: recreate a removed one unless this many commits happened in between.
RETAIN_RECORDS = 32
#: Writer tokens of the commit records this process made but could not apply
#: (the medium failed after the commit point): any writer here finishes them at
#: once, without waiting for the apply lease.
UNAPPLIED_HERE: set = set()

#: Seconds a writer waits for the writer of a committed but unapplied record
#: to apply it before taking that writer for dead and applying it itself
#: (``BCOLZ_STORE_APPLY_LEASE`` overrides; a writer holding the lock never
#: waits: no other writer can be alive).
APPLY_LEASE = float(os.environ.get("BCOLZ_STORE_APPLY_LEASE", "30"))


def read_consistently(journal, read):
    """Call ``read()`` until it ran while no commit happened; return its result.

    A reader that opens while a writer commits may see files of two states;
    it then simply tries again (a commit is applied in milliseconds).

    Raises
    ------
    Whatever ``read`` raised, when it failed on a stable dataset.
    DatasetChangedError
        When writers kept committing during every attempt.
    """
    for attempt in range(READ_RETRIES):
        if attempt or not journal.fresh:
            journal.recover()
        journal.fresh = False
        marker = journal.loaded_marker
        journal.reader_marker = marker
        if journal.snapshot and journal.readonly:
            # The metadata came from one object read at once (the consolidated
            # metadata of a remote store): a consistent state by itself.  A
            # writer also reads the leftover chunks, which a commit being
            # applied may have replaced already: it checks.
            return read()
        try:
            result = read()
        except (FormatError, FileNotFoundError, DatasetChangedError, ConcurrentWriteError):
            if journal.is_stable(marker):
                raise
        else:
            if journal.is_stable(marker):
                return result
        time.sleep(0.001 * min(attempt + 1, 20))
    raise DatasetChangedError(f"{journal.root}: writers kept committing while reading")


def _lexists(path: str) -> bool:
    """os.path.lexists, one call less on every read of a local reader."""
    try:
        os.lstat(path)
    except OSError:
        return False
    return True


class CommittedState(CommittedFiles):
    """The committed state of one dataset root, as loaded by :meth:`recover`
    (a base class of :class:`~bcolz_store.storage.journal.Journal`, whose
    constructor sets the attributes used here)."""

    _stable_keys = {}   # record name -> the keys is_stable() checks for it
    reading_own = False  # a writer reads back rows it appended (see carray._pending_rows)

    # -------------------------------------------------------------- recovery

    def recover(self) -> None:
        """Load the committed state's generation, and finish or discard what an
        interrupted writer left (see module docstring).  A writer loads the
        state's checksums too, again when a newer commit replaced them
        meanwhile.

        Raises
        ------
        FormatError
            If the journal folder, a commit record or a blob it names is not
            what this library writes (nothing is moved or deleted then).
        """
        self._recover_once()
        if self.readonly:
            return
        sums = UNSET
        for _attempt in range(READ_RETRIES):
            sums = self._loaded_checksums()
            if sums is not UNSET:
                break
            self._recover_once()
        self._sums = None if sums is UNSET else sums

    def _recover_once(self) -> None:
        store = self.store
        store.check_folder(JOURNAL_PREFIX)
        waited_since, waited_for = None, None
        for attempt in itertools.count():
            self._overlay = {}
            self._recorded = UNSET
            self._sums = None           # of the state loaded now, read when needed
            self._meta = None
            if not store.remote:            # earlier versions wrote only local folders
                self._recover_legacy()
            # What marker() compares later, taken before anything is read, so a
            # commit beginning or ending meanwhile shows.
            local_marker = None if store.remote else self._local_marker()
            generation = self._read_generation()
            listing = None
            if store.remote and not self.readonly:
                # One listing, taken after the generation was read, tells whether the
                # next record exists and serves the garbage collection below.
                listing = store.list_times(JOURNAL_PREFIX)
            entries = info = None
            key = record_key(generation + 1)
            if listing is None or key in listing:
                try:
                    entries, info = self._read_record(key)
                except DatasetNotFoundError:
                    pass
            self.loaded_marker = local_marker if not store.remote else \
                (entries is not None, ("generation", generation))
            self.snapshot = bool(store.remote and self.use_consolidated and
                                 self._meta is not None)
            if entries is None or self.readonly or self.locked or \
                    info.writer in UNAPPLIED_HERE:
                break       # (made in this process, which failed to apply it)
            # A writer found a committed record not applied yet: its writer is
            # most likely applying it right now; wait for that, and apply it
            # only when that writer must be dead (the record is older than the
            # lease, or we waited that long), never beside a live writer.
            now = time.monotonic()
            if waited_for != key:       # the lease runs for one record, not for all
                waited_since, waited_for = now, key
            age = self._age(key, listing)
            if (age is not None and age >= self.apply_lease) or \
                    now - waited_since >= self.apply_lease:
                break
            time.sleep(random.uniform(0.5, 1.0) * min(0.05, 0.001 * 2 ** min(attempt, 6)))
        if entries is not None:
            blobs = self._check_blobs(entries)
            if self.readonly:
                self._overlay = blobs
            else:
                self._apply(entries, newer_than=generation + 1)
                self._forget_blobs_of(entries)
                UNAPPLIED_HERE.discard(info.writer)
                generation += 1
                self._meta = None
        self._generation = generation
        self._appends_upto = generation
        if not self.readonly:
            self._collect_garbage(listing)

    def changed_since_loaded(self) -> bool:
        """True when a commit began or ended since :meth:`recover` loaded the state."""
        return not self.is_stable(self.loaded_marker)

    def _loaded_checksums(self):
        """A writer's checksums of the state it loaded (so that a flush with
        nothing pending is told apart from a change), or None (read when
        needed) when there is no checksum file or a newer commit replaced it."""
        try:
            data = self.store.get(CHECKSUM_FILE, MAX_OWN_FILE_BYTES)
        except DatasetNotFoundError:
            return None
        if self._snapshot_checksums is not None and md5_hex(data) != self._snapshot_checksums:
            return UNSET        # a newer commit's: load the state again
        return dict(load_checksums(data, self.store.path(CHECKSUM_FILE)))

    apply_lease = APPLY_LEASE

    def _age(self, key: str, listing=None):
        """Seconds since the object ``key`` was written (None if unknown)."""
        try:
            if listing is not None and key in listing:
                mtime = listing[key]
            elif self.store.on_disk:
                mtime = os.lstat(self.store.path(key)).st_mtime
            else:
                mtime = self.store.list_times(key).get(key)
        except OSError:
            return None
        return None if not mtime else time.time() - mtime

    def _recover_legacy(self) -> None:
        """Roll forward (or read through) a record of the one-writer protocol
        of earlier versions (``.bcolz_store-journal/manifest.json``)."""
        try:
            entries = self._read_record(LEGACY_MANIFEST)[0]
        except DatasetNotFoundError:
            return
        blobs = self._check_blobs(entries)
        if self.readonly:
            self._overlay = blobs
            return
        self._apply(entries)
        self.store.delete(LEGACY_MANIFEST)

    def _read_generation(self) -> int:
        """The generation the consolidated metadata records (0 without one);
        keeps its metadata files when they are to be used."""
        try:
            data = self.store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
        except DatasetNotFoundError:
            return 0
        found, blob = self.lookup(CONSOLIDATED_FILE)
        if found and blob is not None:          # a reader looking through a record
            data = blob if isinstance(blob, bytes) else self.store.get(blob, MAX_OWN_FILE_BYTES)
        generation, files, checksums = load_consolidated(data, self.store.path(CONSOLIDATED_FILE))
        self._snapshot_checksums = checksums
        if self.use_consolidated:
            self._meta = files
        return generation

    def _read_record(self, key: str):
        """``(entries, RecordInfo)`` of the commit record ``key``, validated.

        Raises
        ------
        DatasetNotFoundError
            When there is no such record.
        FormatError
            When it is not a plain file, too large, not JSON, or invalid.
        """
        return parse_record(self.store.get(key, MAX_OWN_FILE_BYTES), self.store.path(key))

    def _check_blobs(self, entries: list) -> dict:
        """``{key: blob key or None}`` once every blob of ``entries`` is a plain
        object (or gone: moved already) of a size its key allows."""
        blobs = {}
        for key, blob in entries:
            if blob is None or isinstance(blob, bytes):
                blobs[key] = blob
                continue
            blob_key = JOURNAL_PREFIX + blob
            try:
                size = self.store.size(blob_key)
            except FormatError as err:
                raise FormatError(f"{self.store.path(blob_key)}: a commit blob must be a "
                                  f"file ({err})") from err
            if size is not None and size > commit_key_limit(key, self.root):
                raise FormatError(f"{self.store.path(blob_key)}: holds {size} bytes, more "
                                  f"than {key} may hold")
            blobs[key] = blob_key
        return blobs

    def _forget_blobs_of(self, entries: list) -> None:
        """Remove the blob folders a rolled-forward record used."""
        for folder in {blob.partition("/")[0] for _key, blob in entries
                       if isinstance(blob, str) and "/" in blob}:
            self.store.delete_prefix(f"{JOURNAL_PREFIX}{folder}/")

    def _collect_garbage(self, listing=None) -> None:
        """Remove records older than the committed generation and blob folders
        no live writer can own (all under the writer lock, else stale ones);
        ``listing`` is the journal's ``{key: mtime}`` when already read."""
        store = self.store
        now = time.time()
        folders = {}
        expired = []
        if listing is None:
            listing = store.list_times(JOURNAL_PREFIX)
        for key, mtime in listing.items():
            name = key[len(JOURNAL_PREFIX):]
            match = RECORD_NAME.fullmatch(name)
            if match:
                if int(match.group(1)) <= self._generation - RETAIN_RECORDS:
                    expired.append(key)
                continue
            folder = name.partition("/")[0] if "/" in name else name
            folders[folder] = max(folders.get(folder, 0.0), mtime)
        for key in sorted(expired):         # oldest first (see is_stable)
            store.delete(key)
        for folder, newest in folders.items():
            if folder != self._token and (self.locked or now - newest > self.stale_after):
                store.delete_prefix(f"{JOURNAL_PREFIX}{folder}/")
                store.delete(f"{JOURNAL_PREFIX}{folder}")
        store.remove_folder_if_empty(JOURNAL_DIR)

    # --------------------------------------------------------------- reading

    def lookup(self, key: str):
        """Where the current content of ``key`` lives, if not at its bcolz name.

        Returns
        -------
        (found, source)
            ``found`` False: read the bcolz file itself.  Else the blob key to
            read, the content itself (bytes, carried inline), or None when the
            key is deleted.
        """
        if key in self._staged:
            digest = self._staged_sums[key]
            if isinstance(digest, Future):
                digest.result()  # the blob is written (or its error raised)
            return True, self._staged[key]
        if key in self._overlay:
            blob = self._overlay[key]
            if blob is None or isinstance(blob, bytes) or self.store.exists(blob):
                return True, blob
        return False, None

    def reads_through(self) -> bool:
        """True when every file is read at its bcolz name: nothing is staged
        and no committed record waits to be applied."""
        return not self._staged and not self._overlay

    def in_overlay(self, key: str) -> bool:
        """True when ``key`` is read from a committed but unapplied commit record."""
        return key in self._overlay and key not in self._staged

    def metadata(self, key: str):
        """The committed bytes of the metadata file ``key`` from the consolidated
        metadata, or None when they are not to be used or not known."""
        if self._meta is None or not self.use_consolidated or key in self._overlay:
            return None
        return self._meta.get(key)

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
        generation = max(self._generation or 0, getattr(self, "_appends_upto", 0) or 0)
        if self.store.remote:          # an existence check and one small read
            return (self.store.exists(record_key(generation + 1)),
                    ("generation", self._read_generation_quietly()))
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

    def start_reading(self) -> None:
        """Take the snapshot that :meth:`check_reading` compares against."""
        self.reader_marker = self.marker()

    def check_reading(self, failed: bool = False) -> None:
        """Raise :class:`DatasetChangedError` if a commit happened since
        :meth:`start_reading` that may have changed what was read: anything
        but commits that only appended rows (those leave every full chunk as
        it was, and the leftover's first items too).

        After a read that ``failed`` (a chunk file missing or malformed), a
        writer raises :class:`ConcurrentWriteError` when another writer
        committed since the state it holds: concurrency, not damage.
        """
        if self.reading_own:
            return          # rows this writer staged itself (a rebase reads them back)
        if failed and not self.readonly and self._generation is not None and (
                self._read_generation_quietly() != self._generation
                or self.store.exists(record_key(self._generation + 1))):
            raise self.changed_under_writer()
        marker = getattr(self, "reader_marker", UNSET)
        if marker is not UNSET and not self.is_stable(marker):
            if self.appended_since_loaded():
                self.reader_marker = self.marker()   # cheap again until the next commit
                return
            if not self.readonly:
                raise self.changed_under_writer()
            raise DatasetChangedError(
                f"{self.root}: a writer committed since this reader opened the dataset; "
                f"call refresh() to read the new state")

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

    def appended_since_loaded(self) -> bool:
        """True when every commit since the state loaded only appended rows
        (their records say so); records already checked are not read again.

        Local stores only: on an object store a commit's files are replaced
        before its consolidated metadata says so, and a remote reader, which
        checks contents rather than asking the store, keeps refusing any
        commit (DatasetChangedError)."""
        if self._generation is None or self.store.remote:
            return False
        checked = max(getattr(self, "_appends_upto", 0), self._generation)
        k = checked + 1
        while True:
            try:
                info = self._read_record(record_key(k))[1]
            except DatasetNotFoundError:
                if self._read_generation_quietly() >= k:    # removed: not known
                    return False
                break
            except FormatError:
                return False
            if info.ops is None or set(info.ops) - {"append"}:
                return False
            k += 1
        self._appends_upto = k - 1
        return True

    # ------------------------------------------------------ other writers

    def committed_elsewhere(self) -> bool:
        """True when another writer committed since this journal loaded its state
        (the consolidated metadata holds another generation)."""
        return self._generation is not None and \
            self._read_generation_quietly() != self._generation

    def concurrent_error(self) -> ConcurrentWriteError:
        """The error for a writer whose loaded state another writer replaced."""
        return ConcurrentWriteError(
            f"{self.root}: another writer committed to this dataset since it was loaded; "
            f"nothing of this change was committed: refresh() and write again, or pass "
            f"lock=True to serialise writers")

    def _read_generation_quietly(self) -> int:
        """The generation the consolidated metadata records now (0 if unreadable)."""
        generation = self._consolidated_generation()
        return 0 if generation is None else generation

    def _consolidated_generation(self):
        """The generation the consolidated metadata records now, None when it
        is missing or unreadable."""
        try:
            data = self.store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
            return load_consolidated(data, self.store.path(CONSOLIDATED_FILE))[0]
        except (DatasetNotFoundError, FormatError):
            return None

    def _concurrent(self, generation: int) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{self.root}: another writer committed to this dataset since it was loaded "
            f"(generation {generation} is taken); nothing of this change was committed: "
            f"refresh() and write again, or pass lock=True to serialise writers")

    def _apply(self, entries: list, newer_than: int | None = None) -> None:
        """Move each blob onto its key (and write contents carried inline,
        make deletions).

        On a local disk in the commit order, one step after the other: data,
        metadata, ``meta/sizes``, the checksum file, the consolidated metadata
        (so the real bcolz, reading during a commit, finds the chunks before
        the sizes that count them).  On a remote store everything but the
        consolidated metadata at once, then the consolidated metadata: its
        readers take that object as the end of the commit and read through
        the commit record until then, and the real bcolz cannot read there.

        A writer applying another's record of generation ``newer_than`` stops
        before a step once that generation is applied or a newer commit has
        begun: it must never write an older state over a newer one.
        """
        store = self.store
        keys = [key for key, _blob in entries]
        store.check_targets(keys)
        if store.remote:
            steps = [[e for e in entries if e[0] != CONSOLIDATED_FILE],
                     [e for e in entries if e[0] == CONSOLIDATED_FILE]]
        else:
            steps = [list(group) for _order, group in
                     itertools.groupby(entries, key=lambda e: commit_order(e[0])[0])]
        for step in steps:
            if newer_than is not None and (
                    self._read_generation_quietly() >= newer_than
                    or store.exists(record_key(newer_than + 1))):
                return
            self._apply_step(step)
        if self._sync:
            store.sync_folders(keys)

    def _apply_step(self, group: list) -> None:
        """Deletions, inline contents and blob moves of one step (concurrently
        on remote stores); a blob that is gone was moved already."""
        store = self.store
        tasks = []
        deletes = [key for key, blob in group if blob is None]
        if deletes:
            tasks.append(lambda: store.delete_many(deletes))
        tasks += [lambda item=(key, blob): store.put(*item)
                  for key, blob in group if isinstance(blob, bytes)]
        moves = [(JOURNAL_PREFIX + blob, key) for key, blob in group if isinstance(blob, str)]
        if moves and store.remote:
            # Copies only: the blobs go all at once afterwards (the writer's one
            # bulk delete, or recovery's removal of the record's blob folders).
            tasks += [lambda pair=pair: _copy_unless_moved(store, *pair) for pair in moves]
        elif moves:
            tasks.append(lambda: store.move_many(moves, missing_ok=True))
        store.for_each(lambda task: task(), tasks)


def _copy_unless_moved(store, src: str, dst: str) -> None:
    """Copy a blob onto its key; a blob that is gone was applied already."""
    try:
        store.copy(src, dst)
    except DatasetNotFoundError:
        pass
