"""The consolidated metadata file ``bcolz_store.json``: every small metadata
file of a dataset in one object, and the generation of its last commit.

::

    {"bcolz_store": 1,
     "generation": 42,
     "checksums": "<md5 of bcolz_store.md5>",
     "files": {"__rootdirs__": "{\\"names\\": [\\"a\\", \\"b\\"]}\\n",
               "__attrs__": "{}\\n",
               "a/meta/sizes": "...", "a/meta/storage": "...", "a/__attrs__": "...",
               ...}}

``files`` holds the exact bytes (ASCII text) of each ``meta/sizes``,
``meta/storage``, ``__attrs__`` and ``__rootdirs__`` of the dataset, keyed by
path; ``checksums`` the md5 of the checksum file of the same commit, so a
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

from ..errors import FormatError
from .layout import check_key, is_metadata_key

__all__ = ["CONSOLIDATED_VERSION", "dump_consolidated", "load_consolidated"]

CONSOLIDATED_VERSION = 1
# Commit records are named with 12 digits.
MAX_GENERATION = 10 ** 12 - 1


def dump_consolidated(generation: int, files: dict, checksums: str | None = None) -> bytes:
    """The bytes of ``bcolz_store.json`` for ``generation``, ``{key: bytes}`` and
    the md5 (hex) of the checksum file of the same commit."""
    body = {"bcolz_store": CONSOLIDATED_VERSION, "generation": int(generation),
            "files": {key: bytes(files[key]).decode("ascii") for key in sorted(files)}}
    if checksums is not None:
        body["checksums"] = checksums
    return json.dumps(body, ensure_ascii=True, sort_keys=False).encode("ascii") + b"\n"


def load_consolidated(data: bytes, where: str) -> tuple:
    """Parse ``bcolz_store.json`` into ``(generation, {key: bytes}, checksums md5 or None)``.

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
            not {"bcolz_store", "generation", "files"} <= set(body) <= \
            {"bcolz_store", "generation", "files", "checksums"}:
        raise FormatError(f"{where}: not a bcolz_store consolidated metadata file")
    generation = body.get("generation")
    files = body.get("files")
    if not isinstance(generation, int) or isinstance(generation, bool) or \
            not 0 <= generation < MAX_GENERATION or not isinstance(files, dict):
        raise FormatError(f"{where}: malformed consolidated metadata")
    checksums = body.get("checksums")
    if checksums is not None and not (isinstance(checksums, str) and len(checksums) == 32 and
                                      set(checksums) <= set("0123456789abcdef")):
        raise FormatError(f"{where}: malformed checksums md5")
    out = {}
    for key, text in files.items():
        check_key(key, where)
        if not is_metadata_key(key) or not isinstance(text, str):
            raise FormatError(f"{where}: {key!r:.80} is not a metadata file")
        try:
            out[key] = text.encode("ascii")
        except UnicodeEncodeError as err:
            raise FormatError(f"{where}: {key!r} is not ASCII") from err
    return generation, out, checksums
