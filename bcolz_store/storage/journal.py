"""Atomic commits for one dataset root, on any :class:`~.base.Store`.

bcolz rewrites ``meta/sizes`` and chunk files in place, so a writer killed in
the middle leaves a dataset that may not open, or holds torn data.  Here every
change goes through a journal inside the root, under keys bcolz never reads::

    ROOT/.bcolz_store-journal/
        <writer>/000001.blob ...  new contents of files, one folder per writer
        commit-000000000042.json  the record of commit 42: once it exists,
                                  the change is committed
        commit.lock               the commit lock (local disks: an OS lock on
                                  this file; elsewhere: the lock object)
    ROOT/bcolz_store.md5          checksums of the bcolz files
    ROOT/bcolz_store.json         consolidated metadata, with the generation
                                  of the last applied commit

A commit (kartothek's lesson, seeds/003: state changes only by one atomic
step that readers can follow without locks):

1. every new file is written to a blob in the writer's own folder of the
   journal (and, on a local disk, fsynced), without any lock;
2. the writer takes the dataset's commit lock (:mod:`~.commit_lock`: an OS
   lock on a local disk, a lock object with a lease elsewhere) and checks
   that ``bcolz_store.json`` still says the generation ``g`` it loaded;
3. the record ``[[key, blob or null], ...]`` of generation ``g + 1`` is created
   atomically and only if it does not exist (an exclusive hard link of a
   written, fsynced file on a local disk; a conditional PUT with
   ``If-None-Match`` on S3).  This is the commit.  Of two writers that loaded
   the same state only one can commit; the other's append is rebased on the
   new state, anything else raises :class:`ConflictError`: no commit is ever
   lost silently;
4. still under the lock, each blob is moved onto its bcolz name (a rename on
   a local disk, a copy and a delete in an object store), deletions are made,
   ``meta/sizes``, the checksum file and the consolidated metadata (now saying
   ``g + 1``) last; then the lock is released;
5. the writer's blob folder and the record 32 generations older are removed.

On open, a writer that finds a committed but unapplied record takes the
commit lock (its writer is applying it, or died) and applies what is still
unapplied, and removes (under the lock) blob folders that no live writer can
own (all of them under ``lock=True``, else those untouched for
:attr:`Journal.stale_after` seconds).  A reader that cannot write reads
through an unapplied record instead, so it too sees the committed state.  The
bcolz files themselves never change format.

A record found in a dataset may come from anyone: before it is read through or
rolled forward, every entry is validated (:func:`check_manifest`), every blob
must be a plain object no larger than its target may be, and (local disks) no
folder on the way to a target may be a symlink.

A :class:`Journal` stages (step 1) into its :class:`~.staging.Staging`, the
pending change, and hands it to its :class:`~.commit.Committer` for steps 2
to 5; its committed state (:attr:`Journal.state`) is a
:class:`~.committed.CommittedState`.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from concurrent.futures import Future, wait

from ..errors import FormatError, ReadOnlyError, WriteFailedError
from ..format.layout import commit_key_limit, is_metadata_key
from .base import Store
from .checksums import md5_hex, read_limit
from .commit import Committer
from .committed import LOCK_LEASE, CommittedState
from .io import pool
from .owner import DatasetOwner
from .records import (INLINE_MAX_BYTES, JOURNAL_PREFIX, OPS, blob_key, check_manifest,
                      record_key, write_blob, write_error)
from .staging import Staging

__all__ = ["JOURNAL_PREFIX", "Journal", "check_manifest", "record_key"]

# Blobs at least this large are written, checksummed and synced on a
# background thread while the caller compresses the next chunk; at most
# MAX_INFLIGHT_BYTES of them wait in memory.
ASYNC_MIN_BYTES = 1 << 16
MAX_INFLIGHT_BYTES = 64 << 20


class Journal:
    """The commits of one dataset root (a carray rootdir, or a ctable rootdir
    shared by its columns).

    Parameters
    ----------
    store : Store
        The dataset's store (its root is the dataset root).
    readonly : bool
        A read-only journal never writes: it only reads through a committed
        record left by an interrupted writer.
    fsync : bool, optional
        Sync blobs, the record and folders on stores that need it (local
        disks); default :attr:`fsync_default` (turn off only for scratch data).
    consolidated : bool, optional
        Serve metadata reads from ``bcolz_store.json`` (one request on an
        object store); default: on remote stores only.
    locked : bool, lock or None, default False
        The writer lock this process holds (``lock=True``): the
        blob folders of other writers are dead writers' garbage.

    Attributes
    ----------
    state : CommittedState
        The committed state this journal loaded, its recovery and the checks
        of lock-free reads.
    owner : DatasetOwner or None
        The containers of the dataset (:meth:`attach`).
    broken : BaseException or None
        The error that left the writer unusable (see :meth:`operation`).
    staging : Staging
        What this writer staged for its next commit, and its blob folder.
    committer : Committer
        The part that commits the staging (:meth:`commit` calls it).
    rebases : int
        Appends rebased on another writer's commit.
    """

    fsync_default = True
    # Seconds after which a blob folder no commit names is taken for a dead
    # writer's and removed by the next writer that opens the dataset.
    stale_after = 900.0
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

    def __init__(self, store: Store, readonly: bool = False, fsync: bool | None = None,
                 consolidated: bool | None = None, locked=False):
        self.store = store
        self.root = store.url
        self.fsync = self.fsync_default if fsync is None else fsync
        if hasattr(store, "fsync_enabled"):
            store.fsync_enabled = self.fsync
        self._sync = self.fsync and store.durable
        self.staging = Staging()   # the pending change and this writer's blob folder
        self._blob_lock = threading.Lock()
        self._batch = 0
        self._commit_requested = False
        # Failed writes (see :meth:`operation`).
        self._depth = 0
        self.broken = None         # the error that left the writer unusable
        self.owner = None          # the containers (see attach())
        self.state = CommittedState(store, readonly, consolidated=consolidated, sync=self._sync,
                                    locked=locked, lock_lease=self.lock_lease,
                                    retry_timeout=self.retry_timeout,
                                    stale_after=self.stale_after)
        self.committer = Committer(self, self.staging)
        self.new_blob_folder()

    def new_blob_folder(self) -> None:
        """Stage future blobs in a folder of a new name (the blobs of a commit
        belong to its record once it exists; nothing but applying it or
        recovery may remove them)."""
        token = uuid.uuid4().hex[:16]
        self.staging.new_folder(token)
        self.state.keep_folder(token)

    def attach(self, owner: DatasetOwner) -> None:
        """Let ``owner`` (the containers of this dataset) take part in its
        commits: a failed write reloads them, every commit stages what they
        hold, an overtaken append is rebased by them (see :class:`DatasetOwner`)."""
        self.owner = owner

    @property
    def readonly(self) -> bool:
        """A read-only journal never writes (its committed state reads through
        a record an interrupted writer left)."""
        return self.state.readonly

    @readonly.setter
    def readonly(self, value: bool) -> None:
        self.state.readonly = value

    @property
    def rebases(self) -> int:
        """Appends rebased on another writer's commit (by the :attr:`committer`)."""
        return self.committer.rebases

    @property
    def sync_blobs(self) -> bool:
        """True when blobs are synced once written (fsync wanted, on a store
        that needs it)."""
        return self._sync

    @property
    def in_operation(self) -> bool:
        """True inside :meth:`operation` (a container's write is under way)."""
        return self._depth > 0

    def recover(self) -> None:
        """Load the committed state (see :meth:`.CommittedState.recover`)."""
        self.state.recover()

    def lookup(self, key: str):
        """Where the current content of ``key`` lives, if not at its bcolz name:
        staged by this writer, or in a committed record a reader reads through
        (see :meth:`.CommittedState.lookup`, which returns the same)."""
        staging = self.staging
        if key in staging.files:
            digest = staging.sums[key]
            if isinstance(digest, Future):
                digest.result()  # the blob is written (or its error raised)
            return True, staging.files[key]
        return self.state.lookup(key)

    def reads_through(self) -> bool:
        """True when every file is read at its bcolz name: nothing is staged
        and no committed record waits to be applied."""
        return not self.staging.files and not self.state.overlay

    def in_overlay(self, key: str) -> bool:
        """True when ``key`` is read from a committed but unapplied commit record."""
        return key in self.state.overlay and key not in self.staging.files

    def reset(self) -> None:
        """Forget everything (the dataset root is being removed)."""
        self.discard()
        self.state.reset()
        self.staging.folder_made = False

    # ------------------------------------------------------- failed writes

    @contextlib.contextmanager
    def operation(self, what: str | None = None):
        """Run one write operation of a container (``what``: its name in
        :data:`~.records.OPS`, noted for the commit record): on any
        exception, return every container of this dataset to its last
        committed state.

        The outermost operation handles the failure: staged blobs are
        discarded, the journal is cleaned (or a committed record rolled
        forward), and the :attr:`owner` reloads the committed state into
        the containers.  When that reload fails too, the journal is *broken*:
        every later write raises :class:`WriteFailedError` until ``refresh()``
        succeeds.  The original exception is re-raised.

        Raises
        ------
        WriteFailedError
            On entry, when an earlier failure left the journal broken.
        """
        if self.broken is not None:
            raise WriteFailedError(
                f"{self.root}: an earlier write failed ({self.broken}) and the committed "
                f"state could not be reloaded; call refresh()") from self.broken
        if what is not None:
            self.note(what)
        self._depth += 1
        try:
            yield self
        except BaseException as err:
            if self._depth == 1:
                self.roll_back(err)
            raise
        finally:
            self._depth -= 1

    def roll_back(self, err: BaseException | None = None) -> None:
        """Forget staged changes and reload the committed state (see :meth:`operation`);
        when that fails, mark the journal broken instead of raising."""
        try:
            self.reload_committed()
        except Exception as reload_err:   # the medium still fails: refuse writes
            self.broken = reload_err if err is None else err

    def reload_committed(self) -> None:
        """Forget staged changes, finish or discard an interrupted commit, and
        reload the committed state into the containers (the :attr:`owner`).

        Raises
        ------
        FormatError, OSError
            When the committed state cannot be read; the journal stays broken.
        """
        self.discard()
        self._batch = 0
        self._commit_requested = False
        self.state.unload()
        self.recover()
        if self.owner is not None:
            # again if a commit began meanwhile (files of two states)
            self.state.read_consistently(self.owner.reload, just_loaded=True)
        self.broken = None

    # --------------------------------------------------------------- writing

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def _ensure_dir(self, key: str = "") -> None:
        if not self.staging.folder_made:
            self.store.check_folder(JOURNAL_PREFIX)   # refuses a symlink in its place
            try:
                self.store.makedirs(self.staging.prefix.rstrip("/"))
            except OSError as err:
                raise write_error(err, key, self.store.path(self.staging.prefix.rstrip("/")),
                              self.root) from err
            self.staging.folder_made = True

    def _next_blob(self, key: str) -> str:
        with self._blob_lock:          # blobs are also written ahead (see new_blob)
            self._ensure_dir(key)
            self.staging.counter += 1
            return blob_key(self.staging.prefix, self.staging.counter)

    def new_blob(self, key: str) -> str:
        """A fresh blob key in this writer's folder (made first) for new
        content of ``key``; any thread may ask (:mod:`~.ahead`)."""
        return self._next_blob(key)

    def scratch_prefix(self, name: str) -> str:
        """A folder key inside this writer's blob folder, for files that a later
        :meth:`stage_moved` turns into blobs (an on-disk reshape builds there)."""
        self._ensure_dir()
        self.staging.scratch_used = True
        return f"{self.staging.prefix}{name}/"

    def stage(self, key: str, data, digest: str | None = None, repair: bool = False) -> None:
        """Record new content for ``key``; visible to this writer, committed later.

        Parameters
        ----------
        key : str
            Path relative to the root.
        data : bytes-like, or a list of them (written one after the other)
            Large contents are written on a background thread; an error there
            (a full disk) is raised by :meth:`commit`.
        digest : str, optional
            The md5 hex of ``data``, when the caller computed it already (the
            chunk pool does, where the compressed chunk is still in the cache).
        repair : bool, default False
            Commit a metadata file even where the committed checksums record
            ``data`` (it was damaged on disk since).

        Raises
        ------
        OSError
            When the medium refuses the write, naming the file.
        """
        self._check_writable()
        commit_key_limit(key, self.root)
        parts = data if isinstance(data, list) else [data]
        parts = [part if isinstance(part, bytes) else bytes(part) for part in parts]
        size = sum(len(part) for part in parts)
        if not repair and is_metadata_key(key) and self.staging.holds(key, b"".join(
                parts), None if self.state.generation is None else self.state.checksums()):
            return                          # unchanged (a flush with nothing new)
        if self.store.remote and size <= INLINE_MAX_BYTES:
            content = b"".join(parts)        # carried by the commit record
            self.unstage(key)
            self.staging.files[key] = content
            self.staging.sums[key] = digest or md5_hex(content)
            if is_metadata_key(key):
                self.staging.meta[key] = content
                self.staging.repairs.update([key] if repair else [])
            return
        blob = self._next_blob(key)
        if size >= ASYNC_MIN_BYTES:
            self._limit_inflight(MAX_INFLIGHT_BYTES - size)
            digest = pool("cpu").submit(write_blob, self.store, blob, parts, self._sync, key,
                                        digest)
            self.staging.inflight.append((digest, size))
            self.staging.inflight_bytes += size
        else:  # small: written now, synced with the others at commit
            digest = write_blob(self.store, blob, parts, False, key, digest)
            self.staging.unsynced.add(blob)
        self.unstage(key)
        self.staging.files[key] = blob
        self.staging.sums[key] = digest
        if is_metadata_key(key):
            self.staging.meta[key] = b"".join(parts)
            self.staging.repairs.update([key] if repair else [])

    def stage_moved(self, key: str, src: str, digest: str) -> None:
        """Make the written (and synced) object ``src`` of this store, of md5
        ``digest``, the new content of ``key``: it is moved into the journal now.

        Raises
        ------
        OSError
            When the move fails, naming the file.
        """
        self._check_writable()
        commit_key_limit(key, self.root)
        data = self.store.get(src, read_limit(key)) if is_metadata_key(key) else None
        blob = self._next_blob(key)
        try:
            self.store.move(src, blob)
        except OSError as err:
            raise write_error(err, key, self.store.path(blob), self.root) from err
        self.unstage(key)
        self.staging.files[key] = blob
        self.staging.sums[key] = digest
        if data is not None:
            self.staging.meta[key] = data

    def reserve_blobs(self, count: int) -> tuple:
        """Reserve ``count`` blob names in this writer's folder for files that
        others write (dask's workers, in other processes or machines); return
        ``(folder, first)``: blob ``i`` is :func:`~.records.blob_key`
        ``(folder, first + i)``.  :meth:`stage_written` stages them.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        OSError
            When the folder cannot be made, naming it.
        """
        self._check_writable()
        with self._blob_lock:
            self._ensure_dir()
            first = self.staging.counter + 1
            self.staging.counter += int(count)
        return self.staging.prefix, first

    def stage_written(self, key: str, blob: str, digest: str) -> None:
        """Make ``blob``, written (and, where the store needs it, synced) by
        someone else into a name :meth:`reserve_blobs` gave, with md5
        ``digest``, the new content of ``key``; nothing is moved or copied.

        Raises
        ------
        ValueError
            When ``blob`` is not a name reserved in this writer's folder.
        ReadOnlyError
            In mode 'r'.
        """
        self._check_writable()
        commit_key_limit(key, self.root)
        name = blob[len(self.staging.prefix):] if blob.startswith(self.staging.prefix) else ""
        if not (name.endswith(".blob") and name[:-5].isdigit()
                and 0 < int(name[:-5]) <= self.staging.counter):
            raise ValueError(f"{blob!r} is not a blob name reserved in this writer's folder "
                             f"{self.staging.prefix!r}")
        self.unstage(key)
        self.staging.files[key] = blob
        self.staging.sums[key] = digest

    def limit_inflight(self, future, size: int) -> None:
        """Count ``future``, a background write or fsync of ``size`` bytes, in
        flight, then wait until at most MAX_INFLIGHT_BYTES are."""
        self.staging.inflight.append((future, size))
        self.staging.inflight_bytes += size
        self._limit_inflight(MAX_INFLIGHT_BYTES)

    def _limit_inflight(self, limit: int) -> None:
        """Wait for background writes until at most ``limit`` bytes are pending."""
        staging = self.staging
        while staging.inflight and (staging.inflight_bytes > limit or
                                    staging.inflight[0][0].done()):
            future, size = staging.inflight.pop(0)
            wait([future])
            staging.inflight_bytes -= size

    def unstage(self, key: str) -> None:
        """Forget the staged content of ``key`` and remove its blob.

        Parameters
        ----------
        key : str
            Path relative to the root; nothing happens when it is not staged.
        """
        blob = self.staging.files.pop(key, None)
        digest = self.staging.sums.pop(key, None)
        self.staging.meta.pop(key, None)
        self.staging.repairs.discard(key)
        if isinstance(digest, Future):
            wait([digest])
        if isinstance(blob, str):
            with contextlib.suppress(OSError, FormatError):
                self.store.delete(blob)

    def stage_delete(self, key: str) -> None:
        """Record that ``key`` is to be removed."""
        self._check_writable()
        commit_key_limit(key, self.root)
        self.unstage(key)
        self.staging.files[key] = None
        self.staging.sums[key] = None

    def stage_delete_all(self, prefix: str = "") -> None:
        """Record that every file under ``prefix`` (the whole root: '') is to be
        removed, our own files excepted; staged changes there are dropped."""
        for key in self.store.list(prefix):
            self.stage_delete(key)
        for key in [k for k in self.staging.files if k.startswith(prefix)]:
            self.stage_delete(key)

    def forget(self, prefix: str) -> None:
        """Drop checksums and staged changes of every file under ``prefix``
        (a folder removed outside commits)."""
        self.state.forget(prefix)
        for key in [k for k in self.staging.files if k.startswith(prefix)]:
            self.unstage(key)

    def adopt(self, prefix: str) -> None:
        """Checksum the files already under ``prefix`` (a folder moved in)."""
        self.state.adopt(prefix)

    @contextlib.contextmanager
    def batch(self):
        """Group several operations into one commit.

        Commits asked for inside the block are made once, when the outermost
        block ends; staged changes nobody asked to commit (pending appends)
        stay pending.
        """
        self._batch += 1
        try:
            yield self
        finally:
            self._batch = max(self._batch - 1, 0)
        if self._batch == 0 and self._commit_requested:
            self.commit()

    def note(self, op: str) -> None:
        """Record that the pending change includes ``op`` (one of
        :data:`~.records.OPS`); the commit record names the operations, and a
        commit that only appended is rebased instead of failing."""
        self.staging.ops.add(op if op in OPS else "other")

    def commit(self) -> None:
        """Make the staged changes durable and visible, all at once (inside
        :meth:`batch`, once the outermost block ends); the
        :attr:`committer` makes the commit.

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
        if not self.staging.files:
            self.staging.ops.clear()
            return
        self._check_writable()
        if self.state.generation is None:
            self.recover()
        self.committer.commit()

    def discard(self) -> None:
        """Forget staged changes and remove this writer's blobs."""
        staging = self.staging
        staging.ops.clear()
        for key in list(staging.files):
            self.unstage(key)
        for future, _size in staging.inflight:
            wait([future])
        staging.inflight.clear()
        staging.inflight_bytes = 0
        staging.unsynced.clear()
        if staging.folder_made:
            with contextlib.suppress(OSError, FormatError):
                self.store.delete_prefix(staging.prefix)
            staging.folder_made = False
