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
import re
import shutil
import stat
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait

from ..errors import (DatasetChangedError, DatasetNotFoundError, FormatError, ReadOnlyError,
                      WriteFailedError)
from ..format.layout import (CHECKSUM_FILE, JOURNAL_DIR, LOCK_FILE, MAX_CHUNK_FILE_BYTES,
                             MAX_META_BYTES, MAX_OWN_FILE_BYTES, OWN_NAMES, TEMP_PREFIX,
                             check_key, commit_key_limit)
from .files import describe_mode, read_regular

__all__ = ["CHECKSUM_FILE", "JOURNAL_DIR", "Journal", "load_checksums", "dump_checksums",
           "md5_hex", "read_limit"]

MANIFEST = "manifest.json"
MANIFEST_TMP = "manifest.tmp"
_BLOB_NAME = re.compile(r"[0-9]{6,18}\.blob")
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


def _write_blob(path: str, parts: list, fsync: bool, key: str = "", root: str = ""):
    """Write ``parts`` to a new file ``path``; return its md5 hex, or with
    ``fsync`` the pair (md5 hex, Future of the fsync started on an io thread).

    Raises
    ------
    OSError
        When the disk refuses the write; the message names ``key`` (the
        bcolz file being written) and ``path``.
    """
    digest = hashlib.md5()
    try:
        with open(path, "wb") as fh:
            for part in parts:
                fh.write(part)
                digest.update(part)
    except OSError as err:
        raise _naming(err, key, path, root) from err
    if fsync:
        return digest.hexdigest(), _pool("io").submit(_fsync_file, path)
    return digest.hexdigest()


def _naming(err: OSError, key: str, path: str, root: str = "") -> OSError:
    """An OSError like ``err`` whose message names the file being written."""
    what = f"while writing {key} of {root}" if key and root else \
        f"while writing {key}" if key else "while writing"
    return type(err)(err.errno, f"{err.strerror or err} ({what})", path)


def read_limit(key: str) -> int:
    """Largest size accepted for the file ``key`` of a dataset (see :mod:`..format.layout`)."""
    name = key.rpartition("/")[2]
    if name.endswith(".blp"):
        return MAX_CHUNK_FILE_BYTES
    if name == CHECKSUM_FILE:
        return MAX_OWN_FILE_BYTES
    return MAX_META_BYTES


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
        check_key(key.lstrip("*"), f"{where}: line {number}")
        sums[key.lstrip("*")] = digest
    return sums


