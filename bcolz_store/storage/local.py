"""A local folder as a :class:`~bcolz_store.storage.base.Store`.

Keys are paths below the folder.  Reads go through :func:`.files.open_regular`
(regular files only, no blocking, bounded sizes); a symlink is followed only
when it stays inside the root, and each folder is resolved once per store.
Writes of new files are plain writes (the commit protocol writes only fresh
blob files and moves them into place); :meth:`LocalStore.move` is an atomic
rename, :meth:`LocalStore.put_if_absent` an exclusive hard link of a fully
written, fsynced temporary file, and :meth:`LocalStore.sync` an fsync.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import uuid

from ..errors import ConcurrentWriteError, DatasetNotFoundError, FormatError
from ..format.layout import OWN_NAMES, TEMP_PREFIX, check_key
from .base import Store
from .files import describe_mode, open_regular, read_at, read_fd
from .io import fsync_all, fsync_dir, fsync_file, write_file
from .ranges import check_ranges

__all__ = ["LocalStore"]

_READ_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_BINARY", 0))


class LocalStore(Store):
    """A dataset folder on a local file system.

    Parameters
    ----------
    root : str or os.PathLike
        The folder (it need not exist yet).
    readonly : bool, default False
    """

    atomic_move = True
    durable = True
    on_disk = True

    def __init__(self, root, readonly: bool = False):
        super().__init__(os.fspath(root), readonly)
        self.root = self.url
        # folder -> its real path when it stays inside the root, else None;
        # None -> the root's real path.
        self._resolved = {}
        # folder key -> (its absolute path and a separator, whether it stays inside the root)
        self._folders = {}

    # ------------------------------------------------------------ naming

    def path(self, key: str) -> str:
        """Absolute path of ``key``.

        Raises
        ------
        FormatError
            If ``key`` is absolute or contains ``..``.
        """
        return self._file_path(key)[0]

    def _file_path(self, key: str) -> tuple:
        """(absolute path of ``key``, whether its folder stays inside the root).

        Each folder is checked and resolved once (a dataset has a handful);
        a file's own name is then checked with a few string tests, so the
        first read of each of a million chunk files costs no more than the
        next.

        Raises
        ------
        FormatError
            As :meth:`path`.
        """
        if not isinstance(key, str) or key.startswith("/"):
            check_key(key, self.root)            # raises, naming the key
        folder, _, name = key.rpartition("/")
        entry = self._folders.get(folder)
        if entry is None:
            if folder:
                check_key(folder, self.root)
                where = os.path.join(self.root, *folder.split("/"))
            else:
                where = self.root
            entry = self._folders[folder] = (where + os.sep, self._resolve(where) is not None)
        if name in ("", ".", "..") or "\0" in name or "\\" in name:
            check_key(key, self.root)            # raises, naming the key
        return entry[0] + name, entry[1]

    def forget_folders(self) -> None:
        """Resolve folders anew (the root moved, or a folder was replaced)."""
        self._resolved = {}
        self._folders = {}

    def _resolve(self, folder: str):
        """Real path of ``folder`` if it stays inside the root, else None (memoized)."""
        resolved = self._resolved
        if None not in resolved:
            resolved[None] = os.path.realpath(self.root)
            resolved[self.root] = resolved[None]
        if folder in resolved:
            return resolved[folder]
        parent = os.path.dirname(folder)
        if parent != folder and len(parent) >= len(self.root):
            base = self._resolve(parent)   # a folder below the root: one lstat each
            real = (None if base is None else
                    _within(resolved[None], os.path.realpath(folder))
                    if os.path.islink(folder) else os.path.join(base, os.path.basename(folder)))
        else:
            real = _within(resolved[None], os.path.realpath(folder))
        resolved[folder] = real
        return real

    def check_inside(self, path: str) -> None:
        """Refuse a file or folder that symlinks lead outside the root.

        Raises
        ------
        FormatError
            Naming ``path`` and where it leads.
        """
        real = self._resolve(os.path.dirname(path))
        if real is not None and os.path.islink(path):
            real = _within(self._resolved[None], os.path.realpath(path))
        if real is None:
            raise FormatError(f"{path}: leads outside the rootdir {self.root} "
                              f"(to {os.path.realpath(path)})")

    # ------------------------------------------------------------ reading

    def get(self, key: str, limit: int) -> bytes:
        """The content of the regular file ``key`` (see :class:`Store`).

        The common case is one ``open`` that does not follow a final symlink
        and one ``fstat``: the file's folder was checked once to stay inside
        the root.  A symlinked file is read only when it stays inside.
        """
        fd, size, path = self._open(key, limit)
        try:
            return read_fd(fd, size, path)      # a snapshot of what fstat saw
        finally:
            os.close(fd)

    def get_ranges(self, key: str, ranges) -> list:
        """The bytes of several ranges of the regular file ``key``: one open,
        one ``pread`` per range (see :meth:`Store.get_ranges`).

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.

        Returns
        -------
        list of bytes
            One per range, in their order (no range: nothing is opened).

        Raises
        ------
        ValueError, DatasetNotFoundError, FormatError
            As :meth:`get_range`.
        """
        ranges = check_ranges(ranges)
        if not ranges:
            self.path(key)                  # a hostile key is refused all the same
            return []
        fd, size, path = self._open(key, 1 << 62)
        try:
            return [read_at(fd, start, min(stop, size) - start, path) if start < size else b""
                    for start, stop in ranges]
        finally:
            os.close(fd)

    def _open(self, key: str, limit: int) -> tuple:
        """``(fd, size, path)`` of the regular file ``key`` of at most ``limit``
        bytes, opened for reading (the caller closes ``fd``).

        Raises
        ------
        DatasetNotFoundError, FormatError
            As :meth:`get`.
        """
        path, inside = self._file_path(key)
        if not inside:
            self.check_inside(path)          # raises, naming where it leads
        try:
            fd = os.open(path, _READ_FLAGS)
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{path}: no such file") from err
        except OSError as err:
            if err.errno != errno.ELOOP:
                raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
            self.check_inside(path)          # a symlink: read it only if it stays inside
            fd, size = open_regular(path, limit, follow=True)
            return fd, size, path
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise FormatError(f"{path}: expected a file, found {describe_mode(st.st_mode)}")
            if st.st_size > limit:
                raise FormatError(f"{path}: holds {st.st_size} bytes, more than the {limit} "
                                  f"such a file may hold")
        except BaseException:
            os.close(fd)
            raise
        return fd, st.st_size, path

    def exists(self, key: str) -> bool:
        """True when anything is at ``key`` (a file, or a FIFO, link... that
        :meth:`get` then refuses with a message saying what it is)."""
        path = self.path(key)           # FormatError for a hostile key
        try:
            os.lstat(path)              # os.path.lexists, one call less on the read path
        except OSError:
            return False
        return True

    def size(self, key: str):
        """Size of the regular file ``key`` (not followed if a symlink), None if absent.

        Raises
        ------
        FormatError
            When something else than a regular file is there.
        """
        path = self.path(key)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{path}: expected a file, found {describe_mode(st.st_mode)}")
        return st.st_size

    def identity(self, key: str):
        """``(inode, mtime, size)`` of the file ``key``, None when it does not exist."""
        try:
            st = os.stat(os.path.join(self.root, *key.split("/")))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError:                 # a symlink loop, permissions: some fixed identity
            return ("unreadable",)
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def is_folder(self, key: str) -> bool:
        """True when ``key`` is a real folder (not a symlink to one)."""
        try:
            return stat.S_ISDIR(os.lstat(self.path(key)).st_mode)
        except OSError:
            return False

    def list(self, prefix: str = "") -> list:
        """Keys of the files under ``prefix``, our own files and temporary
        files excluded, never following or accepting symlinks.

        Raises
        ------
        FormatError
            Naming the first symlink or other non-file met (bcolz datasets
            hold only files and folders), or a folder that cannot be listed.
        """
        base = self.path(prefix.rstrip("/")) if prefix else self.root
        keys = []
        for folder, dirs, files in os.walk(base, onerror=_raise_walk_error):
            rel = os.path.relpath(folder, self.root)
            rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            for name in [d for d in dirs if d not in OWN_NAMES]:
                if os.path.islink(os.path.join(folder, name)):
                    raise FormatError(f"{os.path.join(folder, name)}: a symlink inside the "
                                      f"dataset (bcolz datasets hold only files and folders)")
            dirs[:] = sorted(d for d in dirs if d not in OWN_NAMES)
            for name in sorted(files):
                if name in OWN_NAMES or name.startswith(TEMP_PREFIX):
                    continue
                keys.append(rel + name)
        return sorted(keys)

    def list_times(self, prefix: str) -> dict:
        """``{key: mtime}`` of every file under ``prefix``, temporary files
        included, never following symlinks (a symlink counts as a file)."""
        base = self.path(prefix.rstrip("/")) if prefix else self.root
        out = {}
        for folder, dirs, files in os.walk(base):
            rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
            rel = "" if rel == "." else rel + "/"
            for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
                with contextlib.suppress(OSError):
                    out[rel + name] = os.lstat(os.path.join(folder, name)).st_mtime
            dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        return out

    def check_folder(self, prefix: str) -> None:
        """Refuse a symlink, file or other non-folder at the folder key ``prefix``.

        Raises
        ------
        FormatError
            Naming what stands there.
        """
        path = self.path(prefix.rstrip("/"))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as err:
            raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
        if not stat.S_ISDIR(st.st_mode):
            raise FormatError(f"{path}: expected a folder, found {describe_mode(st.st_mode)}")

    def commit_lock(self, key: str, lease: float):
        """An OS lock (``flock``) on the file ``key``, created in a folder that
        is checked first (never through a symlink); ``lease`` is not needed:
        the kernel releases the lock of a process that dies."""
        from .commit_lock import FileCommitLock
        folder = key.rpartition("/")[0]

        def prepare():
            if folder:
                self.check_folder(folder + "/")
                self.makedirs(folder)
        return FileCommitLock(self.path(key), prepare)

    def remove_folder_if_empty(self, prefix: str) -> None:
        """Remove the folder ``prefix`` when it is empty."""
        with contextlib.suppress(OSError):
            os.rmdir(self.path(prefix.rstrip("/")))

    def listdir(self, prefix: str = "") -> list:
        """Names directly in the folder ``prefix`` (empty when it does not exist)."""
        try:
            return sorted(os.listdir(self.path(prefix.rstrip("/")) if prefix else self.root))
        except (FileNotFoundError, NotADirectoryError):
            return []

    # ------------------------------------------------------------ writing

    def makedirs(self, prefix: str = "") -> None:
        """Create the root and the folder ``prefix`` below it."""
        self._check_writable()
        os.makedirs(self.path(prefix.rstrip("/")) if prefix else self.root, exist_ok=True)

    def put(self, key: str, data) -> None:
        """Write the file ``key`` (its folder must exist; see :meth:`makedirs`).

        Not atomic: the commit protocol writes only fresh blob files this way,
        and moves them into place with :meth:`move`.
        """
        self._check_writable()
        write_file(self.path(key), data if isinstance(data, list) else [data])

    def put_and_sync(self, key: str, data):
        """:meth:`put`, then an fsync of the open file on an io thread; return
        its Future."""
        self._check_writable()
        return write_file(self.path(key), data if isinstance(data, list) else [data], sync=True)

    def put_if_absent(self, key: str, data: bytes) -> None:
        """Create ``key`` atomically with ``data``, refusing if it exists.

        The content is written and fsynced to a temporary file, which is then
        hard-linked to ``key`` (``link`` fails if ``key`` exists); where the
        file system has no hard links, it is renamed after an existence check.

        Raises
        ------
        ConcurrentWriteError
            When ``key`` exists already.
        OSError
            When the disk refuses, naming the file.
        """
        self._check_writable()
        target = self.path(key)
        tmp = os.path.join(os.path.dirname(target), f"{TEMP_PREFIX}{uuid.uuid4().hex}")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                if self.fsync_enabled:
                    os.fsync(fh.fileno())
            try:
                os.link(tmp, target)
            except FileExistsError as err:
                raise ConcurrentWriteError(
                    f"{target}: another writer is committing to this dataset") from err
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP,
                                     errno.EMLINK, errno.ENOSYS):
                    raise
                if os.path.lexists(target):
                    raise ConcurrentWriteError(
                        f"{target}: another writer is committing to this dataset") from err
                os.replace(tmp, target)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)

    # Set by the journal of this store: whether fsync is wanted.
    fsync_enabled = True

    def delete(self, key: str) -> None:
        """Remove the file ``key``; a folder there is left alone."""
        self._check_writable()
        path = self.path(key)
        with contextlib.suppress(FileNotFoundError):
            if os.path.isdir(path) and not os.path.islink(path):
                return
            os.unlink(path)

    def delete_prefix(self, prefix: str) -> None:
        """Remove the folder ``prefix`` and everything in it (never following
        symlinks; a symlink in its place is removed, not what it points to)."""
        self._check_writable()
        path = self.path(prefix.rstrip("/"))
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)

    def move(self, src: str, dst: str) -> None:
        """Rename ``src`` onto ``dst`` (atomic), creating ``dst``'s folder.

        Raises
        ------
        DatasetNotFoundError
            When ``src`` is gone (moved already).
        """
        self._check_writable()
        source, target = self.path(src), self.path(dst)
        try:
            os.replace(source, target)
            return
        except FileNotFoundError as err:
            if not os.path.lexists(source):
                raise DatasetNotFoundError(f"{source}: no such file") from err
        os.makedirs(os.path.dirname(target), exist_ok=True)   # the first file of its folder
        try:
            os.replace(source, target)
        except FileNotFoundError as err:
            if not os.path.lexists(source):
                raise DatasetNotFoundError(f"{source}: no such file") from err
            raise

    def sync(self, keys) -> None:
        """fsync the files ``keys`` (several at once: the file system can merge them)."""
        fsync_all(fsync_file, [self.path(key) for key in keys])

    def sync_folders(self, keys) -> None:
        """fsync the folders holding ``keys``."""
        fsync_all(fsync_dir, sorted({os.path.dirname(self.path(key)) for key in keys}))

    def check_targets(self, keys) -> None:
        """Refuse to write through a symlink or a non-folder on the way to a key.

        Each folder between the root and a key that exists must be a real
        folder (lstat, so a symlink is never followed); so no commit, ours or
        one found in a received dataset, can reach a file outside the root.

        Raises
        ------
        FormatError
            Naming the offending folder.
        """
        checked = set()
        for key in keys:
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

    def root_state(self) -> str:
        """``"folder"``, ``"missing"``, or ``"other"`` (a file or a broken link)."""
        return _root_state(self.root)

    def remove_root(self) -> None:
        """Delete the root folder and everything in it (a file there too)."""
        self._check_writable()
        if os.path.isdir(self.root) and not os.path.islink(self.root):
            shutil.rmtree(self.root, ignore_errors=True)
        elif os.path.lexists(self.root):
            os.unlink(self.root)
        self.forget_folders()

    def portable(self):
        return (self.url, None)

    def child(self, prefix: str) -> "LocalStore":
        """The folder ``prefix`` as a store of its own."""
        out = LocalStore(self.path(prefix.rstrip("/")), self.readonly)
        out.fsync_enabled = self.fsync_enabled
        return out

    def prune_empty_folders(self, keep=()) -> None:
        """Delete empty folders below the root (deepest first), except those in
        ``keep`` (relative paths) and our own."""
        for folder, _dirs, _files in os.walk(self.root, topdown=False):
            rel = os.path.relpath(folder, self.root).replace(os.sep, "/")
            if rel == "." or rel.split("/")[0] in OWN_NAMES or rel in keep:
                continue
            if not os.path.islink(folder):
                with contextlib.suppress(OSError):
                    os.rmdir(folder)        # only succeeds when empty


def _root_state(root: str) -> str:
    if os.path.isdir(root):
        return "folder"
    return "other" if os.path.lexists(root) else "missing"


def _within(root: str, real: str):
    """``real`` when it is ``root`` or below it, else None."""
    if real == root or os.path.commonpath([root, real]) == root:
        return real
    return None


def _raise_walk_error(err: OSError) -> None:
    if isinstance(err, (FileNotFoundError, NotADirectoryError)):
        return                          # nothing there: nothing listed
    raise FormatError(f"{getattr(err, 'filename', '?')}: cannot be listed ({err.strerror})") \
        from err
