"""Atomic commits for one dataset root, on any :class:`~.base.Store`.

bcolz rewrites ``meta/sizes`` and chunk files in place, so a writer killed in
the middle leaves a dataset that may not open, or holds torn data.  Here every
change goes through a journal inside the root, under keys bcolz never reads::

    ROOT/.bcolz_store-journal/
        <writer>/000001.blob ...  new contents of files, one folder per writer
        commit-000000000042.json  the record of commit 42: once it exists,
                                  the change is committed
    ROOT/bcolz_store.md5          checksums of the bcolz files
    ROOT/bcolz_store.json         consolidated metadata, with the generation
                                  of the last applied commit

A commit (kartothek's lesson, seeds/003: state changes only by one atomic
step that readers can follow without locks):

1. every new file is written to a blob in the writer's own folder of the
   journal (and, on a local disk, fsynced);
2. the record ``[[key, blob or null], ...]`` of generation ``g + 1`` is created
   atomically and only if it does not exist (an exclusive hard link of a
   written, fsynced file on a local disk; a conditional PUT with
   ``If-None-Match`` on S3).  This is the commit.  ``g`` is the generation this
   writer loaded, so of two writers that loaded the same state only one can
   commit; the other gets :class:`ConcurrentWriteError` and nothing of its
   change is committed: no commit is ever lost silently;
3. each blob is moved onto its bcolz name (a rename on a local disk, a copy
   and a delete in an object store), deletions are made, ``meta/sizes``, the
   checksum file and the consolidated metadata (now saying ``g + 1``) last;
4. the writer's blob folder and the record of generation ``g`` are removed.
   The newest record stays until the next commit applies, so that a writer
   still working from ``g`` finds generation ``g + 1`` taken.

On open, a writer rolls a committed but unapplied record forward (moving the
blobs that are still there; the step is idempotent) and removes blob folders
that no live writer can own (all of them under ``lock=True``, else those
untouched for :attr:`Journal.stale_after` seconds).  A reader that cannot
write reads through an unapplied record instead, so it too sees the committed
state.  The bcolz files themselves never change format.

A record found in a dataset may come from anyone: before it is read through or
rolled forward, every entry is validated (:func:`check_manifest`), every blob
must be a plain object no larger than its target may be, and (local disks) no
folder on the way to a target may be a symlink.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import itertools
import json
import re
import time
import uuid
from concurrent.futures import Future, wait

from ..errors import (ConcurrentWriteError, DatasetChangedError, DatasetNotFoundError,
                      FormatError, ReadOnlyError, WriteFailedError)
from ..format.consolidated import dump_consolidated, load_consolidated
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR, MAX_OWN_FILE_BYTES,
                             commit_key_limit, is_metadata_key)
from .base import Store
from .checksums import dump_checksums, load_checksums, md5_hex, read_limit
from .io import pool

__all__ = ["JOURNAL_PREFIX", "Journal", "check_manifest", "read_consistently", "record_key"]

JOURNAL_PREFIX = JOURNAL_DIR + "/"
# The record of an interrupted commit of earlier versions (one writer, one record).
LEGACY_MANIFEST = JOURNAL_PREFIX + "manifest.json"
_RECORD = re.compile(r"commit-([0-9]{12})\.json")
_BLOB_NAME = re.compile(r"(?:[0-9a-f]{16}/)?[0-9]{6,18}\.blob")
_UNSET = object()
# How often a reader retries opening while a writer is applying a commit.
READ_RETRIES = 400
# Blobs at least this large are written, checksummed and synced on a
# background thread while the caller compresses the next chunk; at most
# MAX_INFLIGHT_BYTES of them wait in memory.
ASYNC_MIN_BYTES = 1 << 16
MAX_INFLIGHT_BYTES = 64 << 20
# On remote stores, contents up to this size travel inside the commit record
# (written by one request at the commit) instead of as blobs of their own.
INLINE_MAX_BYTES = 1 << 16


def record_key(generation: int) -> str:
    """Key of the commit record of ``generation``."""
    return f"{JOURNAL_PREFIX}commit-{generation:012d}.json"


def _naming(err: OSError, key: str, path: str, root: str = "") -> OSError:
    """An OSError like ``err`` whose message names the file being written."""
    what = f"while writing {key} of {root}" if key and root else \
        f"while writing {key}" if key else "while writing"
    return type(err)(err.errno, f"{err.strerror or err} ({what})", path)


def _write_blob(store: Store, blob: str, parts: list, sync: bool, key: str):
    """Write ``parts`` as the new object ``blob``; return its md5 hex, or with
    ``sync`` the pair (md5 hex, Future of the fsync started on an io thread).

    Raises
    ------
    OSError
        When the medium refuses the write; the message names ``key`` (the
        bcolz file being written) and where its blob goes.
    """
    digest = hashlib.md5()
    for part in parts:
        digest.update(part)
    try:
        store.put(blob, parts)
    except OSError as err:
        raise _naming(err, key, store.path(blob), store.url) from err
    if sync:
        return digest.hexdigest(), pool("io").submit(store.sync, [blob])
    return digest.hexdigest()


def _result(digest):
    """A staged checksum: the md5 hex, once the background write (and its
    fsync) is done; raises what they raised."""
    if isinstance(digest, Future):
        digest = digest.result()
    if isinstance(digest, tuple):
        digest, synced = digest
        synced.result()
    return digest


def read_consistently(journal: "Journal", read):
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
        if journal.snapshot:
            # The metadata came from one object read at once (the consolidated
            # metadata of a remote store): a consistent state by itself.
            return read()
        try:
            result = read()
        except (FormatError, FileNotFoundError, DatasetChangedError):
            if journal.is_stable(marker):
                raise
        else:
            if journal.is_stable(marker):
                return result
        time.sleep(0.001 * min(attempt + 1, 20))
    raise DatasetChangedError(f"{journal.root}: writers kept committing while reading")


def _commit_order(key: str) -> tuple:
    """Data first, then metadata, ``meta/sizes`` next, the checksum file and
    the consolidated metadata (which marks the commit applied) last."""
    if key == CONSOLIDATED_FILE:
        return (4, key)
    if key == CHECKSUM_FILE:
        return (3, key)
    if key.endswith("meta/sizes"):
        return (2, key)
    if "/data/" in "/" + key:
        return (0, key)
    return (1, key)


def check_manifest(entries, where: str) -> list:
    """Validate a commit record before anything it names is read or moved.

    Every key must be a file a commit writes (:func:`commit_key_limit`), every
    blob a name this library gives its blobs (``[writer/]NNNNNN.blob``) or
    ``{"data": base64}`` (content carried by the record itself, on remote
    stores) no larger than the key may hold, and no key may appear twice.

    Returns
    -------
    list of [key, blob name, content bytes, or None]

    Raises
    ------
    FormatError
        Naming ``where`` and the first bad entry.
    """
    if not isinstance(entries, list):
        raise FormatError(f"{where}: malformed commit record (not a list)")
    seen = set()
    for entry in entries:
        if not (isinstance(entry, list) and len(entry) == 2):
            raise FormatError(f"{where}: malformed commit record entry {entry!r:.80}")
        key, blob = entry
        limit = commit_key_limit(key, where)
        if isinstance(blob, dict):
            text = blob.get("data")
            if set(blob) != {"data"} or not isinstance(text, str) or \
                    len(text) > 4 * (min(limit, INLINE_MAX_BYTES) // 3 + 2):
                raise FormatError(f"{where}: malformed content for {key!r:.80}")
            try:
                entry[1] = base64.b64decode(text.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError) as err:
                raise FormatError(f"{where}: malformed content for {key!r:.80}") from err
        elif blob is not None and not (isinstance(blob, str) and _BLOB_NAME.fullmatch(blob)):
            raise FormatError(f"{where}: malformed blob name {blob!r:.80}")
        if key in seen:
            raise FormatError(f"{where}: {key!r} appears twice")
        seen.add(key)
    return entries


def _record_bytes(entries: list) -> bytes:
    """The JSON of a commit record; contents carried inline are base64."""
    return json.dumps([[key, {"data": base64.b64encode(blob).decode("ascii")}
                        if isinstance(blob, bytes) else blob]
                       for key, blob in entries]).encode("utf-8")


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
    """

    fsync_default = True
    # Seconds after which a blob folder no commit names is taken for a dead
    # writer's and removed by the next writer that opens the dataset.
    stale_after = 900.0

    def __init__(self, store: Store, readonly: bool = False, fsync: bool | None = None,
                 consolidated: bool | None = None):
        self.store = store
        self.root = store.url
        self.readonly = readonly
        self.fsync = self.fsync_default if fsync is None else fsync
        if hasattr(store, "fsync_enabled"):
            store.fsync_enabled = self.fsync
        self._sync = self.fsync and store.durable
        self.use_consolidated = store.remote if consolidated is None else bool(consolidated)
        self.locked = False        # this process holds the dataset's writer lock
        self._new_blob_folder()
        self._staged = {}          # key -> blob key (None: delete)
        self._staged_sums = {}     # key -> md5 hex of the staged content (or its Future)
        self._staged_meta = {}     # metadata key -> its staged bytes
        self._inflight = []        # (Future, size) of background blob writes, oldest first
        self._unsynced = set()     # small blobs written but not yet synced
        self._inflight_bytes = 0
        self._dir_ready = False    # this writer's blob folder exists
        self._overlay = {}         # committed-but-unapplied record (readers): key -> blob key
        self._sums = None          # checksums of the committed files, loaded lazily
        self._recorded = _UNSET    # the checksum file as recorded (None: there is none)
        self._generation = None    # generation of the committed state loaded
        self.loaded_marker = None  # marker() of the state the last recover() loaded
        self.snapshot = False      # that state came from one consolidated read
        self._snapshot_checksums = None  # md5 of that state's checksum file
        self.fresh = False         # open() just recovered: the container need not again
        self._meta = None          # committed metadata files {key: bytes}, when complete
        self._counter = 0
        self._batch = 0
        self._commit_requested = False
        # Failed writes (see :meth:`operation`).
        self._depth = 0
        self.broken = None         # the error that left the writer unusable
        self.owner_reload = None   # reloads the committed state into the containers

    def _new_blob_folder(self) -> None:
        """Stage future blobs in a folder of a new name (the blobs of a commit
        belong to its record once it exists; nothing but applying it or
        recovery may remove them)."""
        self._token = uuid.uuid4().hex[:16]
        self._blob_prefix = f"{JOURNAL_PREFIX}{self._token}/"
        self._dir_ready = False

    # -------------------------------------------------------------- recovery

    def recover(self) -> None:
        """Load the committed state's generation, and finish or discard what an
        interrupted writer left (see module docstring).

        Raises
        ------
        FormatError
            If the journal folder, a commit record or a blob it names is not
            what this library writes (nothing is moved or deleted then).
        """
        self._overlay = {}
        self._recorded = _UNSET
        store = self.store
        store.check_folder(JOURNAL_PREFIX)
        if not store.remote:            # earlier versions wrote only local folders
            self._recover_legacy()
        # What marker() compares later, taken before anything is read, so a
        # commit beginning or ending meanwhile shows.
        local_marker = None if store.remote else self._local_marker()
        generation = self._read_generation()
        try:
            entries = self._read_record(record_key(generation + 1))
        except DatasetNotFoundError:
            entries = None
        self.loaded_marker = local_marker if not store.remote else \
            (entries is not None, ("generation", generation))
        self.snapshot = bool(store.remote and self.use_consolidated and self._meta is not None)
        if entries is not None:
            blobs = self._check_blobs(entries)
            if self.readonly:
                self._overlay = blobs
            else:
                self._apply(entries)
                self._forget_blobs_of(entries)
                generation += 1
                self._meta = None
        self._generation = generation
        if not self.readonly:
            self._collect_garbage()

    def _recover_legacy(self) -> None:
        """Roll forward (or read through) a record of the one-writer protocol
        of earlier versions (``.bcolz_store-journal/manifest.json``)."""
        try:
            entries = self._read_record(LEGACY_MANIFEST)
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

    def _read_record(self, key: str) -> list:
        """The validated entries of the commit record ``key``.

        Raises
        ------
        DatasetNotFoundError
            When there is no such record.
        FormatError
            When it is not a plain file, too large, not JSON, or invalid.
        """
        where = self.store.path(key)
        data = self.store.get(key, MAX_OWN_FILE_BYTES)
        try:
            entries = json.loads(bytes(data).decode("utf-8"))
        except (ValueError, RecursionError) as err:
            raise FormatError(f"{where}: unreadable commit record ({err})") from err
        return check_manifest(entries, where)

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

    def _collect_garbage(self) -> None:
        """Remove records older than the committed generation and blob folders
        no live writer can own (all under the writer lock, else stale ones)."""
        store = self.store
        now = time.time()
        folders = {}
        for key, mtime in store.list_times(JOURNAL_PREFIX).items():
            name = key[len(JOURNAL_PREFIX):]
            match = _RECORD.fullmatch(name)
            if match:
                if int(match.group(1)) < self._generation:
                    store.delete(key)
                continue
            folder = name.partition("/")[0] if "/" in name else name
            folders[folder] = max(folders.get(folder, 0.0), mtime)
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
        generation = self._generation or 0
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
                             if _RECORD.fullmatch(name) or name == "manifest.json"))
        return (names, self.store.identity(CONSOLIDATED_FILE))

    def is_stable(self, marker) -> bool:
        """True when no commit has begun or ended since ``marker`` was taken."""
        return self.marker() == marker

    def start_reading(self) -> None:
        """Take the snapshot that :meth:`check_reading` compares against."""
        self.reader_marker = self.marker()

    def check_reading(self) -> None:
        """Raise :class:`DatasetChangedError` if a commit happened since :meth:`start_reading`."""
        marker = getattr(self, "reader_marker", _UNSET)
        if marker is not _UNSET and self.readonly and not self.is_stable(marker):
            raise DatasetChangedError(
                f"{self.root}: a writer committed since this reader opened the dataset; "
                f"call refresh() to read the new state")

    def staged_keys(self) -> list:
        """Keys with staged changes."""
        return list(self._staged)

    def reset(self) -> None:
        """Forget everything (the dataset root is being removed)."""
        self.discard()
        self._overlay = {}
        self._sums = None
        self._recorded = _UNSET
        self._meta = None
        self._dir_ready = False

    @property
    def pending(self) -> bool:
        """True when changes are staged but not committed."""
        return bool(self._staged)

    # ------------------------------------------------------- failed writes

    @contextlib.contextmanager
    def operation(self, what: str = "write"):
        """Run one write operation of a container: on any exception, return
        every container of this dataset to its last committed state.

        The outermost operation handles the failure: staged blobs are
        discarded, the journal is cleaned (or a committed record rolled
        forward), and :attr:`owner_reload` reloads the committed state into
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
        reload the committed state into the containers (:attr:`owner_reload`).

        Raises
        ------
        FormatError, OSError
            When the committed state cannot be read; the journal stays broken.
        """
        self.discard()
        self._batch = 0
        self._commit_requested = False
        self._sums = None
        self._recorded = _UNSET
        self._meta = None
        self.recover()
        if self.owner_reload is not None:
            self.owner_reload()
        self.broken = None

    # --------------------------------------------------------------- writing

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def _ensure_dir(self, key: str = "") -> None:
        if not self._dir_ready:
            self.store.check_folder(JOURNAL_PREFIX)   # refuses a symlink in its place
            try:
                self.store.makedirs(self._blob_prefix.rstrip("/"))
            except OSError as err:
                raise _naming(err, key, self.store.path(self._blob_prefix.rstrip("/")),
                              self.root) from err
            self._dir_ready = True

    def _next_blob(self, key: str) -> str:
        self._ensure_dir(key)
        self._counter += 1
        return f"{self._blob_prefix}{self._counter:06d}.blob"

    def scratch_prefix(self, name: str) -> str:
        """A folder key inside this writer's blob folder, for files that a later
        :meth:`stage_moved` turns into blobs (an on-disk reshape builds there)."""
        self._ensure_dir()
        return f"{self._blob_prefix}{name}/"

    def stage(self, key: str, data) -> None:
        """Record new content for ``key``; visible to this writer, committed later.

        Parameters
        ----------
        key : str
            Path relative to the root.
        data : bytes-like, or a list of them (written one after the other)
            Large contents are written on a background thread; an error there
            (a full disk) is raised by :meth:`commit`.

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
        if self.store.remote and size <= INLINE_MAX_BYTES:
            content = b"".join(parts)        # carried by the commit record
            self._unstage(key)
            self._staged[key] = content
            self._staged_sums[key] = md5_hex(content)
            if is_metadata_key(key):
                self._staged_meta[key] = content
            return
        blob = self._next_blob(key)
        if size >= ASYNC_MIN_BYTES:
            self._limit_inflight(MAX_INFLIGHT_BYTES - size)
            digest = pool("cpu").submit(_write_blob, self.store, blob, parts, self._sync, key)
            self._inflight.append((digest, size))
            self._inflight_bytes += size
        else:  # small: written now, synced with the others at commit
            digest = _write_blob(self.store, blob, parts, False, key)
            self._unsynced.add(blob)
        self._unstage(key)
        self._staged[key] = blob
        self._staged_sums[key] = digest
        if is_metadata_key(key):
            self._staged_meta[key] = b"".join(parts)

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
            raise _naming(err, key, self.store.path(blob), self.root) from err
        self._unstage(key)
        self._staged[key] = blob
        self._staged_sums[key] = digest
        if data is not None:
            self._staged_meta[key] = data

    def _limit_inflight(self, limit: int) -> None:
        """Wait for background writes until at most ``limit`` bytes are pending."""
        while self._inflight and (self._inflight_bytes > limit or self._inflight[0][0].done()):
            future, size = self._inflight.pop(0)
            wait([future])
            self._inflight_bytes -= size

    def _unstage(self, key: str) -> None:
        """Forget the staged content of ``key`` and remove its blob."""
        blob = self._staged.pop(key, None)
        digest = self._staged_sums.pop(key, None)
        self._staged_meta.pop(key, None)
        if isinstance(digest, Future):
            wait([digest])
        if isinstance(blob, str):
            with contextlib.suppress(OSError, FormatError):
                self.store.delete(blob)

    def stage_delete(self, key: str) -> None:
        """Record that ``key`` is to be removed."""
        self._check_writable()
        commit_key_limit(key, self.root)
        self._unstage(key)
        self._staged[key] = None
        self._staged_sums[key] = None

    def stage_delete_all(self, prefix: str = "") -> None:
        """Record that every file under ``prefix`` (the whole root: '') is to be
        removed, our own files excepted; staged changes there are dropped."""
        for key in self.store.list(prefix):
            self.stage_delete(key)
        for key in [k for k in self._staged if k.startswith(prefix)]:
            self.stage_delete(key)

    def forget(self, prefix: str) -> None:
        """Drop checksums and staged changes of every file under ``prefix``
        (a folder removed outside commits)."""
        sums = self.checksums()
        for key in [k for k in sums if k.startswith(prefix)]:
            del sums[key]
        for key in [k for k in self._staged if k.startswith(prefix)]:
            self._unstage(key)
        if self._meta is not None:
            for key in [k for k in self._meta if k.startswith(prefix)]:
                del self._meta[key]

    def adopt(self, prefix: str) -> None:
        """Checksum the files already under ``prefix`` (a folder moved in)."""
        self.checksums().update(self._scan(prefix))
        self._meta = None

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

    def discard(self) -> None:
        """Forget staged changes and remove this writer's blobs."""
        for key in list(self._staged):
            self._unstage(key)
        for future, _size in self._inflight:
            wait([future])
        self._inflight.clear()
        self._inflight_bytes = 0
        self._unsynced.clear()
        if self._dir_ready:
            with contextlib.suppress(OSError, FormatError):
                self.store.delete_prefix(self._blob_prefix)
            self._dir_ready = False

    # ------------------------------------------------------------ checksums

    def list_files(self, prefix: str = "") -> list:
        """Keys of the files under ``prefix`` (our own files excluded), unread."""
        return self.store.list(prefix)

    def _scan(self, prefix: str = "") -> dict:
        """md5 of every bcolz file under ``prefix`` as it is now.

        Only plain files are read, each within the size its name allows.

        Raises
        ------
        FormatError
            Naming the first file that is a symlink, a FIFO, a device, too
            large, or unreadable.
        """
        keys = self.store.list(prefix)
        got = self.store.get_many(keys, max(read_limit(k) for k in keys)) if keys else {}
        sums = {}
        for key in keys:
            data = got[key]
            if isinstance(data, Exception):
                raise data
            if len(data) > read_limit(key):
                raise FormatError(f"{self.store.path(key)}: larger than such a file may be")
            sums[key] = md5_hex(data)
        return sums

    def recorded(self):
        """The checksums as the dataset's checksum file records them (through a
        committed record when one is pending), or None when it has none.

        Raises
        ------
        FormatError
            When the checksum file is not a plain file, too large, or malformed.
        """
        if self._recorded is _UNSET:
            key = CHECKSUM_FILE
            found, blob = self.lookup(CHECKSUM_FILE)
            if found:
                key = blob
            if found and blob is None:
                self._recorded = None
            elif isinstance(blob, bytes):
                self._recorded = load_checksums(blob, self.store.path(CHECKSUM_FILE))
            else:
                try:
                    data = self.store.get(key, MAX_OWN_FILE_BYTES)
                except DatasetNotFoundError:
                    self._recorded = None
                else:
                    if self.snapshot and self.readonly and not found and \
                            self._snapshot_checksums not in (None, md5_hex(data)):
                        raise DatasetChangedError(
                            f"{self.root}: a writer committed since this reader opened the "
                            f"dataset; call refresh() to read the new state")
                    self._recorded = load_checksums(data, self.store.path(key))
        return self._recorded

    def checksums(self) -> dict:
        """``{relative path: md5 hex}`` of the committed bcolz files (read, or
        computed from the files once when the dataset has no checksum file)."""
        if self._sums is None:
            recorded = self.recorded()
            self._sums = dict(recorded) if recorded is not None else self._scan()
        return self._sums

    def _metadata_files(self) -> dict:
        """The committed metadata files ``{key: bytes}``, read once (from the
        consolidated metadata on remote stores, else from the files)."""
        if self._meta is None:
            keys = [key for key in self.store.list("") if is_metadata_key(key)]
            got = self.store.get_many(keys, MAX_OWN_FILE_BYTES) if keys else {}
            meta = {}
            for key in keys:
                if isinstance(got[key], Exception):
                    raise got[key]
                meta[key] = got[key]
            self._meta = meta
        return self._meta

    # --------------------------------------------------------------- commit

    def commit(self) -> None:
        """Make the staged changes durable and visible, all at once.

        Raises
        ------
        ConcurrentWriteError
            When another writer committed to the dataset since this one loaded
            it (nothing of this commit is made).
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
        if not self._staged:
            return
        self._check_writable()
        if self._generation is None:
            self.recover()
        generation = self._generation + 1
        created = False
        try:
            sums = dict(self.checksums())
            meta = dict(self._metadata_files())
            for key, digest in self._staged_sums.items():
                if digest is None:
                    sums.pop(key, None)
                    meta.pop(key, None)
                else:  # every blob is written and synced once its checksum is known
                    sums[key] = _result(digest)
            meta.update(self._staged_meta)
            self._inflight.clear()
            self._inflight_bytes = 0
            checksum_file = dump_checksums(sums)
            self.stage(CHECKSUM_FILE, checksum_file)
            self.stage(CONSOLIDATED_FILE, dump_consolidated(generation, meta,
                                                            md5_hex(checksum_file)))
            if self._sync:
                self.store.sync(self._unsynced.intersection(self._staged.values()))
            self._unsynced.clear()
            entries = sorted(([key, blob[len(JOURNAL_PREFIX):] if isinstance(blob, str)
                               else blob] for key, blob in self._staged.items()),
                             key=lambda e: _commit_order(e[0]))
            self.store.check_targets([key for key, _blob in entries])
            record = _record_bytes(entries)
            try:
                self.store.put_if_absent(record_key(generation), record)
            except ConcurrentWriteError:
                raise self._concurrent(generation) from None
            except OSError as err:
                raise _naming(err, "the commit record", self.store.path(record_key(generation)),
                              self.root) from err
            created = True
            if self._read_generation_quietly() >= generation:
                raise self._concurrent(generation)
            if self._sync:
                self.store.sync_folders([record_key(generation)])
        except BaseException:
            if created:                 # withdraw it: no reader or writer will apply it
                with contextlib.suppress(OSError, FormatError):
                    self.store.delete(record_key(generation))
            self.discard()
            raise
        # Committed: from here on the change stands, even if applying fails
        # (then recovery finishes it, with these blobs).
        self._staged.clear()
        self._staged_sums.clear()
        self._staged_meta.clear()
        committed_blobs = self._blob_prefix
        self._new_blob_folder()
        self._sums = sums
        self._recorded = sums
        self._apply(entries)
        self._generation = generation
        self._meta = meta
        self.store.delete_prefix(committed_blobs)
        self.store.delete(record_key(generation - 1))

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
        try:
            data = self.store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
            return load_consolidated(data, self.store.path(CONSOLIDATED_FILE))[0]
        except (DatasetNotFoundError, FormatError):
            return 0

    def _concurrent(self, generation: int) -> ConcurrentWriteError:
        return ConcurrentWriteError(
            f"{self.root}: another writer committed to this dataset since it was loaded "
            f"(generation {generation} is taken); nothing of this change was committed: "
            f"refresh() and write again, or pass lock=True to serialise writers")

    def _apply(self, entries: list) -> None:
        """Move each blob onto its key (and write contents carried inline,
        make deletions), in the commit order: data, metadata, ``meta/sizes``,
        the checksum file, the consolidated metadata; within each step
        concurrently on remote stores."""
        store = self.store
        keys = [key for key, _blob in entries]
        store.check_targets(keys)
        for _order, group in itertools.groupby(entries, key=lambda e: _commit_order(e[0])[0]):
            group = list(group)
            store.delete_many([key for key, blob in group if blob is None])
            store.put_many([(key, blob) for key, blob in group if isinstance(blob, bytes)])
            store.move_many([(JOURNAL_PREFIX + blob, key) for key, blob in group
                             if isinstance(blob, str)], missing_ok=True)  # moved already
        if self._sync:
            store.sync_folders(keys)
