"""Atomic commits for one dataset root: a redo journal beside bcolz's files.

bcolz rewrites ``meta/sizes`` and chunk files in place, so a writer killed in
the middle leaves a dataset that may not open, or holds torn data.  Here every
change goes through a journal inside the rootdir, a folder bcolz never reads::

    ROOT/.bcolz_store-journal/
        000001.blob ...     new contents of files, written and fsynced first
        manifest.tmp        the list of changes being prepared
        manifest.json       the commit record: once this name exists, the
                            change is committed

A commit (kartothek's lesson: state changes only by one atomic step that
readers can follow without locks):

1. every new file is written to a blob in the journal and fsynced;
2. the manifest ``[[key, blob or null], ...]`` is written, fsynced and renamed
   to ``manifest.json``; the folder is fsynced.  This rename is the commit;
3. each blob is moved onto its bcolz name with :func:`os.replace` (deletions
   unlink), ``meta/sizes`` and the checksum file last, as bcolz and zipline
   read the length there; the touched folders are fsynced;
4. the manifest is removed, then the journal folder.

On open, a writer rolls a committed manifest forward (moving the blobs that
are still there; the step is idempotent) and deletes anything uncommitted.  A
reader that cannot write reads through the committed manifest instead, so it
too sees the committed state.  The bcolz files themselves never change format.

A checksum file ``bcolz_store.md5`` (md5sum format, as datadings ships one with
each dataset: ``<hex>  <relative path>`` per line) is rewritten in every commit,
so ``cd ROOT && md5sum -c bcolz_store.md5`` checks a dataset without this
library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ..errors import DatasetChangedError, FormatError, ReadOnlyError

__all__ = ["CHECKSUM_FILE", "JOURNAL_DIR", "Journal", "load_checksums", "dump_checksums",
           "md5_hex"]

JOURNAL_DIR = ".bcolz_store-journal"
CHECKSUM_FILE = "bcolz_store.md5"
LOCK_FILE = ".bcolz_store.lock"
MANIFEST = "manifest.json"
MANIFEST_TMP = "manifest.tmp"
# Names in a rootdir that are ours, not bcolz's: never checksummed, never "extra".
OWN_NAMES = (JOURNAL_DIR, CHECKSUM_FILE, LOCK_FILE)
_UNSET = object()
# How often a reader retries opening while a writer is applying a commit.
READ_RETRIES = 400
# Blobs at least this large are written, checksummed and fsynced on a
# background thread while the caller compresses the next chunk; at most
# MAX_INFLIGHT_BYTES of them wait in memory.
ASYNC_MIN_BYTES = 1 << 16
MAX_INFLIGHT_BYTES = 64 << 20

_pools = {}
_pools_lock = threading.Lock()


def _pool(kind: str) -> ThreadPoolExecutor:
    """The process's background threads: ``"cpu"`` ones write and checksum
    blobs (md5 releases the GIL), ``"io"`` ones wait for fsync, so that a
    slow disk never holds up checksumming."""
    with _pools_lock:
        if kind not in _pools:
            workers = max(2, min(4, os.cpu_count() or 1)) if kind == "cpu" else 4
            _pools[kind] = ThreadPoolExecutor(max_workers=workers,
                                              thread_name_prefix=f"bcolz_store-{kind}")
        return _pools[kind]


def _forget_pools_in_child() -> None:
    """A forked child has none of the parent's threads: it starts its own pools."""
    global _pools_lock
    _pools.clear()
    _pools_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_in_child)


def _write_blob(path: str, parts: list, fsync: bool):
    """Write ``parts`` to a new file ``path``; return its md5 hex, or with
    ``fsync`` the pair (md5 hex, Future of the fsync started on an io thread)."""
    digest = hashlib.md5()
    with open(path, "wb") as fh:
        for part in parts:
            fh.write(part)
            digest.update(part)
    if fsync:
        return digest.hexdigest(), _pool("io").submit(_fsync_file, path)
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
    import time
    for attempt in range(READ_RETRIES):
        marker = journal.marker()
        journal.recover()
        journal.reader_marker = marker
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


def md5_hex(data) -> str:
    """md5 of ``data`` as lowercase hex."""
    return hashlib.md5(data).hexdigest()


