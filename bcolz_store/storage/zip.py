"""A dataset packed in one ``.zip`` file, as a read-only :class:`~.base.Store`.

``bcolz-store pack DIR OUT.zip`` (:func:`~.packs.pack`) writes every file of a
dataset as a zip entry, *stored* (not recompressed: chunk files are Blosc
data already), at the path it has in the folder, so unzipping gives a folder
the real bcolz opens; the checksum file and the consolidated metadata go in
too, so ``verify`` works on a pack.  This answers bcolz issue #328 (300 MB of
CSV became 300,000 files): one file to copy, one file for a file system to
hold.

Reading a pack from anyone is as safe as reading a folder.  Opening a pack
refuses the whole pack (:class:`~bcolz_store.errors.FormatError` naming the
pack and the entry) when its central directory cannot be read (truncated,
a zip version or a name Python's zipfile cannot decode) or when an entry

* has a name that is empty, absolute, has an empty, ``.`` or ``..``
  component, a backslash or a NUL, is deeper than :data:`MAX_ENTRY_DEPTH`
  folders or longer than :data:`MAX_ENTRY_NAME_BYTES` (a component longer
  than 255 bytes);
* has the name of another entry (two entries under one name: which one a
  reader sees would depend on the reader), or is a file whose name is also
  a folder of other entries;
* or when the entries together declare more bytes than the pack's file
  holds (entries that overlap, so that unpacking a small pack would write
  far more than it holds).

Reading an entry refuses (FormatError naming the entry) an encrypted, a
compressed (a compressed entry could be a zip bomb) or a symlink entry, and
a stored entry whose declared sizes disagree or reach past the end of the
pack; it reads at most the bytes the entry declares, within the size its
name allows and :func:`bcolz_store.limits.check_alloc`, and Python's
zipfile checks its CRC and that its local header names it.  Nothing outside
the pack's file is opened: entries are never followed as links.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
import zipfile
import zlib

from ..errors import DatasetNotFoundError, FormatError
from ..format.layout import OWN_NAMES, TEMP_PREFIX, check_key
from ..limits import check_alloc
from .base import Store
from .ranges import check_ranges

__all__ = ["MAX_ENTRY_DEPTH", "MAX_ENTRY_NAME_BYTES", "ZipStore"]

#: Folders an entry's name may go down (a ctable's deepest file is three
#: deep, ``column/data/__0.blp``; the journal's a few more).
MAX_ENTRY_DEPTH = 32
#: Bytes an entry's name may take (UTF-8); a component may take 255 (what
#: file systems allow).
MAX_ENTRY_NAME_BYTES = 1024

# What Python's zipfile raises on bytes that are not a zip it can read: its
# own BadZipFile, and from the parsing under it struct, unicode, index and
# version errors (NotImplementedError for a zip version it does not know,
# RuntimeError for an encrypted entry, EOFError for a truncated one).
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, struct.error, ValueError, IndexError, KeyError,
               NotImplementedError, RuntimeError, EOFError, OverflowError, OSError)


def _entry_named_by(err: BaseException, path: str) -> str:
    """``", entry NAME"`` for the entry that made zipfile fail, where it can
    be told (a name that is not UTF-8, a zip version zipfile does not know),
    else ``""``.  Only what the central directory says is read."""
    if isinstance(err, UnicodeDecodeError):
        return (f", entry {bytes(err.object)[:200]!r}: a name that is not UTF-8 (its flag "
                f"says it is)")
    if not isinstance(err, NotImplementedError):
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - (1 << 16) - 22))
            tail = fh.read()
            end = tail.rfind(b"PK\x05\x06")
            if end < 0 or end + 22 > len(tail):
                return ""
            cd_size, cd_offset = struct.unpack_from("<II", tail, end + 12)
            if cd_size > (64 << 20):
                return ""
            fh.seek(cd_offset)
            cd = fh.read(cd_size)
        at = 0
        while at + 46 <= len(cd) and cd[at:at + 4] == b"PK\x01\x02":
            needed = struct.unpack_from("<H", cd, at + 6)[0]
            n, m, k = struct.unpack_from("<HHH", cd, at + 28)
            if needed > zipfile.MAX_EXTRACT_VERSION:
                return f", entry {cd[at + 46:at + 46 + n][:200]!r} (needs zip version " \
                       f"{needed / 10:.1f})"
            at += 46 + n + m + k
    except (OSError, struct.error):
        pass
    return ""


class ZipStore(Store):
    """A ``.zip`` pack of one dataset (read-only).

    Parameters
    ----------
    path : str or os.PathLike
        The pack.

    Raises
    ------
    DatasetNotFoundError
        If there is no such file.
    FormatError
        If it is not a zip file Python's zipfile can read, or an entry is
        unsafe (see the module's description).
    """

    self_checking = True        # get() checks each entry's CRC-32

    def __init__(self, path):
        path = os.fspath(path)
        super().__init__(path, readonly=True)
        try:
            self._zip = zipfile.ZipFile(path, "r")
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{path}: no such pack") from err
        except _ZIP_ERRORS as err:
            entry = _entry_named_by(err, path)
            raise FormatError(f"{path}: not a zip pack{entry} ({type(err).__name__}: "
                              f"{err})") from err
        try:
            self._size = os.fstat(self._zip.fp.fileno()).st_size
            self._entries = self._check_entries()
        except BaseException:
            self._zip.close()
            raise
        self._lock = threading.Lock()

    def _check_entries(self) -> dict:
        path = self.url
        entries, folders = {}, set()
        held = 0
        for info in self._zip.infolist():
            name = info.filename
            is_dir = name.endswith("/")
            key = name[:-1] if is_dir else name
            what = f"{path}: entry {name!r:.200}"
            if "\0" in info.orig_filename:
                raise FormatError(f"{path}: entry {info.orig_filename!r:.200} has a NUL in "
                                  f"its name")
            try:
                check_key(key, path)
            except FormatError as err:
                raise FormatError(f"{what} could leave the dataset (an empty or absolute "
                                  f"name, a '.', '..' or empty component, a backslash or "
                                  f"a NUL)") from err
            parts = key.split("/")
            if len(parts) > MAX_ENTRY_DEPTH or len(key.encode("utf-8", "surrogatepass")) \
                    > MAX_ENTRY_NAME_BYTES or any(len(p.encode("utf-8", "surrogatepass")) > 255
                                                  for p in parts):
                raise FormatError(f"{what}: a name deeper than {MAX_ENTRY_DEPTH} folders or "
                                  f"longer than {MAX_ENTRY_NAME_BYTES} bytes (255 a "
                                  f"component); no dataset has such a file")
            if key in entries and not is_dir:
                raise FormatError(f"{what}: two entries have this name")
            for i in range(1, len(parts)):
                folders.add("/".join(parts[:i]))
            if is_dir:
                folders.add(key)
                continue
            entries[key] = info
            held += info.compress_size
        both = folders.intersection(entries)
        if both:
            name = min(both)
            raise FormatError(f"{path}: entry {name!r:.200} is a file and a folder of other "
                              f"entries")
        if held > self._size:
            raise FormatError(f"{path}: its entries declare {held:,} bytes, more than the "
                              f"{self._size:,} the pack holds (entries overlap or lie about "
                              f"their sizes)")
        return entries

    def path(self, key: str) -> str:
        check_key(key, self.url)
        return f"{self.url}!{key}"

    def _info(self, key: str):
        where = self.path(key)
        info = self._entries.get(key)
        if info is None:
            raise DatasetNotFoundError(f"{where}: no such entry")
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise FormatError(f"{where}: a symlink entry (packs hold only files)")
        if info.flag_bits & 0x1:
            raise FormatError(f"{where}: an encrypted entry (packs hold their files as "
                              f"they are)")
        if info.compress_type != zipfile.ZIP_STORED:
            raise FormatError(f"{where}: a compressed entry (packs store their "
                              f"entries as they are)")
        if info.compress_size != info.file_size:
            raise FormatError(f"{where}: a stored entry declaring {info.file_size} bytes "
                              f"and {info.compress_size} stored bytes")
        if info.header_offset + info.compress_size > self._size:
            raise FormatError(f"{where}: declares {info.file_size} bytes at offset "
                              f"{info.header_offset}, past the end of the pack "
                              f"({self._size} bytes)")
        return info

    def get(self, key, limit):
        info = self._info(key)
        if info.file_size > limit:
            raise FormatError(f"{self.path(key)}: holds {info.file_size} bytes, more than the "
                              f"{limit} such a file may hold")
        check_alloc(info.file_size, f"reading {self.path(key)}")
        try:
            with self._lock, self._zip.open(info) as fh:
                data = fh.read(info.file_size)
                extra = fh.read(1)      # reads to the end: zipfile checks the CRC there
        except _ZIP_ERRORS as err:
            raise FormatError(f"{self.path(key)}: cannot be read ({type(err).__name__}: "
                              f"{err})") from err
        if len(data) != info.file_size or extra:
            raise FormatError(f"{self.path(key)}: holds {len(data)} bytes, not the "
                              f"{info.file_size} its entry declares")
        return data

    def get_ranges(self, key, ranges):
        """The bytes of several ranges of the entry ``key``, read once (see
        :meth:`get_range`).

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.

        Returns
        -------
        list of bytes
            One per range, in their order.

        Raises
        ------
        ValueError, DatasetNotFoundError, FormatError
            As :meth:`get_range`.
        """
        ranges = check_ranges(ranges)
        if not ranges:
            self.path(key)                  # a hostile key is refused all the same
            return []
        data = self.get(key, self._info(key).file_size)
        return [data[start:stop] for start, stop in ranges]

    def exists(self, key):
        self.path(key)
        return key in self._entries

    def size(self, key):
        try:
            return self._info(key).file_size
        except DatasetNotFoundError:
            return None

    def identity(self, key):
        info = self._entries.get(key)
        return None if info is None else (info.CRC, info.file_size)

    def list(self, prefix=""):
        return sorted(k for k in self._entries if k.startswith(prefix)
                      and not any(p in OWN_NAMES for p in k.split("/"))
                      and not k.rpartition("/")[2].startswith(TEMP_PREFIX))

    def list_times(self, prefix):
        import time

        def when(info):
            try:
                return time.mktime(info.date_time + (0, 0, -1))
            except (OverflowError, ValueError):
                return 0.0
        return {k: when(info) for k, info in self._entries.items() if k.startswith(prefix)}

    def root_state(self):
        return "folder" if self._entries else "missing"

    def put(self, key, data):
        self._check_writable()

    def delete(self, key):
        self._check_writable()

    def portable(self):
        return (self.url, None)

    def close(self):
        self._zip.close()
