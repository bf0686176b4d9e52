"""Column names and the folders that hold them.

Any ``str`` may name a ctable column (or a field of a struct column).  A
name that is a *plain* name (a Python identifier that is not a keyword, not
a name the library reserves, not of the form of a made-up folder name, and
short enough for every file system) is stored as bcolz stores it: in the
folder of that name, ``__rootdirs__`` = ``{"names": [...]}``, byte for byte
what bcolz 1.13 writes.  Any other name gets a made-up folder name
(``__c<N>_<ascii>``: ASCII, at most 48 characters, unique in the table
without regard to case), and ``__rootdirs__`` records it in one more key::

    {"names": ["id", "a b", "x.y"], "dirs": {"a b": "__c0_a_b", "x.y": "__c1_x_y"}}

A name whose case-folded form is that of an earlier column's folder gets a
made-up folder too, so that a table is the same on case-insensitive file
systems.  The real bcolz ignores ``dirs``: it looks for a folder named after
the column and fails (``FileNotFoundError`` on ``ROOT/a b/meta/sizes``), so
such a table is one only this library reads.

Source: this library's own format (docs/format.md, "Column names"), inside
bcolz format v1.0's folder layout (seeds/001).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import json
import keyword
import re
import unicodedata

from ..errors import FormatError
from .layout import check_column_name, is_reserved_name

__all__ = ["DIRS_KEY", "MAX_PLAIN_BYTES", "assign_folders", "check_name", "dump_names",
           "is_plain_name", "load_names", "made_folder"]

DIRS_KEY = "dirs"
# The longest name (UTF-8 bytes) kept as its own folder; longer ones are made up.
MAX_PLAIN_BYTES = 120
_MADE = re.compile(r"__[cf]\d+_", re.ASCII)
_MAX_TAIL = 40


def check_name(name, what: str = "column") -> str:
    """``name`` when it is a ``str`` (any str names a column).

    Raises
    ------
    ValueError
        When ``name`` is not a str.
    """
    if not isinstance(name, str):
        raise ValueError(f"{what} names must be str, found {type(name).__name__} {name!r:.80}")
    return name


def is_plain_name(name: str) -> bool:
    """Whether ``name`` is stored in the folder of its own name (bcolz's layout)."""
    return (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)
            and not is_reserved_name(name) and not _MADE.match(name)
            and len(name.encode("utf-8", "surrogatepass")) <= MAX_PLAIN_BYTES
            and unicodedata.is_normalized("NFC", name))


def made_folder(name: str, n: int, prefix: str = "c") -> str:
    """The made-up folder ``__<prefix><n>_<ascii>`` of ``name``: its ASCII
    letters and digits (others as ``_``), at most 40 of them."""
    tail = "".join(c if c.isascii() and c.isalnum() else "_" for c in name[:_MAX_TAIL])
    return f"__{prefix}{n}_{tail}"


def _key(folder: str) -> str:
    return folder.casefold()


def assign_folders(names, dirs: dict | None = None, prefix: str = "c",
                   reserved: tuple = ()) -> dict:
    """The folder of every name: ``{name: folder}`` of those whose folder is
    not the name itself (the ``dirs`` entry).

    Parameters
    ----------
    names : list of str
        Every name, in order, old and new.
    dirs : dict, optional
        The folders already given (kept as they are); a name neither in
        ``dirs`` nor among ``names`` before is new.
    prefix : str, default "c"
        ``c`` for columns, ``f`` for struct fields.
    reserved : tuple of str
        More names that are never their own folder.

    Raises
    ------
    ValueError
        A name that is not a str, or a repeated name.
    """
    dirs = dict(dirs or {})
    seen = set()
    for name in names:
        check_name(name)
        if name in seen:
            raise ValueError(f"column names must be unique: {name!r} appears twice")
        seen.add(name)
    def plain(name):
        return is_plain_name(name) and name not in reserved

    taken = {_key(dirs.get(n, n)) for n in names if n in dirs or plain(n)}
    out, used = {}, set()
    n = 0
    for name in names:
        if name in dirs:
            folder = dirs[name]
        elif plain(name) and _key(name) not in used:
            folder = name
        else:
            while True:
                folder = made_folder(name, n, prefix)
                n += 1
                if _key(folder) not in taken and _key(folder) not in used:
                    break
        used.add(_key(folder))
        if folder != name:
            out[name] = folder
    return {k: out[k] for k in names if k in out}


def dump_names(names, dirs: dict) -> bytes:
    """``__rootdirs__``: ``{"names": [...]}`` exactly as bcolz 1.13 writes it
    when every column is in the folder of its name, else with ``dirs``."""
    obj = {"names": list(names)}
    if dirs:
        obj[DIRS_KEY] = {name: dirs[name] for name in names if name in dirs}
    return json.dumps(obj, ensure_ascii=True).encode("ascii") + b"\n"


def load_names(obj, where: str = "__rootdirs__") -> tuple:
    """``(names, dirs)`` of a parsed ``__rootdirs__`` (or a struct's field list).

    Raises
    ------
    FormatError
        Names that are not unique strs, ``dirs`` not an object of made-up
        folders of listed names, a name without a made-up folder that is
        not a safe folder name, or two columns in one folder.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("names"), list):
        raise FormatError(f"{where}: expected an object with a list of names")
    names = obj["names"]
    dirs = obj.get(DIRS_KEY, {})
    if not isinstance(dirs, dict):
        raise FormatError(f"{where}: '{DIRS_KEY}' must be an object")
    seen = set()
    for name in names:
        if not isinstance(name, str):
            raise FormatError(f"{where}: column name {name!r:.80} is not a string")
        if name in seen:
            raise FormatError(f"{where}: column name {name!r:.80} appears twice")
        seen.add(name)
    folders = set()
    for name in names:
        folder = dirs.get(name, name)
        if name in dirs and (not isinstance(folder, str) or not _MADE.match(folder)
                             or not folder.isascii()):
            raise FormatError(f"{where}: the folder of column {name!r:.80} is "
                              f"{folder!r:.80}, not a made-up folder name")
        check_column_name(folder, where)
        if folder in folders:
            raise FormatError(f"{where}: two columns in the folder {folder!r:.80}")
        folders.add(folder)
    extra = set(dirs) - seen
    if extra:
        raise FormatError(f"{where}: '{DIRS_KEY}' names {sorted(extra)[0]!r:.80}, which is "
                          f"not a column")
    return list(names), {k: dirs[k] for k in names if k in dirs}
