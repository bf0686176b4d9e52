"""The names of a dataset's files, which of them are bcolz's, and how big each may be.

A carray rootdir holds bcolz's files and, beside them, a few of this
library's own, which bcolz never reads::

    ROOT/__attrs__                 user attributes (JSON)          bcolz
    ROOT/meta/sizes                shape, nbytes, cbytes (JSON)    bcolz
    ROOT/meta/storage              dtype, cparams, chunklen (JSON) bcolz
    ROOT/meta/stats                chunk statistics (JSON,         ours
                                   format/stats_meta.py)
    ROOT/data/__N.blp              chunk N                         bcolz
    ROOT/data/__N.vlen             chunk N of variable-length      ours
                                   items (kinds/vlen/meta.py)
    ROOT/categories/...            the categories of a categorical ours
                                   carray (kinds/category/meta.py)
    ROOT/bcolz_store.md5           checksums (md5sum format)       ours
    ROOT/bcolz_store.json          consolidated metadata           ours
    ROOT/.bcolz_store-journal/     commit records, staged blobs    ours
    ROOT/.bcolz_store.lock         the opt-in writer lock          ours

A ctable rootdir holds ``__rootdirs__`` (column names, JSON), ``__attrs__``
and one carray rootdir per column, named after the column, so a column file
is ``NAME/meta/sizes``, ``NAME/data/__N.blp``...

Every key (a ``/``-separated path relative to the root) that a commit may
write is one of these; anything else in a commit record is refused, which is
what keeps a journal shipped inside a received dataset from reaching other
files.  Names the library uses itself cannot be column names.

Source: bcolz format v1.0 (seeds/001) and FORMAT-NOTES.md for bcolz's files;
the others are this library's (docs/durability.md).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import keyword
import re

from ..errors import FormatError

__all__ = [
    "ATTRS_FILE",
    "CHECKSUM_FILE",
    "CONSOLIDATED_FILE",
    "JOURNAL_DIR",
    "LOCK_FILE",
    "MAX_CHUNK_FILE_BYTES",
    "MAX_META_BYTES",
    "MAX_OWN_FILE_BYTES",
    "MAX_VLEN_FILE_BYTES",
    "OPTIONAL_FILES",
    "OWN_NAMES",
    "RESERVED_NAMES",
    "ROOTDIRS_FILE",
    "TEMP_PREFIX",
    "check_column_name",
    "check_key",
    "commit_key_limit",
    "is_derived_key",
    "is_metadata_key",
    "is_reserved_name",
    "split_names",
    "validate_names",
]

ATTRS_FILE = "__attrs__"
ROOTDIRS_FILE = "__rootdirs__"
CHECKSUM_FILE = "bcolz_store.md5"
CONSOLIDATED_FILE = "bcolz_store.json"
JOURNAL_DIR = ".bcolz_store-journal"
LOCK_FILE = ".bcolz_store.lock"
# Temporary files carry this prefix; bcolz ignores them (it reads only the
# files it names) and so does this library.
TEMP_PREFIX = ".tmp-"

# Names in a rootdir that are this library's, not bcolz's: never checksummed,
# never reported as "extra".
OWN_NAMES = (JOURNAL_DIR, CHECKSUM_FILE, CONSOLIDATED_FILE, LOCK_FILE)
# Names a column may not take: the files of a ctable rootdir and our own.
RESERVED_NAMES = frozenset({ATTRS_FILE, ROOTDIRS_FILE, *OWN_NAMES})

# Largest file of each kind that is ever read.  A JSON metadata file of a
# real dataset holds a few hundred bytes (``__rootdirs__`` of 100,000
# columns: about 1.5 MB); a chunk file holds one Blosc-1 chunk of at most
# 2 GB plus its headers (a vlen chunk: 2 GiB of payload, compressed, plus
# its header).  A file claiming more is refused before it is read.
MAX_META_BYTES = 64 << 20
MAX_OWN_FILE_BYTES = 256 << 20          # checksum file, commit record
MAX_INDEX_FILE_BYTES = 1 << 33          # an index segment: 2**26 rows of 64-byte values
MAX_CHUNK_FILE_BYTES = (1 << 31) + 64
MAX_VLEN_FILE_BYTES = (1 << 31) + (1 << 24)

# Folders a carray file may sit under inside a dataset: a ctable column, a
# struct field (of a struct field...), a categorical's categories.
MAX_NESTING = 16
# The categories of a categorical carray: a vlen carray in this folder.
CATEGORIES_PREFIX = "categories/"
VALIDITY_PREFIX = "valid/"          # a nullable carray's validity (kinds/nullable/meta.py)
_CHUNK = re.compile(r"data/__(0|[1-9][0-9]{0,18})\.(blp|vlen)")
_CARRAY_FILES = ("meta/sizes", "meta/storage", "meta/stats", "index/meta", ATTRS_FILE)
# Metadata files a carray may lack (its statistics, its index): a damaged one is
# not used, and the consolidated metadata leaves out one that is not text.
OPTIONAL_FILES = ("meta/stats", "index/meta")
_INDEX_SEGMENT = re.compile(r"index/__(0|[1-9][0-9]{0,18})\.idx")


def is_metadata_key(key: str) -> bool:
    """True for the small JSON files of a dataset (``meta/sizes``, ``meta/storage``,
    ``__attrs__``, ``__rootdirs__``, of the root, of a column, of the
    categories of a categorical column, or of a nullable column's validity)."""
    if key == ROOTDIRS_FILE:
        return True
    if not key.endswith(_CARRAY_FILES):
        return False
    if key in _CARRAY_FILES:
        return True
    # a column's, its categories', or a struct field's (nested folders)
    parts = key.split("/")
    return len(parts) <= MAX_NESTING + 2 and "/".join(parts[-2:]) in _CARRAY_FILES \
        or parts[-1] == ATTRS_FILE and len(parts) <= MAX_NESTING + 1


def is_derived_key(key: str) -> bool:
    """True for the files a carray's items determine (its statistics
    ``meta/stats``, its index ``index/meta`` and segments): a writer rebuilds
    one whose content it cannot check rather than carry it over."""
    tail = "/".join(key.split("/")[-2:])
    return tail in OPTIONAL_FILES or _INDEX_SEGMENT.fullmatch(tail) is not None


def is_reserved_name(name: str) -> bool:
    """True for a name the library uses itself, or a hidden/temporary name."""
    return name in RESERVED_NAMES or name.startswith(".")


def check_column_name(name, where: str | None = None) -> str:
    """A column name that is a safe, unreserved folder name inside a rootdir.

    Parameters
    ----------
    name : str
    where : str, optional
        The file the name was read from.  Given, a bad name is a
        :class:`FormatError` naming that file; otherwise a ``ValueError``
        (a name passed by the caller).

    Raises
    ------
    ValueError
        For a caller's name that is not a string, is empty, contains ``/``,
        ``\\`` or NUL, is ``.``/``..``, starts with ``.``, or is reserved
        (``__attrs__``, ``__rootdirs__``, ``bcolz_store.md5``,
        ``.bcolz_store-journal``, ``.bcolz_store.lock``).
    FormatError
        The same, for a name read from ``where``.
    """
    problem = None
    if not isinstance(name, str):
        problem = f"must be a string, found {type(name).__name__}"
    elif not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        problem = "cannot be used as a folder name"
    elif is_reserved_name(name):
        problem = "is reserved for the library's own files"
    if problem is None:
        return name
    if where is not None:
        raise FormatError(f"{where}: column name {name!r} {problem}")
    raise ValueError(f"column name {name!r} {problem}")


_IDENTIFIER = re.compile(r"^[^\d\W]\w*$", re.UNICODE)
_NAME_SPLIT = re.compile(r"^\s+|\s*,\s*|\s+$")


def validate_names(names, keyword_name="names") -> list:
    """Check that every name is a Python identifier, not a keyword, and (for
    column names) not a name the library uses itself (``__attrs__``,
    ``__rootdirs__``...).

    Parameters
    ----------
    names : iterable of str
    keyword_name : str, default "names"
        The parameter the names came in, for the message; only ``"names"``
        applies :func:`check_column_name`.

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        On a name that is not a string, not an identifier, a keyword, or reserved.
    """
    out = []
    for name in names:
        if not isinstance(name, str) or not _IDENTIFIER.match(name) or keyword.iskeyword(name):
            raise ValueError(f"column {keyword_name} must be valid Python identifiers that are "
                             f"not keywords; found {name!r}")
        if keyword_name == "names":
            check_column_name(name)
        out.append(str(name))
    return out


def split_names(text: str) -> list:
    """Split ``'a, b c'`` into ``['a', 'b', 'c']`` (namedtuple's rule)."""
    return [part for part in _NAME_SPLIT.split(str(text)) if part]


def check_key(key, where: str) -> str:
    """A relative ``/``-separated key that cannot leave its root.

    Raises
    ------
    FormatError
        For a key that is not a string, is empty or absolute, or has an empty,
        ``.`` or ``..`` component.
    """
    if not isinstance(key, str) or not key:
        raise FormatError(f"{where}: key {key!r} is not a relative path")
    parts = key.split("/")
    if key.startswith("/") or any(p in ("", ".", "..") or "\0" in p or "\\" in p
                                  for p in parts):
        raise FormatError(f"{where}: unsafe key {key!r}")
    return key


def commit_key_limit(key: str, where: str) -> int:
    """The largest size the file ``key`` may have, if a commit may write it.

    A commit writes only bcolz's files (of a carray root, a ctable root, or
    a ctable column), the checksum file and the consolidated metadata.

    Returns
    -------
    int
        Bytes.

    Raises
    ------
    FormatError
        For a key a commit never writes (an unsafe path, a reserved folder,
        a file bcolz does not know).
    """
    check_key(key, where)
    if key in (CHECKSUM_FILE, CONSOLIDATED_FILE):
        return MAX_OWN_FILE_BYTES
    if key == ROOTDIRS_FILE:
        return MAX_META_BYTES
    name = key
    # a ctable column's file, its categories', or a struct field's (nested folders)
    for _ in range(MAX_NESTING + 1):
        column, sep, rest = name.partition("/")
        if not sep or name in _CARRAY_FILES or _CHUNK.fullmatch(name) or \
                _INDEX_SEGMENT.fullmatch(name):
            break
        check_column_name(column, where)
        name = rest
    if name in _CARRAY_FILES:
        return MAX_META_BYTES
    if _CHUNK.fullmatch(name):
        return MAX_VLEN_FILE_BYTES if name.endswith(".vlen") else MAX_CHUNK_FILE_BYTES
    if _INDEX_SEGMENT.fullmatch(name):
        return MAX_INDEX_FILE_BYTES
    raise FormatError(f"{where}: {key!r:.200} is not a file a commit writes")
