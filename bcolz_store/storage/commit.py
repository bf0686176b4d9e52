"""The commit step of :class:`~.journal.Journal`: one atomic commit of what
is staged, and what a writer does when another writer's commit came first.

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
import os
import random
import time
from concurrent.futures import wait

from ..errors import (ConcurrentWriteError, ConflictError, DatasetChangedError,
                      DatasetNotFoundError, FormatError)
from ..format.consolidated import dump_consolidated
from ..format.layout import CHECKSUM_FILE, CONSOLIDATED_FILE
from .checksums import dump_checksums, md5_hex
from .commit_lock import LockLostError
from .committed import LOCK_LEASE, RETAIN_RECORDS
from .records import (JOURNAL_PREFIX, OPS, commit_order, record_bytes, record_key, staged_md5,
                      write_error)

__all__ = ["CommitProtocol", "REBASE_OVER"]

# What another writer's commits may have done for an append to be rebased on
# them: its rows then simply follow theirs.
REBASE_OVER = {"append", "setitem", "attrs"}
# Tries to read a commit record this writer may have created, whose answer was lost.
READS_OF_A_RECORD = 5
# Tries to apply a commit whose record stands before its failure is raised.
APPLY_TRIES = 4


class CommitProtocol:
    """Committing what a :class:`~.journal.Journal` staged (its base class:
    the journal's constructor sets the staging attributes used here, and its
    committed state, :attr:`~.journal.Journal.state`, is a
    :class:`~.committed.CommittedState` of its own)."""

    #: Seconds after which a commit lock object whose holder has not renewed
    #: it is taken for a dead writer's (:data:`~.committed.LOCK_LEASE`).
    lock_lease = LOCK_LEASE

    #: Rebases of an append whose generation another writer took, at most ...
    commit_retries = 1000
    #: ... and seconds spent retrying, at most.
    retry_timeout = 120.0
    #: The backoff before the n-th retry is uniform in [0, min(backoff_max,
    #: backoff_base * 2**n)] seconds.
    backoff_base = 0.002
    backoff_max = 0.5

    def note(self, op: str) -> None:
        """Record that the pending change includes ``op`` (one of
        :data:`~.records.OPS`); the commit record names the operations, and a
        commit that only appended is rebased instead of failing."""
        self._ops.add(op if op in OPS else "other")

    def commit(self) -> None:
        """Make the staged changes durable and visible, all at once.

        Nothing is committed when the staged files hold what is committed
        already (a ``flush()`` with nothing pending).  When another writer
        committed first, a change that only appended rows (see :meth:`note`)
        is rebased on the new state by the container
        (:attr:`~.owner.DatasetOwner.capture_appends`)
        and committed again, after a jittered exponential backoff, at most
        :attr:`commit_retries` times within :attr:`retry_timeout` seconds.

        Raises
        ------
        ConflictError
            When another writer committed since this one loaded the dataset
            and this change is not an append that can follow it (nothing of
            this commit is made; the message names both operations).
        ConcurrentWriteError
            When an append could not be committed within the retries.
        LockTimeoutError
            When another writer held the commit lock for the rest of
            :attr:`retry_timeout` (nothing of this change is committed).
        LockLostError
            When this writer stalled for longer than the commit lock's lease
            before its record was created and another writer took the lock
            over (nothing of this change is committed).
        OSError
            When the medium refuses a write (full, read-only...), naming the
            file.  If that happens before the commit record exists, nothing
            changes; after it, the change is committed and finished at once or
            by the next writer to open the dataset.
        """
        if self._batch:
            self._commit_requested = True
            return
        self._commit_requested = False
        if self.owner is not None and not self.readonly:
            self.owner.stage_pending()     # a commit includes every pending append
        if not self._staged:
            self._ops.clear()
            return
        self._check_writable()
        if self.state.generation is None:
            self.recover()
        started = time.monotonic()
        for attempt in itertools.count():
            self._wait_for_blobs()      # written before the lock is taken: not in it
            waited = time.monotonic() - started
            with self.state.commit_lock.hold(max(self.retry_timeout - waited, 1.0)):
                if not self._changes_anything():
                    self.discard()
                    self._ops.clear()
                    return
                try:
                    clean_up = self._commit_once()
                except ConcurrentWriteError as err:     # nothing committed; still staged
                    replay = self._plan_rebase(err, attempt, started)
                else:
                    break
            # Reloaded and staged again outside the lock (which may take long),
            # after a jittered exponential backoff.
            time.sleep(random.uniform(0, min(self.backoff_max,
                                             self.backoff_base * 2 ** attempt)))
            self.rebases += 1
            self._rebase(replay, started)
        clean_up()
        self._ops.clear()
        if self.owner is not None:
            self.owner.committed()

    def _wait_for_blobs(self) -> None:
        """Wait for the blobs written on background threads (their errors are
        raised by :meth:`_commit_once`)."""
        for future, _size in list(self._inflight):
            wait([future])

    def _rebase(self, replay, started: float) -> None:
        """Load the newest state and stage the captured appends (``replay``)
        on it; again, after a jittered exponential backoff, while other
        writers' commits change the state under the reload (on an object
        store a reload takes several requests) or the files the replay reads
        (the leftover chunk is read after the reload), within
        :attr:`retry_timeout`.

        Raises
        ------
        ConcurrentWriteError, DatasetChangedError
            When other writers kept changing the state for the whole time.
        """
        for attempt in itertools.count():
            try:
                self.reload_committed()
                replay()
                self.note("append")
                if self.owner is not None:
                    self.owner.stage_pending()
                return
            except ConflictError:
                raise
            except (ConcurrentWriteError, DatasetChangedError):
                if time.monotonic() - started >= self.retry_timeout:
                    raise
            time.sleep(random.uniform(0, min(self.backoff_max,
                                             self.backoff_base * 2 ** attempt)))

    def _changes_anything(self) -> bool:
        """True when a staged file differs from the committed one (or a staged
        deletion removes a committed file) of the state this writer loaded:
        a writer whose state another writer replaced and that has nothing
        pending commits nothing (its ``flush()``, ``refresh()`` and
        ``close()`` stage what it loaded)."""
        sums = self.state.checksums()
        for key, digest in self._staged_sums.items():
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
        ours = tuple(sorted(self._ops, key=OPS.index)) or ("other",)
        theirs = self._ops_since(self.state.generation)
        rebasable = set(theirs) <= REBASE_OVER if theirs is not None else \
            self._rebasable_since(self.state.generation)
        replay = None
        if ours == ("append",) and rebasable and self.owner is not None:
            if attempt < self.commit_retries and \
                    time.monotonic() - started < self.retry_timeout:
                replay = self.owner.capture_appends()
            else:
                self.discard()
                self._ops.clear()
                raise ConcurrentWriteError(
                    f"{self.root}: other writers kept committing; this append was rebased "
                    f"{attempt} times in {time.monotonic() - started:.1f} s and is not "
                    f"committed (Journal.commit_retries, Journal.retry_timeout)") from err
        if replay is None:
            self.discard()
            self._ops.clear()
            said = "unknown operations (a commit of an earlier version, or too many " \
                "commits ago)" if theirs is None else " and ".join(theirs) or "a change"
            raise ConflictError(
                f"{self.root}: another writer committed ({said}) since this one loaded the "
                f"dataset, and this writer's {' and '.join(ours)} conflicts with it; nothing "
                f"of this change was committed: refresh() and write again, or pass lock=True "
                f"to serialise writers", ours, theirs) from err
        return replay

    def _marks(self, generation: int) -> tuple:
        """``(rewritten_at, reshaped_at)`` of the commit of ``generation`` that
        this writer makes: the loaded state's, or ``generation`` when this
        change is more than an append (or reshapes), or they are not known."""
        state, ops = self.state, self._ops or {"other"}
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
            if self._record_writer(key) != self._token:
                raise self._concurrent(generation) from None
        except OSError as err:
            if self._record_writer(key) != self._token:
                raise write_error(err, "the commit record", self.store.path(key),
                                  self.root) from err

    def _concurrent(self, generation: int) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{self.root}: another writer committed to this dataset since it was loaded "
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
        generation = self.state.generation + 1
        try:
            sums = dict(self.state.checksums())
            meta = dict(self.state.metadata_files())
            for key, digest in self._staged_sums.items():
                if digest is None:
                    sums.pop(key, None)
                    meta.pop(key, None)
                else:  # every blob is written and synced once its checksum is known
                    sums[key] = staged_md5(digest)
            meta.update(self._staged_meta)
            self._inflight.clear()
            self._inflight_bytes = 0
            checksum_file = dump_checksums(sums)
            self.stage(CHECKSUM_FILE, checksum_file)
            # Since when every commit only appended (readers beside appends use
            # it), and since when none reshaped the dataset (rebases use it).
            rewritten_at, reshaped_at = self._marks(generation)
            self.stage(CONSOLIDATED_FILE, dump_consolidated(generation, meta,
                                                            md5_hex(checksum_file),
                                                            rewritten_at, reshaped_at))
            # A checksum file of 64 KiB or more is written on a background
            # thread: it must exist before the record that names it, or
            # applying the record finds no blob to move and keeps the old file.
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                staged_md5(self._staged_sums[key])
            if self._sync:
                self.store.sync(self._unsynced.intersection(self._staged.values()))
            self._unsynced.clear()
            entries = sorted(([key, blob[len(JOURNAL_PREFIX):] if isinstance(blob, str)
                               else blob] for key, blob in self._staged.items()),
                             key=lambda e: commit_order(e[0]))
            self.store.check_targets([key for key, _blob in entries])
            self._check_own_blobs(entries)
            ops = self._ops or {"other"}
            self.state.commit_lock.confirm()
            self._claim(generation, record_bytes(entries, self._token, generation - 1, ops))
            if self._sync:
                self.store.sync_folders([record_key(generation)])
        except ConcurrentWriteError:
            for key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
                self._unstage(key)
            raise
        except BaseException:
            self.discard()
            raise
        # Committed: from here on the change stands, even if applying fails
        # (then recovery finishes it, with these blobs).
        self._staged.clear()
        self._staged_sums.clear()
        self._staged_meta.clear()
        committed_blobs = self._blob_prefix if self._dir_ready else None
        scratch_used = self._scratch_used
        self._new_blob_folder()
        self.state.set_committed(generation, sums, meta, rewritten_at, reshaped_at)
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
        same lock, and only one untouched for :attr:`stale_after` seconds
        (taken for a dead writer's), so once this holds it holds until the
        record is applied.

        Raises
        ------
        OSError
            ENOENT naming a missing blob: this writer's pending change sat
            unwritten for longer than :attr:`stale_after` and another writer
            removed its blobs; nothing is committed.
        """
        blobs = [JOURNAL_PREFIX + blob for _key, blob in entries if isinstance(blob, str)]
        if not blobs:
            return
        if self.store.on_disk:
            missing = [blob for blob in blobs if not os.path.lexists(self.store.path(blob))]
        else:                       # one listing of this writer's folder
            present = set(self.store.list_times(self._blob_prefix))
            missing = [blob for blob in blobs if blob not in present]
        if missing:
            raise OSError(errno.ENOENT, f"{self.root}: a blob of this writer's pending change "
                          f"is gone: another writer took this writer for dead after "
                          f"{self.stale_after:.0f} s without a write (Journal.stale_after) "
                          f"and removed its blobs; nothing of the change was committed",
                          self.store.path(missing[0]))
