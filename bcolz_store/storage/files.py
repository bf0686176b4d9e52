"""Reading local files of a dataset that may have come from anyone.

Every dataset file this library reads from a local disk is read by
:func:`read_regular`: it opens without blocking (a FIFO in place of a chunk
file cannot hang the reader), refuses anything but a regular file (a
directory, a FIFO, a device such as ``/dev/zero``, a socket), refuses a file
larger than the format allows for that file before reading a byte, and turns
every OS error into an error of :mod:`bcolz_store.errors` that names the file.
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import DatasetNotFoundError, FormatError

__all__ = ["describe_mode", "open_regular", "read_at", "read_fd", "read_regular"]

_BASE_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def describe_mode(mode: int) -> str:
    """'a directory', 'a FIFO'... for an ``st_mode`` that is not a regular file."""
    for test, text in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symlink")):
        if test(mode):
            return text
    return "not a regular file"


def open_regular(path: str, limit: int, follow: bool = False) -> tuple:
    """Open ``path`` for reading if it is a regular file of at most ``limit`` bytes.

    Parameters
    ----------
    path : str
    limit : int
        Largest size accepted, in bytes.
    follow : bool, default False
        Follow a symlink as the last component (the caller checked where it
        leads); otherwise a symlink is refused.

    Returns
    -------
    (fd, size)
        An open file descriptor (the caller closes it) and the file's size.

    Raises
    ------
    DatasetNotFoundError
        If nothing is at ``path``.
    FormatError
        If it is not a regular file, is a symlink (``follow`` false) or a
        symlink loop, is larger than ``limit``, or cannot be opened.
    """
    try:
        fd = os.open(path, _BASE_FLAGS | (0 if follow else _NOFOLLOW))
    except FileNotFoundError as err:
        raise DatasetNotFoundError(f"{path}: no such file") from err
    except OSError as err:
        if err.errno == errno.ELOOP:
            what = "a symlink loop" if follow else "a symlink where a file is expected"
            raise FormatError(f"{path}: {what}") from err
        raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
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
    return fd, st.st_size


def read_regular(path: str, limit: int, follow: bool = False) -> bytes:
    """The content of the regular file ``path``, which must hold at most ``limit`` bytes.

    See :func:`open_regular` for the checks.  A file that grows while it is
    read is cut at ``limit + 1`` bytes, so the caller's own size check
    catches it.

    Raises
    ------
    DatasetNotFoundError, FormatError
        As :func:`open_regular`; also FormatError when reading fails (an I/O
        error), naming the file.
    """
    fd, size = open_regular(path, limit, follow)
    try:
        return read_fd(fd, min(size, limit) + 1, path)
    finally:
        os.close(fd)


def read_fd(fd: int, nbytes: int, path: str) -> bytes:
    """Up to ``nbytes`` from an open file descriptor (fewer at end of file).

    Raises
    ------
    FormatError
        When the read fails, naming ``path``.
    """
    parts = []
    try:
        while nbytes > 0:
            part = os.read(fd, nbytes)
            if not part:
                break
            parts.append(part)
            nbytes -= len(part)
    except OSError as err:
        raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_at(fd: int, start: int, nbytes: int, path: str) -> bytes:
    """Up to ``nbytes`` from offset ``start`` of an open file (fewer at end of
    file), with ``pread`` where there is one (the file's offset is left alone).

    Raises
    ------
    FormatError
        When the read fails, naming ``path``.
    """
    parts = []
    try:
        if not hasattr(os, "pread"):            # Windows: the fd is the caller's own
            os.lseek(fd, start, os.SEEK_SET)
            return read_fd(fd, nbytes, path)
        while nbytes > 0:
            part = os.pread(fd, nbytes, start)
            if not part:
                break
            parts.append(part)
            nbytes -= len(part)
            start += len(part)
    except OSError as err:
        raise FormatError(f"{path}: cannot be read ({err.strerror})") from err
    return parts[0] if len(parts) == 1 else b"".join(parts)
