"""The commit step of a :class:`~.journal.Journal`: one atomic commit of what
it staged, and what a writer does when another writer's commit came first.

:class:`Committer` is the journal's part that commits (its
:attr:`~.journal.Journal.committer`): the journal makes it with itself and its
:class:`~.staging.Staging` (the pending change: staged files, their checksums,
background writes, the operations and this writer's blob folder), and it
works on the journal's store and committed state
(:attr:`~.journal.Journal.state`) through the journal's public members only.

A commit (see :mod:`bcolz_store.storage.journal` for the whole protocol)
checks that the generation it loaded is still the newest, creates the record
of the next generation only if it does not exist (the commit point), applies
it, and removes the record :data:`~.committed.RETAIN_RECORDS` generations
older.  A record whose creation was answered "exists" but carries this
writer's token is this writer's (a lost answer).  When the generation is
taken, a change that only appended rows is rebased: its container reads the
rows back, reloads the newest state and appends them again, and the commit is
retried after a jittered exponential backoff; any other change raises
:class:`~bcolz_store.errors.ConflictError` naming both operations.
"""

from __future__ import annotations

import errno
import functools
import itertools
import random
import time

from ..errors import (ConcurrentWriteError, ConflictError, DatasetChangedError,
                      DatasetNotFoundError, FormatError)
from ..format.consolidated import dump_consolidated
from ..format.layout import CHECKSUM_FILE, CONSOLIDATED_FILE
from .checksums import dump_checksums, md5_hex
from .commit_lock import LockLostError
from .committed import RETAIN_RECORDS
from .io import pool
from .records import (JOURNAL_PREFIX, OPS, commit_order, record_bytes, record_key, staged_md5,
                      write_error)

__all__ = ["Committer", "REBASE_OVER"]

# What another writer's commits may have done for an append to be rebased on
# them: its rows then simply follow theirs.
REBASE_OVER = {"append", "setitem", "attrs"}
# Tries to read a commit record this writer may have created, whose answer was lost.
READS_OF_A_RECORD = 5
# Tries to apply a commit whose record stands before its failure is raised.
APPLY_TRIES = 4


