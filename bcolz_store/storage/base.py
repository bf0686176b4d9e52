"""The Store interface: bytes under keys, knowing nothing of arrays.

A store holds one dataset's files (or a pack of them) as bytes under
``/``-separated keys relative to its root: ``"meta/sizes"``,
``"price/data/__3.blp"``, ``".bcolz_store-journal/000001.blob"``.  Everything
above it (the commit protocol, the chunk engine, carray and ctable) speaks only
in keys; everything below it (files, objects in a bucket, members of a zip
file, a dict) is the store's business.

What a store must offer is the abstract methods of :class:`Store`.  A store
that can do better than the generic versions overrides the others: a local
folder moves a file by renaming it and makes writes durable with fsync; an
object store fetches many keys concurrently and creates a commit record with
a conditional write.  Each backend passes the one contract test class,
:class:`bcolz_store.testing.store.StoreTests`.

Errors are those of :mod:`bcolz_store.errors`: a missing key is a
:class:`DatasetNotFoundError` (a ``FileNotFoundError``), something at a key
that is not a plain object (a folder, a FIFO, a symlink leading out of the
root) or larger than allowed is a :class:`FormatError`, a write to a
read-only store a :class:`ReadOnlyError`, and losing a race for a commit
record a :class:`ConcurrentWriteError`.  Failures of the medium itself are
``OSError`` naming the key.
"""

from __future__ import annotations

import abc
import concurrent.futures

from ..errors import ConcurrentWriteError, DatasetNotFoundError, FormatError, ReadOnlyError
from ..format.layout import CHECKSUM_FILE, check_key
from .io import pool
from .ranges import check_range, check_ranges

__all__ = ["FETCH_THREADS", "PrefixStore", "Store"]

# Concurrent fetches of a store that has no batched fetch of its own.
FETCH_THREADS = 16


