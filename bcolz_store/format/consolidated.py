"""The consolidated metadata file ``bcolz_store.json``: every small metadata
file of a dataset in one object, and the generation of its last commit.

::

    {"bcolz_store": 1,
     "generation": 42,
     "checksums": "<md5 of bcolz_store.md5>",
     "rewritten_at": 40,
     "reshaped_at": 37,
     "files": {"__rootdirs__": "{\\"names\\": [\\"a\\", \\"b\\"]}\\n",
               "__attrs__": "{}\\n",
               "a/meta/sizes": "...", "a/meta/storage": "...", "a/__attrs__": "...",
               ...}}

``rewritten_at`` (optional; absent in files of earlier versions) is the
generation of the newest commit that did anything but append rows: a reader
whose state is that generation or newer knows, from this one object, that
every commit since only appended (full chunks unchanged, the leftover's first
items unchanged), however many commits that was.

``reshaped_at`` (optional too) is the generation of the newest commit that
did more than append rows, assign items or change attributes (a trim, a
resize, a column added, removed or replaced, a new dataset): a writer whose
append another writer's commits overtook rebases it on them when none of
them reshaped the dataset, however many commits ago they were.

``files`` holds the exact bytes (ASCII text) of each ``meta/sizes``,
``meta/storage``, ``meta/stats``, ``__attrs__`` and ``__rootdirs__`` of the
dataset, keyed by path; ``checksums`` the md5 of the checksum file of the same commit, so a
reader that fetches that file later can tell it belongs to the state it
loaded.  Every commit rewrites the file (after the checksum file), so on an
object store a dataset opens with one request instead of three per column
(kartothek's "O(1) calls to the remote store", seeds/003).  ``generation``
counts commits: commit ``g`` is recorded as ``.bcolz_store-journal/commit-g.json``
and is applied once this file says ``g``.  bcolz never reads this file; a
dataset changed by another tool afterwards is read from its bcolz files
(``consolidated=False``).

Pure functions: nothing here opens a file.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from ..errors import FormatError
from .layout import OPTIONAL_FILES, check_key, is_metadata_key

__all__ = ["CONSOLIDATED_VERSION", "Consolidated", "dump_consolidated", "load_consolidated"]

CONSOLIDATED_VERSION = 1
# Commit records are named with 12 digits.
MAX_GENERATION = 10 ** 12 - 1
FIELDS = {"bcolz_store", "generation", "files", "checksums", "rewritten_at",
          "reshaped_at"}


class Consolidated(NamedTuple):
    """What ``bcolz_store.json`` says (see the module docstring)."""

    generation: int
    files: dict
    checksums: str | None = None
    rewritten_at: int | None = None
    reshaped_at: int | None = None


def dump_consolidated(generation: int, files: dict, checksums: str | None = None,
                      rewritten_at: int | None = None, reshaped_at: int | None = None) -> bytes:
    """The bytes of ``bcolz_store.json`` for ``generation``, ``{key: bytes}``, the
    md5 (hex) of the checksum file of the same commit, and the generations of
    the newest commit that did anything but append and of the newest that
    reshaped the dataset (each at most ``generation``)."""
    texts = {}
    for key in sorted(files):
        try:
            texts[key] = bytes(files[key]).decode("ascii")
        except UnicodeDecodeError:
            if not key.endswith(OPTIONAL_FILES):
                raise
            # a damaged statistics or index file: left out, readers do without it
    body = {"bcolz_store": CONSOLIDATED_VERSION, "generation": int(generation), "files": texts}
    if checksums is not None:
        body["checksums"] = checksums
    if rewritten_at is not None:
        body["rewritten_at"] = int(rewritten_at)
    if reshaped_at is not None:
        body["reshaped_at"] = int(reshaped_at)
    return json.dumps(body, ensure_ascii=True, sort_keys=False).encode("ascii") + b"\n"


def _generation(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and \
        0 <= value < MAX_GENERATION


def load_consolidated(data: bytes, where: str) -> Consolidated:
    """Parse ``bcolz_store.json``.

    Returns
    -------
    Consolidated
        ``(generation, {key: bytes}, checksums md5 or None, rewritten_at or
        None, reshaped_at or None)``.

    Raises
    ------
    FormatError
        When it is not this format, or names a key that is not a metadata
        file of the dataset.
    """
    try:
        body = json.loads(bytes(data).decode("ascii"))
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise FormatError(f"{where}: not valid JSON ({err})") from err
    if not isinstance(body, dict) or body.get("bcolz_store") != CONSOLIDATED_VERSION or \
            not {"bcolz_store", "generation", "files"} <= set(body) <= FIELDS:
        raise FormatError(f"{where}: not a bcolz_store consolidated metadata file")
    generation = body.get("generation")
    files = body.get("files")
    if not _generation(generation) or not isinstance(files, dict):
        raise FormatError(f"{where}: malformed consolidated metadata")
    checksums = body.get("checksums")
    if checksums is not None and not (isinstance(checksums, str) and len(checksums) == 32 and
                                      set(checksums) <= set("0123456789abcdef")):
        raise FormatError(f"{where}: malformed checksums md5")
    marks = {}
    for name in ("rewritten_at", "reshaped_at"):
        mark = marks[name] = body.get(name)
        if mark is not None and not (_generation(mark) and mark <= generation):
            raise FormatError(f"{where}: malformed {name}")
    out = {}
    for key, text in files.items():
        check_key(key, where)
        if not is_metadata_key(key) or not isinstance(text, str):
            raise FormatError(f"{where}: {key!r:.80} is not a metadata file")
        try:
            out[key] = text.encode("ascii")
        except UnicodeEncodeError as err:
            raise FormatError(f"{where}: {key!r} is not ASCII") from err
    return Consolidated(generation, out, checksums, **marks)