class Committer:
    """Committing what a :class:`~.journal.Journal` staged: claiming the
    record of the next generation under the commit lock, rebasing an append
    that another writer's commit overtook, applying the record and cleaning
    up after it.

    Parameters
    ----------
    journal : Journal
        The journal whose changes this commits.  Only its public members are
        used: its store and committed state (:attr:`~.journal.Journal.state`),
        its settings (``retry_timeout``, ``commit_retries``, ``backoff_base``,
        ``backoff_max``, ``stale_after``, read at each commit, so that a value
        set on the journal or its class takes effect), its
        :attr:`~.journal.Journal.owner`,
        and what it does to its staging (``stage``, ``unstage``, ``discard``,
        ``note``, ``new_blob_folder``, ``reload_committed``).
    staging : Staging
        The journal's pending change (:attr:`~.journal.Journal.staging`): read
        here, and cleared once it is committed.

    Attributes
    ----------
    store : Store
        The journal's store.
    state : CommittedState
        The journal's committed state, which each commit advances.
    rebases : int
        Appends rebased on another writer's commit.
    """

    def __init__(self, journal, staging):
        self.journal = journal
        self.staging = staging
        self.store = journal.store
        self.state = journal.state
        self.rebases = 0
        self._syncing = {}          # small blobs whose fsync the commit started

    def commit(self) -> None:
        """Commit what is staged, all at once (see
        :meth:`~.journal.Journal.commit`, which calls this outside a batch,
        once something is staged and the committed state is loaded).

        When another writer committed first, a change that only appended rows
        is rebased on the new state by the container
        (:attr:`~.owner.DatasetOwner.capture_appends`) and committed again,
        after a jittered exponential backoff, at most ``commit_retries`` times
        within ``retry_timeout`` seconds (the journal's).

        Raises
        ------
        ConflictError
            When another writer committed since this one loaded the dataset
            and this change is not an append that can follow it.
        ConcurrentWriteError
            When an append could not be committed within the retries.
        LockTimeoutError
            When another writer held the commit lock for the rest of
            ``retry_timeout``.
        LockLostError
            When this writer stalled for longer than the commit lock's lease
            before its record was created and another writer took the lock
            over.
        OSError
            When the medium refuses a write, naming the file.
        """
        journal, staging = self.journal, self.staging
        started = time.monotonic()
        self._syncing = self._start_syncs()
        try:
            self._commit_until_done(started)
        finally:
            self._syncing = {}

    def _commit_until_done(self, started: float) -> None:
        journal, staging = self.journal, self.staging
        for attempt in itertools.count():
            staging.wait_for_blobs()    # written before the lock is taken: not in it
            waited = time.monotonic() - started
            with self.state.commit_lock.hold(max(journal.retry_timeout - waited, 1.0)):
                if not self._changes_anything():
                    journal.discard()
                    staging.ops.clear()
                    return
                try:
                    clean_up = self._commit_once()
                except ConcurrentWriteError as err:     # nothing committed; still staged
                    replay = self._plan_rebase(err, attempt, started)
                else:
                    break
            # Reloaded and staged again outside the lock (which may take long),
            # after a jittered exponential backoff.
            time.sleep(random.uniform(0, min(journal.backoff_max,
                                             journal.backoff_base * 2 ** attempt)))
            self.rebases += 1
            self._rebase(replay, started)
        clean_up()
        staging.ops.clear()
        if journal.owner is not None:
            journal.owner.committed()

    def _start_syncs(self) -> dict:
        """``{blob: Future}``: the fsyncs of the small blobs staged so far that
        change a file, started on io threads while the large ones are
        finishing (the commit waits for those its record names)."""
        staging = self.staging
        if not self.journal.sync_blobs or not staging.unsynced:
            return {}
        sums = self.state.checksums()
        return {blob: pool("io").submit(self.store.sync, [blob])
                for key, blob in staging.files.items()
                if blob in staging.unsynced and sums.get(key) != staging.sums[key]}

    def _rebase(self, replay, started: float) -> None:
        """Load the newest state and stage the captured appends (``replay``)
        on it; again, after a jittered exponential backoff, while other
        writers' commits change the state under the reload (on an object
        store a reload takes several requests) or the files the replay reads
        (the leftover chunk is read after the reload), within
        the journal's ``retry_timeout``.

        Raises
        ------
        ConcurrentWriteError, DatasetChangedError
            When other writers kept changing the state for the whole time.
        """
        journal = self.journal
        for attempt in itertools.count():
            try:
                journal.reload_committed()
                replay()
                journal.note("append")
                if journal.owner is not None:
                    journal.owner.stage_pending()
                return
            except ConflictError:
                raise
            except (ConcurrentWriteError, DatasetChangedError):
                if time.monotonic() - started >= journal.retry_timeout:
                    raise
            time.sleep(random.uniform(0, min(journal.backoff_max,
                                             journal.backoff_base * 2 ** attempt)))

    def _changes_anything(self) -> bool:
        """True when a staged file differs from the committed one (or a staged
        deletion removes a committed file) of the state this writer loaded:
        a writer whose state another writer replaced and that has nothing
        pending commits nothing (its ``flush()``, ``refresh()`` and
        ``close()`` stage what it loaded); a repair always changes a file."""
        if self.staging.repairs:
            return True
        sums = self.state.checksums()
        for key, digest in self.staging.sums.items():
            if digest is None:
                if key in sums:
                    return True
            elif sums.get(key) != staged_md5(digest):
                return True
        return False

    def _plan_rebase(self, err: ConcurrentWriteError, attempt: int, started: float):
        """What to do when the generation this writer loaded is taken: the
        container's replay of its appended rows (to run once the new state is
        loaded), or the error to raise, with the staged changes discarded."""
        journal, staging = self.journal, self.staging
        ours = tuple(sorted(staging.ops, key=OPS.index)) or ("other",)
        theirs = self._ops_since(self.state.generation)
        rebasable = set(theirs) <= REBASE_OVER if theirs is not None else \
            self._rebasable_since(self.state.generation)
        replay = None
        if ours == ("append",) and rebasable and journal.owner is not None:
            if attempt < journal.commit_retries and \
                    time.monotonic() - started < journal.retry_timeout:
                replay = journal.owner.capture_appends()
            else:
                journal.discard()
                staging.ops.clear()
                raise ConcurrentWriteError(
                    f"{journal.root}: other writers kept committing; this append was rebased "
                    f"{attempt} times in {time.monotonic() - started:.1f} s and is not "
                    f"committed (Journal.commit_retries, Journal.retry_timeout)") from err
        if replay is None:
            journal.discard()
            staging.ops.clear()
            said = "unknown operations (a commit of an earlier version, or too many " \
                "commits ago)" if theirs is None else " and ".join(theirs) or "a change"
            raise ConflictError(
                f"{journal.root}: another writer committed ({said}) since this one loaded the "
                f"dataset, and this writer's {' and '.join(ours)} conflicts with it; nothing "
                f"of this change was committed: refresh() and write again, or pass lock=True "
                f"to serialise writers", ours, theirs) from err
        return replay

    def _marks(self, generation: int) -> tuple:
        """``(rewritten_at, reshaped_at)`` of the commit of ``generation`` that
        this writer makes: the loaded state's, or ``generation`` when this
        change is more than an append (or reshapes), or they are not known."""
        state, ops = self.state, self.staging.ops or {"other"}
        rewritten_at = state.rewritten_at if ops == {"append"} else None
        reshaped_at = state.reshaped_at if ops <= REBASE_OVER else None
        return (generation if rewritten_at is None else rewritten_at,
                generation if reshaped_at is None else reshaped_at)

    def _ops_since(self, generation: int):
        """The operations of the commits after ``generation`` (their records'
        ``ops``), or None when one is not known (its record is gone, or an
        earlier version wrote it)."""
        ops = []
        current = self.state.current_generation()
        k = generation + 1
        while k <= generation + RETAIN_RECORDS:
            try:
                info = self.state.read_record(record_key(k))[1]
            except DatasetNotFoundError:
                if k <= current:
                    return None
                break
            except FormatError:
                return None
            if info.ops is None:
                return None
            ops += [op for op in info.ops if op not in ops]
            k += 1
        return tuple(sorted(ops, key=OPS.index)) if k > generation + 1 else None

    def _rebasable_since(self, generation: int) -> bool:
        """True when no commit after ``generation`` reshaped the dataset, as
        the consolidated metadata says (``reshaped_at``) however many commits
        ago, and the record of a commit not yet applied, if any (a dead
        writer's), says too: an append then follows them, even when their
        records are gone."""
        now = self.state.consolidated_now()
        if now is None or now.reshaped_at is None or now.reshaped_at > generation:
            return False
        try:
            info = self.state.read_record(record_key(now.generation + 1))[1]
        except DatasetNotFoundError:
            return True
        except FormatError:
            return False
        return info.ops is not None and set(info.ops) <= REBASE_OVER

    def _claim(self, generation: int, record: bytes) -> None:
        """Create the record of ``generation``: the commit point.

        The generation the consolidated metadata holds is checked first: a
        record is removed only :data:`RETAIN_RECORDS` commits after its own,
        so a writer that finds its generation still current cannot recreate a
        removed record.  A request whose answer was lost (the record exists
        and is ours, by its writer token) succeeded.

        Raises
        ------
        ConcurrentWriteError
            When the generation is taken.
        OSError
            When the store refuses the write (and the record is not ours).
        """
        key = record_key(generation)
        current = self.state.consolidated_generation()
        if current is not None and current != generation - 1:
            raise self._concurrent(generation)
        try:
            self.store.put_if_absent(key, record)
        except ConcurrentWriteError:
            if self._record_writer(key) != self.staging.token:
                raise self._concurrent(generation) from None
        except OSError as err:
            if self._record_writer(key) != self.staging.token:
                raise write_error(err, "the commit record", self.store.path(key),
                                  self.journal.root) from err

    def _concurrent(self, generation: int) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{self.journal.root}: another writer committed to this dataset since it was loaded "
            f"(generation {generation} is taken); nothing of this change was committed: "
            f"refresh() and write again, or pass lock=True to serialise writers")

    def _record_writer(self, key: str):
        """The writer token of the record ``key`` (None when there is none, or
        it stays unreadable over a few tries: a failed read must not turn this
        writer's commit into another's)."""
        for attempt in range(READS_OF_A_RECORD):
            try:
                return self.state.read_record(key)[1].writer
            except DatasetNotFoundError:
                return None
            except (OSError, FormatError):
                time.sleep(0.01 * 2 ** attempt)
        return None

    def _commit_once(self):
        """One attempt of :meth:`commit`: returns the clean-up to run once the
        commit lock is released.  A ConcurrentWriteError leaves the staged
        changes in place (the caller rebases or discards them); any other
        failure discards them."""
        journal, staging = self.journal, self.staging
        generation = self.state.generation + 1
        try:
            sums = dict(self.state.checksums())
            meta = dict(self.state.metadata_files())
            for key, digest in staging.sums.items():
                if digest is None:
                    sums.pop(key, None)
                    meta.pop(key, None)
                else:  # every blob is written and synced once its checksum is known
                    sums[key] = staged_md5(digest)
            meta.update(staging.meta)
            staging.inflight.clear()
            staging.inflight_bytes = 0
            checksum_file = dump_checksums(sums)
            journal.stage(CHECKSUM_FILE, checksum_file)
            # Since when every commit only appended (readers beside appends use
            # it), and since when none reshaped the dataset (rebases use it).
            rewritten_at, reshaped_at = self._marks(generation)
            journal.stage(CONSOLIDATED_FILE, dump_consolidated(generation, meta,
                                                            md5_hex(checksum_file),
                                                            rewritten_at, reshaped_at))
            # A checksum file of 64 KiB or more is written on a background
            # thread: it must exist before the record that names it, or
            # applying the record finds no blob to move and keeps the old file.
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                staged_md5(staging.sums[key])
            if journal.sync_blobs:
                unsynced = staging.unsynced.intersection(staging.files.values())
                syncing = [self._syncing[blob] for blob in unsynced if blob in self._syncing]
                self.store.sync(unsynced.difference(self._syncing))
                for future in syncing:
                    future.result()
            staging.unsynced.clear()
            entries = sorted(([key, blob[len(JOURNAL_PREFIX):] if isinstance(blob, str)
                               else blob] for key, blob in staging.files.items()),
                             key=lambda e: commit_order(e[0]))
            self.store.check_targets([key for key, _blob in entries])
            self._check_own_blobs(entries)
            ops = staging.ops or {"other"}
            self.state.commit_lock.confirm()
            self._claim(generation, record_bytes(entries, staging.token, generation - 1, ops))
        except ConcurrentWriteError:
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                journal.unstage(key)
            raise
        except BaseException:
            journal.discard()
            raise
        # Committed: from here on the change stands, even if applying fails
        # (then recovery finishes it, with these blobs).
        staging.files.clear()
        staging.sums.clear()
        staging.meta.clear()
        staging.repairs.clear()
        committed_blobs = staging.prefix if staging.folder_made else None
        scratch_used = staging.scratch_used
        journal.new_blob_folder()
        self.state.set_committed(generation, sums, meta, rewritten_at, reshaped_at)
        if journal.sync_blobs:
            # A failure is raised, and the commit stands: whoever applies the
            # record next (this writer's reload, or another writer) finds its blobs.
            self.store.sync_folders([record_key(generation)])
        # Records stay RETAIN_RECORDS commits (see _claim); the oldest goes.
        expired = record_key(generation - RETAIN_RECORDS) \
            if generation > RETAIN_RECORDS else None
        remote = self.store.remote
        lost = False
        for attempt in range(APPLY_TRIES):
            try:
                if attempt:
                    self.state.apply(entries, newer_than=generation)
                else:
                    self.state.apply(entries)
                break
            except LockLostError:
                # This writer stalled past the lease and another took the lock
                # over: the commit stands, and the new holder applies it, with
                # this commit's blobs (so they are not removed here).
                lost = True
                break
            except (OSError, FormatError):
                # The commit stands (its record exists).  A transient fault
                # (a failed or lost request) is tried again; a lasting one is
                # raised, and the next writer to take the commit lock applies
                # the record.
                if attempt == APPLY_TRIES - 1:
                    raise
                time.sleep(0.01 * 2 ** attempt)
        self.state.committed_own(generation)
        if lost:
            return lambda: None
        blobs = [JOURNAL_PREFIX + blob for _key, blob in entries if isinstance(blob, str)]
        return functools.partial(self._clean_up, remote and not scratch_used, blobs,
                                 committed_blobs, expired)

    def _clean_up(self, copied: bool, blobs: list, folder, expired) -> None:
        """After a commit, outside the commit lock: remove its blobs (``copied``:
        one bulk delete of the known keys, with the expired record; else the
        blob ``folder``) and the record :data:`RETAIN_RECORDS` generations
        older, ``expired``.  A failure leaves garbage that a later writer
        collects, never a wrong state."""
        try:
            if copied:
                self.store.delete_many(blobs + ([expired] if expired else []))
                return
            if folder is not None:      # every content travelled inline otherwise
                self.store.delete_prefix(folder)
            if expired is not None:
                self.store.delete(expired)
        except (OSError, FormatError):
            pass

    def _check_own_blobs(self, entries: list) -> None:
        """Under the commit lock, before the record is created: every blob it
        names exists.  Another writer removes a blob folder only under the
        same lock, and only one untouched for the journal's ``stale_after`` seconds
        (taken for a dead writer's), so once this holds it holds until the
        record is applied.

        Raises
        ------
        OSError
            ENOENT naming a missing blob: this writer's pending change sat
            unwritten for longer than ``stale_after`` and another writer
            removed its blobs; nothing is committed.
        """
        blobs = [JOURNAL_PREFIX + blob for _key, blob in entries if isinstance(blob, str)]
        if not blobs:
            return
        prefix = self.staging.prefix
        if self.store.on_disk:      # one listing of this writer's folder
            names = set(self.store.listdir(prefix))
            missing = [blob for blob in blobs
                       if not (blob.startswith(prefix) and blob[len(prefix):] in names)]
        else:
            present = set(self.store.list_times(prefix))
            missing = [blob for blob in blobs if blob not in present]
        if missing:
            journal = self.journal
            raise OSError(errno.ENOENT, f"{journal.root}: a blob of this writer's pending change "
                          f"is gone: another writer took this writer for dead after "
                          f"{journal.stale_after:.0f} s without a write (Journal.stale_after) "
                          f"and removed its blobs; nothing of the change was committed",
                          self.store.path(missing[0]))