class Store(abc.ABC):
    """Bytes under keys, in one root.

    Attributes
    ----------
    url : str
        Where the root is (a path or a URL), for messages.
    readonly : bool
        Every write raises :class:`ReadOnlyError`.
    atomic_move : bool
        :meth:`move` replaces its target atomically (a rename).
    durable : bool
        :meth:`sync` and :meth:`sync_folders` make writes survive a power
        loss (local folders); elsewhere a completed write is durable.
    remote : bool
        Each call is a network round trip: callers batch and cache.
    on_disk : bool
        Each key is the file :meth:`path` names on a local file system, so a
        caller may ``lstat`` that path instead of calling :meth:`exists`.
    self_checking : bool
        Each object carries a checksum of its own that :meth:`get` checks (a
        zip entry's CRC-32), so reading every key checks a dataset that has
        no ``bcolz_store.md5``.
    """

    atomic_move = False
    durable = False
    remote = False
    on_disk = False
    self_checking = False

    def __init__(self, url: str, readonly: bool = False):
        self.url = url
        self.readonly = readonly

    # ------------------------------------------------------------ naming

    def path(self, key: str) -> str:
        """Where ``key`` is, for messages (``url/key``).

        Raises
        ------
        FormatError
            For a key that could leave the root (absolute, ``..``).
        """
        check_key(key, self.url)
        return f"{self.url.rstrip('/')}/{key}"

    def _check_writable(self) -> None:
        if self.readonly:
            raise ReadOnlyError(f"{self.url}: cannot modify data because mode is 'r'")

    # ------------------------------------------------------------ reading

    @abc.abstractmethod
    def get(self, key: str, limit: int) -> bytes:
        """The bytes at ``key``, which may hold at most ``limit`` bytes.

        Raises
        ------
        DatasetNotFoundError
            When nothing is at ``key``.
        FormatError
            When what is there is not a plain object of at most ``limit``
            bytes, or leads outside the root.
        """

    def get_many(self, keys, limit: int) -> dict:
        """``{key: bytes or the exception get() raised}`` for every key, fetched
        concurrently where the store benefits from it."""
        keys = list(keys)
        if not self.remote or len(keys) < 2:
            return {key: _call(self.get, key, limit) for key in keys}
        workers = min(FETCH_THREADS, len(keys))
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            return dict(zip(keys, pool.map(lambda k: _call(self.get, k, limit), keys)))

    def get_range(self, key: str, start: int, stop: int) -> bytes:
        """The bytes ``[start, stop)`` of the object at ``key``.

        One range of :meth:`get_ranges`, which each store implements (reading
        only the range: a local file by ``pread``, an object by one request).

        Parameters
        ----------
        key : str
        start, stop : int
            The range, ``0 <= start <= stop``.

        Returns
        -------
        bytes
            Fewer than ``stop - start`` bytes where the object ends before
            ``stop``; empty where ``start`` is at or past its end.

        Raises
        ------
        ValueError
            When ``start`` or ``stop`` is not an integer, is negative, or
            ``stop < start``.
        DatasetNotFoundError
            When nothing is at ``key``.
        FormatError
            When what is there is not a plain object (a folder, a FIFO...), or
            leads outside the root, or ``key`` could leave the root.
        """
        return self.get_ranges(key, [check_range(start, stop)])[0]

    def get_ranges(self, key: str, ranges) -> list:
        """The bytes of several ranges of the object at ``key``.

        The generic version reads the whole object with :meth:`get` once and
        cuts the ranges out; an object store fetches ranges that lie close
        together in one request, and groups far apart concurrently.

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs, in any order, overlapping or not.

        Returns
        -------
        list of bytes
            The bytes of each range, in the order of ``ranges``, each as
            :meth:`get_range` returns it.  No range: an empty list (``key``
            is checked, nothing is read).

        Raises
        ------
        ValueError
            When ``ranges`` is not an iterable of pairs, or a pair is not a
            valid range.
        DatasetNotFoundError, FormatError
            As :meth:`get_range`.
        """
        ranges = check_ranges(ranges)
        if not ranges:
            self.path(key)                  # a hostile key is refused all the same
            return []
        data = self.get(key, 1 << 62)
        return [bytes(data[start:stop]) for start, stop in ranges]

    def get_ranges_if_md5(self, key: str, ranges, md5: str):
        """The bytes of several ranges of the object at ``key``, read only if
        the object's whole content has the md5 checksum ``md5``; None when it
        has another, or when the store cannot promise that cheaply.

        A reader that knows the md5 of the content it expects (from a
        dataset's checksum file) reads a few ranges of a file this way instead
        of fetching the whole file to compare its md5 (None: do that).  The
        generic version checks its arguments and returns None; an S3 store
        sends ranged requests conditional on the object's ETag.

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs, as :meth:`get_ranges` takes them.
        md5 : str
            The hex md5 of the content the object must hold.

        Returns
        -------
        list of bytes, or None
            The bytes of each range, in the order of ``ranges``, as
            :meth:`get_ranges` returns them, all of one content whose md5 is
            ``md5``; or None.

        Raises
        ------
        ValueError
            As :meth:`get_ranges`.
        DatasetNotFoundError
            When nothing is at ``key`` (a store may answer None instead).
        FormatError
            When ``key`` could leave the root (a store may also refuse what
            :meth:`get_range` refuses, or answer None).
        """
        check_ranges(ranges)
        self.path(key)                      # a hostile key is refused all the same
        return None

    @abc.abstractmethod
    def exists(self, key: str) -> bool:
        """True when something is at ``key`` (even something :meth:`get` refuses)."""

    def size(self, key: str):
        """Bytes at ``key``, or None when nothing is there.

        Raises
        ------
        FormatError
            When what is there is not a plain object.
        """
        try:
            return len(self.get(key, 1 << 62))
        except DatasetNotFoundError:
            return None

    def identity(self, key: str):
        """Something that changes whenever the object at ``key`` is replaced
        (None when there is none): a reader compares it to notice commits."""
        try:
            data = self.get(key, 1 << 30)
        except (DatasetNotFoundError, FormatError):
            return None
        return (len(data), hash(data))

    @abc.abstractmethod
    def list(self, prefix: str = "") -> list:
        """Keys of every object under ``prefix`` (a folder key ending in ``/``,
        or ``""`` for the whole root), sorted.

        Raises
        ------
        FormatError
            When the listing meets something that is neither a plain object
            nor a folder (local folders: a symlink, a FIFO, a device).
        """

    def list_times(self, prefix: str) -> dict:
        """``{key: modification time (seconds since the epoch)}`` of every object
        under ``prefix``, our own files included (used to find stale blobs)."""
        import time
        now = time.time()
        return {key: now for key in self.list(prefix)}

    def listdir(self, prefix: str = "") -> list:
        """Names directly under the folder key ``prefix`` (our own files included)."""
        return sorted({key[len(prefix):].partition("/")[0]
                       for key in self.list_times(prefix) if key.startswith(prefix)})

    def check_folder(self, prefix: str) -> None:
        """Refuse a folder key (``"name/"``) where something else stands (local
        folders: a symlink or a file in place of the folder).

        Raises
        ------
        FormatError
            Naming what stands there.
        """

    # ------------------------------------------------------------ writing

    def makedirs(self, prefix: str = "") -> None:
        """Create the folder ``prefix`` (and the root) where folders exist."""

    def remove_folder_if_empty(self, prefix: str) -> None:
        """Remove the folder ``prefix`` if it is empty (where folders exist)."""

    @abc.abstractmethod
    def put(self, key: str, data) -> None:
        """Make ``data`` (bytes-like, or a list of them) the object at ``key``.

        Raises
        ------
        ReadOnlyError
            In a read-only store.
        OSError
            When the medium refuses, naming the key.
        """

    def put_and_sync(self, key: str, data):
        """:meth:`put`, and make the write durable on an io thread (see :meth:`sync`).

        Returns
        -------
        concurrent.futures.Future
            Done once the write is durable; its result raises what the sync raised.

        Raises
        ------
        ReadOnlyError, OSError
            As :meth:`put`.
        """
        self.put(key, data)
        return pool("io").submit(self.sync, [key])

    def put_if_absent(self, key: str, data: bytes) -> None:
        """Create the object ``key`` with ``data`` unless something is there.

        Stores with a conditional write (S3 ``If-None-Match``, an exclusive
        link on a local disk) make this atomic; the generic version checks
        first, which leaves a small window that the caller's generation check
        narrows.

        Raises
        ------
        ConcurrentWriteError
            When ``key`` exists already.
        """
        if self.exists(key):
            raise ConcurrentWriteError(f"{self.path(key)}: exists already (another writer)")
        self.put(key, data)

    @abc.abstractmethod
    def delete(self, key: str) -> None:
        """Remove the object ``key`` (nothing happens when there is none)."""

    def delete_if(self, key: str, data: bytes) -> bool:
        """Remove the object ``key`` only while it holds ``data``; True when
        it was removed.

        Atomic where the store has a conditional delete (S3's ``If-Match``, a
        dict under a lock); the generic version reads, compares and deletes,
        which is atomic only against one writer.

        Raises
        ------
        OSError
            When the medium refuses, naming the key.
        """
        if self._holds(key, data):
            self.delete(key)
            return True
        return False

    def replace_if(self, key: str, data: bytes, expected: bytes) -> bool:
        """Make ``data`` the object ``key`` only while it holds ``expected``;
        True when it was replaced (atomic as :meth:`delete_if`).

        Raises
        ------
        OSError
            When the medium refuses, naming the key.
        """
        if self._holds(key, expected):
            self.put(key, data)
            return True
        return False

    def _holds(self, key: str, data: bytes) -> bool:
        try:
            return self.get(key, len(data)) == bytes(data)
        except (DatasetNotFoundError, FormatError):     # gone, or larger than data
            return False

    def commit_lock(self, key: str, lease: float):
        """The lock that writers hold while they commit and apply (see
        :mod:`~.commit_lock`): an object at ``key`` that expires after
        ``lease`` seconds without renewal; a local folder has an OS lock."""
        from .commit_lock import ObjectCommitLock
        return ObjectCommitLock(self, key, lease)

    def delete_prefix(self, prefix: str) -> None:
        """Remove every object under ``prefix`` (a folder key ending in ``/``)."""
        for key in self.list(prefix):
            self.delete(key)

    def delete_many(self, keys) -> None:
        """Remove several objects (nothing happens for those that do not exist)."""
        for key in keys:
            self.delete(key)

    def move_many(self, pairs, missing_ok: bool = False) -> None:
        """:meth:`move` each ``(src, dst)``, concurrently on remote stores;
        with ``missing_ok`` a ``src`` that is gone (moved already) is skipped."""
        def one(pair):
            try:
                self.move(*pair)
            except DatasetNotFoundError:
                if not missing_ok:
                    raise
        self.for_each(one, list(pairs))

    def for_each(self, function, items: list) -> None:
        """Call ``function(item)`` for each item: concurrently on remote stores
        (at most ``FETCH_THREADS`` at once), in order on the others; raises the
        first error once all calls are done."""
        if not self.remote or len(items) < 2:
            for item in items:
                function(item)
            return
        with concurrent.futures.ThreadPoolExecutor(min(FETCH_THREADS, len(items))) as pool:
            for future in [pool.submit(function, item) for item in items]:
                future.result()

    def move(self, src: str, dst: str) -> None:
        """Make the object ``src`` the object ``dst`` and remove ``src``.

        Raises
        ------
        DatasetNotFoundError
            When ``src`` does not exist (moved already).
        """
        self.copy(src, dst)
        self.delete(src)

    def copy(self, src: str, dst: str) -> None:
        """Make ``dst`` an object with the content of ``src`` (which stays).

        Raises
        ------
        DatasetNotFoundError
            When ``src`` does not exist.
        """
        self.put(dst, self.get(src, 1 << 62))

    # ------------------------------------------------- local-folder hooks

    def sync(self, keys) -> None:
        """Make the writes of ``keys`` durable (fsync on local folders)."""

    def sync_folders(self, keys) -> None:
        """Make the creation, replacement and removal of ``keys`` durable."""

    def check_targets(self, keys) -> None:
        """Refuse to write ``keys`` through anything that could lead outside
        the root (local folders: a symlinked folder on the way).

        Raises
        ------
        FormatError
            Naming the offending folder.
        """

    def prune_empty_folders(self, keep=()) -> None:
        """Remove folders left empty by a replaced dataset (local folders)."""

    # ------------------------------------------------------- the root

    def root_state(self) -> str:
        """``"missing"`` (nothing at the root), ``"folder"`` (it holds objects)
        or ``"other"`` (a local file in place of a folder)."""
        return "folder" if self.list("") or self.exists(CHECKSUM_FILE) else "missing"

    def remove_root(self) -> None:
        """Delete everything at the root (a purged or replaced dataset)."""
        self._check_writable()
        self.delete_prefix("")

    def child(self, prefix: str) -> "Store":
        """A store whose root is the folder key ``prefix`` of this one."""
        return PrefixStore(self, prefix)

    def close(self) -> None:
        """Release what the store holds open."""

    def portable(self):
        """``(rootdir, storage_options)`` that open this store's data in another
        process (a pickled carray carries them), or None when its bytes are
        in this process only."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r}{', readonly' if self.readonly else ''})"


def _call(function, *args):
    try:
        return function(*args)
    except Exception as err:  # returned to the caller, who raises it where it belongs
        return err


class PrefixStore(Store):
    """The keys of ``store`` under ``prefix``, as a store of their own."""

    def __init__(self, store: Store, prefix: str):
        prefix = prefix.rstrip("/") + "/"
        check_key(prefix.rstrip("/"), store.url)
        super().__init__(store.path(prefix.rstrip("/")), store.readonly)
        self.base = store
        self.prefix = prefix
        self.atomic_move = store.atomic_move
        self.durable = store.durable
        self.remote = store.remote
        self.self_checking = store.self_checking

    def _key(self, key: str) -> str:
        check_key(key, self.url)
        return self.prefix + key

    def get(self, key, limit):
        return self.base.get(self._key(key), limit)

    def get_many(self, keys, limit):
        got = self.base.get_many([self._key(k) for k in keys], limit)
        return {k: got[self.prefix + k] for k in keys}

    def get_range(self, key, start, stop):
        return self.base.get_range(self._key(key), start, stop)

    def get_ranges(self, key, ranges):
        return self.base.get_ranges(self._key(key), ranges)

    def get_ranges_if_md5(self, key, ranges, md5):
        return self.base.get_ranges_if_md5(self._key(key), ranges, md5)

    def exists(self, key):
        return self.base.exists(self._key(key))

    def size(self, key):
        return self.base.size(self._key(key))

    def identity(self, key):
        return self.base.identity(self._key(key))

    def list(self, prefix=""):
        n = len(self.prefix)
        return [k[n:] for k in self.base.list(self.prefix + prefix)]

    def list_times(self, prefix):
        n = len(self.prefix)
        return {k[n:]: t for k, t in self.base.list_times(self.prefix + prefix).items()}

    def check_folder(self, prefix):
        self.base.check_folder(self.prefix + prefix)

    def put(self, key, data):
        self._check_writable()
        self.base.put(self._key(key), data)

    def put_if_absent(self, key, data):
        self._check_writable()
        self.base.put_if_absent(self._key(key), data)

    def delete(self, key):
        self._check_writable()
        self.base.delete(self._key(key))

    def delete_if(self, key, data):
        self._check_writable()
        return self.base.delete_if(self._key(key), data)

    def replace_if(self, key, data, expected):
        self._check_writable()
        return self.base.replace_if(self._key(key), data, expected)

    def commit_lock(self, key, lease):
        return self.base.commit_lock(self._key(key), lease)

    def delete_prefix(self, prefix):
        self._check_writable()
        self.base.delete_prefix(self.prefix + prefix)

    def move(self, src, dst):
        self._check_writable()
        self.base.move(self._key(src), self._key(dst))

    def copy(self, src, dst):
        self._check_writable()
        self.base.copy(self._key(src), self._key(dst))

    def makedirs(self, prefix=""):
        self.base.makedirs((self.prefix + prefix).rstrip("/"))

    def remove_folder_if_empty(self, prefix):
        self.base.remove_folder_if_empty(self.prefix + prefix)

    def sync(self, keys):
        self.base.sync([self.prefix + k for k in keys])

    def sync_folders(self, keys):
        self.base.sync_folders([self.prefix + k for k in keys])

    def check_targets(self, keys):
        self.base.check_targets([self.prefix + k for k in keys])