def _identity(path: str):
    """``(inode, mtime, size)`` of a file, None when it does not exist."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:                 # a symlink loop, permissions: some fixed identity
        return ("unreadable",)
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


def check_manifest(entries, where: str) -> list:
    """Validate a commit record before anything it names is read or moved.

    Every key must be a file a commit writes (:func:`commit_key_limit`), every
    blob a name this library gives its blobs (``NNNNNN.blob``), and no key
    may appear twice.

    Returns
    -------
    list of [key, blob or None]

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
        commit_key_limit(key, where)
        if blob is not None and not (isinstance(blob, str) and _BLOB_NAME.fullmatch(blob)):
            raise FormatError(f"{where}: malformed blob name {blob!r:.80}")
        if key in seen:
            raise FormatError(f"{where}: {key!r} appears twice")
        seen.add(key)
    return entries


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

    Notes
    -----
    A journal found in a dataset may come from anyone, so before a committed
    manifest is read through or rolled forward, every entry is validated
    (:func:`check_manifest`), every blob must be a regular file inside the
    journal folder, no larger than its target may be, and every folder on the
    way to a target must be a real folder inside the rootdir, not a symlink.
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
        self._recorded = _UNSET    # the checksum file as recorded (None: there is none)
        self._counter = 0
        self._batch = 0
        self._commit_requested = False
        # Failed writes (see :meth:`operation`).
        self._depth = 0
        self.broken = None         # the error that left the writer unusable
        self.owner_reload = None   # reloads the committed state into the containers

    # -------------------------------------------------------------- recovery

    def _journal_dir_present(self) -> bool:
        """True when the journal folder exists; refuses one that is not a real folder."""
        try:
            st = os.lstat(self.dir)
        except FileNotFoundError:
            return False
        except OSError as err:
            raise FormatError(f"{self.dir}: cannot be read ({err.strerror})") from err
        if not stat.S_ISDIR(st.st_mode):
            raise FormatError(f"{self.dir}: the journal must be a folder, found "
                              f"{describe_mode(st.st_mode)}")
        return True

    def recover(self) -> None:
        """Finish or discard what an interrupted writer left (see module docstring).

        Raises
        ------
        FormatError
            If the journal folder, its commit record or a blob it names is not
            what this library writes (nothing is moved or deleted then).
        """
        self._overlay = {}
        self._recorded = _UNSET
        if not self._journal_dir_present():
            return
        entries = None
        try:
            entries = self._read_manifest(self._manifest_path)
        except DatasetNotFoundError:  # no commit, or the writer finished applying meanwhile
            pass
        if entries is not None:
            blobs = self._check_blobs(entries)
            if self.readonly:
                self._overlay = blobs
                return
            self._apply(entries)
        if not self.readonly:
            self._dir_ready = False
            self._remove_dir()

    def _remove_dir(self) -> None:
        """Delete the journal folder (a real folder: rmtree never follows symlinks)."""
        if self._journal_dir_present():
            shutil.rmtree(self.dir, ignore_errors=True)

    def _read_manifest(self, path: str) -> list:
        """The validated entries of the commit record at ``path``.

        Raises
        ------
        DatasetNotFoundError
            When there is no commit record.
        FormatError
            When it is not a regular file, too large, not JSON, or invalid.
        """
        data = read_regular(path, MAX_OWN_FILE_BYTES)
        try:
            entries = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as err:
            raise FormatError(f"{path}: unreadable commit record ({err})") from err
        return check_manifest(entries, path)

    def _check_blobs(self, entries: list) -> dict:
        """``{key: blob path or None}`` once every blob of ``entries`` is a
        regular file (or gone: moved already) of a size its key allows."""
        blobs = {}
        for key, blob in entries:
            if blob is None:
                blobs[key] = None
                continue
            path = os.path.join(self.dir, blob)
            try:
                st = os.lstat(path)
            except FileNotFoundError:
                blobs[key] = path          # moved onto its key already
                continue
            except OSError as err:
                raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
            if not stat.S_ISREG(st.st_mode):
                raise FormatError(f"{path}: a commit blob must be a file, found "
                                  f"{describe_mode(st.st_mode)}")
            limit = commit_key_limit(key, self._manifest_path)
            if st.st_size > limit:
                raise FormatError(f"{path}: holds {st.st_size} bytes, more than {key} may hold")
            blobs[key] = path
        return blobs

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
            if blob is None or os.path.lexists(blob):
                return True, blob
        return False, None

    def in_overlay(self, key: str) -> bool:
        """True when ``key`` is read from a committed but unapplied commit record."""
        return key in self._overlay and key not in self._staged

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
        self._recorded = _UNSET
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
        discarded, the journal folder is cleaned (or a committed record rolled
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
        except Exception as reload_err:   # the disk still fails: refuse writes
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
        if not self.readonly:
            self.recover()
        if self.owner_reload is not None:
            self.owner_reload()
        self.broken = None

    def prune_empty_folders(self, keep=()) -> None:
        """Delete the folders left empty by a commit that replaced a dataset
        (deepest first), except those in ``keep`` (relative paths) and our own."""
        for folder, _dirs, _files in os.walk(self.root, topdown=False):
            rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
            if rel == "." or rel.split("/")[0] in OWN_NAMES or rel in keep:
                continue
            if not os.path.islink(folder):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)        # only succeeds when empty

    # --------------------------------------------------------------- writing

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.root}: cannot modify data because mode is 'r'")

    def _ensure_dir(self, key: str = "") -> None:
        if not self._dir_ready:
            self._journal_dir_present()   # refuses a symlink or file in its place
            try:
                os.makedirs(self.dir, exist_ok=True)
            except OSError as err:
                raise _naming(err, key, self.dir, self.root) from err
            self._dir_ready = True

    def _next_blob(self, key: str) -> str:
        self._ensure_dir(key)
        self._counter += 1
        return os.path.join(self.dir, f"{self._counter:06d}.blob")

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
            When the disk refuses the write, naming the file.
        """
        self._check_writable()
        check_key(key, self.root)
        parts = data if isinstance(data, list) else [data]
        parts = [part if isinstance(part, bytes) else bytes(part) for part in parts]
        blob = self._next_blob(key)
        size = sum(len(part) for part in parts)
        if size >= ASYNC_MIN_BYTES:
            self._limit_inflight(MAX_INFLIGHT_BYTES - size)
            digest = _pool("cpu").submit(_write_blob, blob, parts, self.fsync, key, self.root)
            self._inflight.append((digest, size))
            self._inflight_bytes += size
        else:  # small: written now, fsynced with the others at commit
            digest = _write_blob(blob, parts, False, key, self.root)
            self._unsynced.add(blob)
        self._unstage(key)
        self._staged[key] = blob
        self._staged_sums[key] = digest

    def stage_file(self, key: str, path: str, digest: str) -> None:
        """Make the written file ``path`` (on this file system, already
        fsynced, md5 ``digest``) the new content of ``key``; it is moved into
        the journal now.

        Raises
        ------
        OSError
            When the move fails, naming the file.
        """
        self._check_writable()
        check_key(key, self.root)
        blob = self._next_blob(key)
        try:
            os.replace(path, blob)
        except OSError as err:
            raise _naming(err, key, blob, self.root) from err
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
        check_key(key, self.root)
        self._unstage(key)
        self._staged[key] = None
        self._staged_sums[key] = None

    def stage_delete_all(self, prefix: str = "") -> None:
        """Record that every file under ``prefix`` (the whole root: '') is to be
        removed, our own files excepted; staged changes there are dropped."""
        for key in self.list_files(prefix):
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
            self._batch = max(self._batch - 1, 0)
        if self._batch == 0 and self._commit_requested:
            self.commit()

    def discard(self) -> None:
        """Forget staged changes (after a failed commit preparation)."""
        for key in list(self._staged):
            self._unstage(key)
        for future, _size in self._inflight:
            wait([future])
        self._inflight.clear()
        self._inflight_bytes = 0
        self._unsynced.clear()

    # ------------------------------------------------------------ checksums

    def list_files(self, prefix: str = "") -> list:
        """Keys of the files under ``prefix`` on disk (our own files and
        temporary files excluded), without reading them."""
        return [key for key, _path in self._walk(prefix)]

    def _walk(self, prefix: str = ""):
        """Yield ``(key, path)`` of the files under ``prefix``, refusing symlinks
        and anything that is not a file or a folder."""
        base = os.path.join(self.root, prefix) if prefix else self.root
        for folder, dirs, files in os.walk(base, onerror=_raise_walk_error):
            rel_folder = os.path.relpath(folder, self.root)
            rel_folder = "" if rel_folder == "." else rel_folder.replace(os.sep, "/") + "/"
            for name in [d for d in dirs if d not in OWN_NAMES]:
                if os.path.islink(os.path.join(folder, name)):
                    raise FormatError(f"{os.path.join(folder, name)}: a symlink inside the "
                                      f"dataset (bcolz datasets hold only files and folders)")
            dirs[:] = sorted(d for d in dirs if d not in OWN_NAMES)
            for name in sorted(files):
                if name in OWN_NAMES or name.startswith(TEMP_PREFIX):
                    continue
                yield rel_folder + name, os.path.join(folder, name)

    def _scan(self, prefix: str = "") -> dict:
        """md5 of every bcolz file under ``prefix`` as it is on disk now.

        Only regular files are read, each within the size its name allows.

        Raises
        ------
        FormatError
            Naming the first file that is a symlink, a FIFO, a device, too
            large, or unreadable.
        """
        return {key: md5_hex(read_regular(path, read_limit(key)))
                for key, path in self._walk(prefix)}

    def recorded(self):
        """The checksums as the dataset's checksum file records them (through a
        committed record when one is pending), or None when it has none.

        Raises
        ------
        FormatError
            When the checksum file is not a regular file, too large, or malformed.
        """
        if self._recorded is _UNSET:
            path = self._checksum_path
            found, blob = self.lookup(CHECKSUM_FILE)
            if found:
                path = blob
            if found and blob is None:
                self._recorded = None
            else:
                try:
                    data = read_regular(path, MAX_OWN_FILE_BYTES)
                except DatasetNotFoundError:
                    self._recorded = None
                else:
                    self._recorded = load_checksums(data, path)
        return self._recorded

    def checksums(self) -> dict:
        """``{relative path: md5 hex}`` of the committed bcolz files (read, or
        computed from the files once when the dataset has no checksum file)."""
        if self._sums is None:
            recorded = self.recorded()
            if recorded is not None:
                self._sums = dict(recorded)
            else:
                self._sums = self._scan() if os.path.isdir(self.root) else {}
        return self._sums

    # --------------------------------------------------------------- commit

    def commit(self) -> None:
        """Make the staged changes durable and visible, all at once.

        Raises
        ------
        OSError
            When the disk refuses a write (full, read-only...), naming the
            file.  If that happens before the commit record exists, nothing
            changes; after it, the change is committed and the next writer to
            open it finishes it.
        """
        if self._batch:
            self._commit_requested = True
            return
        self._commit_requested = False
        if not self._staged:
            return
        self._check_writable()
        try:
            sums = dict(self.checksums())
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
            entries = sorted(([key, None if blob is None else os.path.basename(blob)]
                              for key, blob in self._staged.items()),
                             key=lambda e: _commit_order(e[0]))
            self._check_targets(entries)
            tmp = os.path.join(self.dir, MANIFEST_TMP)
            try:
                with open(tmp, "wb") as fh:
                    fh.write(json.dumps(entries).encode("utf-8"))
                    fh.flush()
                    if self.fsync:
                        os.fsync(fh.fileno())
                os.replace(tmp, self._manifest_path)
            except OSError as err:
                raise _naming(err, "the commit record", tmp, self.root) from err
            if self.fsync:
                _fsync_dir(self.dir)
        except BaseException:
            self.discard()
            self._dir_ready = False
            with contextlib.suppress(OSError, FormatError):
                self._remove_dir()
            raise
        # Committed: from here on the change stands, even if applying fails
        # (then the next writer to open the dataset finishes it).
        self._staged.clear()
        self._staged_sums.clear()
        self._sums = sums
        self._recorded = sums
        self._apply(entries)
        self._dir_ready = False
        self._remove_dir()

    def _check_targets(self, entries: list) -> None:
        """Refuse to write through a symlink or a non-folder on the way to a target.

        Each folder between the root and a target that exists must be a real
        folder (lstat, so a symlink is never followed); so no commit, ours or
        one found in a received dataset, can reach a file outside the rootdir.

        Raises
        ------
        FormatError
            Naming the offending folder.
        """
        checked = set()
        for key, _blob in entries:
            parts = key.split("/")[:-1]
            for depth in range(1, len(parts) + 1):
                rel = "/".join(parts[:depth])
                if rel in checked:
                    continue
                checked.add(rel)
                path = os.path.join(self.root, *parts[:depth])
                try:
                    st = os.lstat(path)
                except FileNotFoundError:
                    break            # made by the commit, below a checked folder
                except OSError as err:
                    raise FormatError(f"{path}: cannot be checked ({err.strerror})") from err
                if not stat.S_ISDIR(st.st_mode):
                    raise FormatError(f"{path}: expected a folder inside the rootdir, found "
                                      f"{describe_mode(st.st_mode)}; nothing was written")

    def _apply(self, entries: list) -> None:
        self._check_targets(entries)
        touched = set()
        made = set()
        for key, blob in entries:
            target = os.path.join(self.root, *key.split("/"))
            folder = os.path.dirname(target)
            if blob is None:
                with contextlib.suppress(FileNotFoundError):
                    if os.path.isdir(target) and not os.path.islink(target):
                        continue       # only files are ever deleted
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
            os.unlink(self._manifest_path)


def _raise_walk_error(err: OSError) -> None:
    raise FormatError(f"{getattr(err, 'filename', '?')}: cannot be listed ({err.strerror})") \
        from err