def dump_checksums(sums: dict) -> bytes:
    """The checksum file: ``<hex>  <path>`` lines sorted by path (md5sum's text mode)."""
    return "".join(f"{sums[key]}  {key}\n" for key in sorted(sums)).encode("utf-8")


def load_checksums(data: bytes, where: str = CHECKSUM_FILE) -> dict:
    """Parse a checksum file into ``{relative path: hex}``.

    Raises
    ------
    FormatError
        On a line that is not ``<32 hex digits>  <path>`` or an unsafe path.
    """
    sums = {}
    for number, line in enumerate(bytes(data).decode("utf-8", "replace").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, key = line.partition("  ")
        if not sep or len(digest) != 32 or any(c not in "0123456789abcdef" for c in digest):
            raise FormatError(f"{where}: line {number} is not '<md5>  <path>'")
        key = key.lstrip("*")
        if key.startswith("/") or ".." in key.split("/"):
            raise FormatError(f"{where}: line {number} names an unsafe path {key!r}")
        sums[key] = digest
    return sums


def _identity(path: str):
    """``(inode, mtime, size)`` of a file, None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_all(fsync_one, paths) -> None:
    """fsync several files or folders at once (the filesystem can merge them)."""
    paths = list(paths)
    if len(paths) == 1:
        fsync_one(paths[0])
    elif paths:
        list(_pool("io").map(fsync_one, paths))


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _commit_order(key: str) -> tuple:
    """Data first, then metadata, ``meta/sizes`` next to last, checksums last."""
    if key == CHECKSUM_FILE:
        return (3, key)
    if key.endswith("meta/sizes"):
        return (2, key)
    if "/data/" in "/" + key:
        return (0, key)
    return (1, key)


class Journal:
    """The commits of one dataset root (a carray rootdir, or a ctable rootdir
    shared by its columns).

    Parameters
    ----------
    root : str
        The dataset rootdir.
    readonly : bool
        A read-only journal never writes: it only reads through a committed
        manifest left by an interrupted writer.
    fsync : bool, default True
        fsync blobs, the manifest and folders (turn off only for scratch data).
    """

    fsync_default = True

    def __init__(self, root: str, readonly: bool = False, fsync: bool | None = None):
        self.root = root
        self.readonly = readonly
        self.fsync = self.fsync_default if fsync is None else fsync
        self.dir = os.path.join(root, JOURNAL_DIR)
        self._manifest_path = os.path.join(self.dir, MANIFEST)
        self._checksum_path = os.path.join(root, CHECKSUM_FILE)
        self._staged = {}          # key -> blob path (None: delete)
        self._staged_sums = {}     # key -> md5 hex of the staged content (or its Future)
        self._inflight = []        # (Future, size) of background blob writes, oldest first
        self._unsynced = set()     # small blobs written but not yet fsynced
        self._inflight_bytes = 0
        self._dir_ready = False    # the journal folder exists (made by this writer)
        # Folders of this dataset checked against symlinks leaving the root
        # (by LocalStore): folder -> its real path (None: outside); None -> root's.
        self.resolved_folders = {}
        self._overlay = {}         # committed-but-unapplied manifest (readers)
        self._sums = None          # checksums of the committed files, loaded lazily
        self._counter = 0
        self._batch = 0
        self._commit_requested = False

    # -------------------------------------------------------------- recovery

    def recover(self) -> None:
        """Finish or discard what an interrupted writer left (see module docstring)."""
        manifest = os.path.join(self.dir, MANIFEST)
        self._overlay = {}
        if not os.path.isdir(self.dir):
            return
        if os.path.isfile(manifest):
            try:
                entries = self._read_manifest(manifest)
            except FileNotFoundError:  # the writer finished applying meanwhile
                return
            if self.readonly:
                self._overlay = {key: (None if blob is None else os.path.join(self.dir, blob))
                                 for key, blob in entries}
                return
            self._apply(entries)
        if not self.readonly:
            self._dir_ready = False
            shutil.rmtree(self.dir, ignore_errors=True)

    def _read_manifest(self, path: str) -> list:
        try:
            with open(path, "rb") as fh:
                entries = json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            raise
        except (OSError, ValueError, RecursionError) as err:
            raise FormatError(f"{path}: unreadable commit record ({err})") from err
        if not isinstance(entries, list) or not all(
                isinstance(e, list) and len(e) == 2 and isinstance(e[0], str) for e in entries):
            raise FormatError(f"{path}: malformed commit record")
        for key, blob in entries:
            self._check_key(key, path)
            if blob is not None and (not isinstance(blob, str) or "/" in blob or
                                     blob.startswith(".")):
                raise FormatError(f"{path}: malformed blob name {blob!r}")
        return entries

    @staticmethod
    def _check_key(key: str, where: str) -> None:
        parts = key.split("/")
        if key.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise FormatError(f"{where}: unsafe key {key!r}")

    # --------------------------------------------------------------- reading

    def lookup(self, key: str):
        """Where the current content of ``key`` lives, if not at its bcolz name.

        Returns
        -------
        (found, path)
            ``found`` False: read the bcolz file itself.  Else ``path`` is a
            blob to read, or None when the key is deleted.
        """
        if key in self._staged:
            digest = self._staged_sums[key]
            if isinstance(digest, Future):
                digest.result()  # the blob is written (or its error raised)
            return True, self._staged[key]
        if key in self._overlay:
            blob = self._overlay[key]
            if blob is None or os.path.exists(blob):
                return True, blob
        return False, None

    # ------------------------------------------------- lock-free readers

    def marker(self):
        """Identity of the committed state (changes with every commit).

        The manifest exists from a commit until everything is applied and the
        checksum file is replaced last, so an unchanged pair (manifest, checksum
        file) means no commit began or ended in between.  A manifest left by a
        writer that died stays unchanged: readers then read through it.
        """
        return (_identity(self._manifest_path), _identity(self._checksum_path))

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
        self._dir_ready = False

    @property
    def pending(self) -> bool:
        """True when changes are staged but not committed."""
        return bool(self._staged)

    # --------------------------------------------------------------- writing

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def stage(self, key: str, data) -> None:
        """Record new content for ``key``; visible to this writer, committed later.

        Parameters
        ----------
        key : str
            Path relative to the root.
        data : bytes-like, or a list of them (written one after the other)
            Large contents are written on a background thread; an error there
            (a full disk) is raised by :meth:`commit`.
        """
        self._check_writable()
        self._check_key(key, self.root)
        parts = data if isinstance(data, list) else [data]
        parts = [part if isinstance(part, bytes) else bytes(part) for part in parts]
        if not self._dir_ready:
            os.makedirs(self.dir, exist_ok=True)
            self._dir_ready = True
        self._counter += 1
        blob = os.path.join(self.dir, f"{self._counter:06d}.blob")
        size = sum(len(part) for part in parts)
        if size >= ASYNC_MIN_BYTES:
            self._limit_inflight(MAX_INFLIGHT_BYTES - size)
            digest = _pool("cpu").submit(_write_blob, blob, parts, self.fsync)
            self._inflight.append((digest, size))
            self._inflight_bytes += size
        else:  # small: written now, fsynced with the others at commit
            digest = _write_blob(blob, parts, False)
            self._unsynced.add(blob)
        self._unstage(key)
        self._staged[key] = blob
        self._staged_sums[key] = digest

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
        if isinstance(digest, Future):
            wait([digest])
        if blob:
            with contextlib.suppress(OSError):
                os.unlink(blob)

    def stage_delete(self, key: str) -> None:
        """Record that ``key`` is to be removed."""
        self._check_writable()
        self._check_key(key, self.root)
        self._unstage(key)
        self._staged[key] = None
        self._staged_sums[key] = None

    def forget(self, prefix: str) -> None:
        """Drop checksums and staged changes of every file under ``prefix``
        (a folder removed outside commits)."""
        sums = self.checksums()
        for key in [k for k in sums if k.startswith(prefix)]:
            del sums[key]
        for key in [k for k in self._staged if k.startswith(prefix)]:
            self._unstage(key)

    def adopt(self, prefix: str) -> None:
        """Checksum the files already under ``prefix`` (a folder moved in)."""
        self.checksums().update(self._scan(prefix))

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
            self._batch -= 1
        if self._batch == 0 and self._commit_requested:
            self.commit()

    def discard(self) -> None:
        """Forget staged changes (after a failed commit preparation)."""
        for key in list(self._staged):
            self._unstage(key)
        self._inflight.clear()
        self._inflight_bytes = 0
        self._unsynced.clear()

    # ------------------------------------------------------------ checksums

    def _scan(self, prefix: str = "") -> dict:
        """md5 of every bcolz file under ``prefix`` as it is on disk now."""
        sums = {}
        base = os.path.join(self.root, prefix) if prefix else self.root
        for folder, dirs, files in os.walk(base):
            rel_folder = os.path.relpath(folder, self.root)
            rel_folder = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
            dirs[:] = [d for d in dirs if d not in OWN_NAMES]
            for name in files:
                key = rel_folder + name
                if name in OWN_NAMES or name.startswith(".tmp-"):
                    continue
                with open(os.path.join(folder, name), "rb") as fh:
                    sums[key] = md5_hex(fh.read())
        return sums

    def checksums(self) -> dict:
        """``{relative path: md5 hex}`` of the committed bcolz files (read or computed once)."""
        if self._sums is None:
            path = os.path.join(self.root, CHECKSUM_FILE)
            found, blob = self.lookup(CHECKSUM_FILE)
            if found and blob:
                path = blob
            if (not found or blob) and os.path.isfile(path):
                with open(path, "rb") as fh:
                    self._sums = load_checksums(fh.read(), path)
            else:
                self._sums = self._scan() if os.path.isdir(self.root) else {}
        return self._sums

    # --------------------------------------------------------------- commit

    def commit(self) -> None:
        """Make the staged changes durable and visible, all at once.

        Raises
        ------
        OSError
            When the disk refuses a write (full, read-only...).  If that happens
            before the commit record exists, nothing changes; after it, the
            change is committed and the next writer to open finishes it.
        """
        if self._batch:
            self._commit_requested = True
            return
        self._commit_requested = False
        if not self._staged:
            return
        self._check_writable()
        sums = dict(self.checksums())
        try:
            for key, digest in self._staged_sums.items():
                if digest is None:
                    sums.pop(key, None)
                else:  # every blob is written and fsynced once its checksum is known
                    sums[key] = _result(digest)
            self._inflight.clear()
            self._inflight_bytes = 0
            self.stage(CHECKSUM_FILE, dump_checksums(sums))
            if self.fsync:
                _fsync_all(_fsync_file, self._unsynced.intersection(self._staged.values()))
            self._unsynced.clear()
            entries = sorted(((key, None if blob is None else os.path.basename(blob))
                              for key, blob in self._staged.items()),
                             key=lambda e: _commit_order(e[0]))
            tmp = os.path.join(self.dir, MANIFEST_TMP)
            with open(tmp, "wb") as fh:
                fh.write(json.dumps(entries).encode("utf-8"))
                fh.flush()
                if self.fsync:
                    os.fsync(fh.fileno())
            os.replace(tmp, os.path.join(self.dir, MANIFEST))
            if self.fsync:
                _fsync_dir(self.dir)
        except BaseException:
            self.discard()
            self._dir_ready = False
            with contextlib.suppress(OSError):
                shutil.rmtree(self.dir)
            raise
        # Committed: from here on the change stands, even if applying fails.
        self._staged.clear()
        self._staged_sums.clear()
        self._sums = sums
        self._apply(entries)
        self._dir_ready = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def _apply(self, entries: list) -> None:
        touched = set()
        made = set()
        for key, blob in entries:
            target = os.path.join(self.root, *key.split("/"))
            folder = os.path.dirname(target)
            if blob is None:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(target)
            else:
                source = os.path.join(self.dir, blob)
                if folder not in made:
                    os.makedirs(folder, exist_ok=True)
                    made.add(folder)
                with contextlib.suppress(FileNotFoundError):  # moved already (roll forward)
                    os.replace(source, target)
            touched.add(folder)
        if self.fsync:
            _fsync_all(_fsync_dir, touched)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.dir, MANIFEST))
