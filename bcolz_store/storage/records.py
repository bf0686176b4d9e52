"""Commit records and the blobs they name: keys, validation and bytes.

A commit record ``.bcolz_store-journal/commit-<generation:012d>.json`` is a
JSON object ``{"writer": token, "base": g, "ops": [...], "entries": [[key,
blob], ...]}``: ``writer`` is the token of the commit (the name of the
writer's blob folder for it, 16 hex digits), so that a writer can tell its
own record from another's; ``base`` the generation it was made from; ``ops``
what the commit did (``"append"``, ``"setitem"``, ``"trim"``...), so that a
writer whose generation was taken can tell whether its change still applies;
``entries`` in :func:`commit_order`, where ``blob`` is the name of a blob in
the journal (``<writer>/NNNNNN.blob``), ``null`` for a deletion, or
``{"data": base64}`` for content the record carries itself (remote stores, up
to :data:`INLINE_MAX_BYTES`).  Earlier versions wrote the entries list alone
(still read, as a record of unknown writer and operations), and before that
one record, ``manifest.json``, of the same form.  The protocol that creates and
applies records is described in :mod:`bcolz_store.storage.journal`.

Source: this library's own format (docs/durability.md); the keys a record may
name are bcolz's files (:func:`bcolz_store.format.layout.commit_key_limit`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from concurrent.futures import Future
from dataclasses import dataclass

from ..errors import FormatError
from ..format.layout import CHECKSUM_FILE, CONSOLIDATED_FILE, JOURNAL_DIR, commit_key_limit
from .base import Store
from .checksums import md5_parts

__all__ = ["BLOB_NAME", "INLINE_MAX_BYTES", "JOURNAL_PREFIX", "LEGACY_MANIFEST", "OPS",
           "RECORD_NAME", "RecordInfo", "UNSET", "blob_key", "check_manifest", "commit_order",
           "parse_record", "record_bytes", "record_key", "staged_md5", "write_blob",
           "write_error"]

JOURNAL_PREFIX = JOURNAL_DIR + "/"
# The record of an interrupted commit of earlier versions (one writer, one record).
LEGACY_MANIFEST = JOURNAL_PREFIX + "manifest.json"
RECORD_NAME = re.compile(r"commit-([0-9]{12})\.json")
BLOB_NAME = re.compile(r"(?:[0-9a-f]{16}/)?[0-9]{6,18}\.blob")
UNSET = object()          # "not loaded yet", where None is a value
# On remote stores, contents up to this size travel inside the commit record
# (written by one request at the commit) instead of as blobs of their own.
INLINE_MAX_BYTES = 1 << 16
TOKEN = re.compile(r"[0-9a-f]{16}")
#: The operations a record may name.  "append" commits only add rows; the
#: others change what is there ("setitem", "attrs": values or attributes;
#: "trim"/"resize", "addcol"/"delcol", "create": the shape or the columns).
OPS = ("append", "setitem", "attrs", "trim", "resize", "addcol", "delcol", "create", "other")


def blob_key(folder: str, number: int) -> str:
    """Key of blob ``number`` in a writer's ``folder`` (``<journal>/<writer>/``)."""
    return f"{folder}{number:06d}.blob"


def record_key(generation: int) -> str:
    """Key of the commit record of ``generation``."""
    return f"{JOURNAL_PREFIX}commit-{generation:012d}.json"


def write_error(err: OSError, key: str, path: str, root: str = "") -> OSError:
    """An OSError like ``err`` whose message names the file being written."""
    what = f"while writing {key} of {root}" if key and root else \
        f"while writing {key}" if key else "while writing"
    return type(err)(err.errno, f"{err.strerror or err} ({what})", path)


def write_blob(store: Store, blob: str, parts: list, sync: bool, key: str, digest=None):
    """Write ``parts`` as the new object ``blob``; return its md5 hex (``digest``
    when the caller computed it already), or with ``sync`` the pair (md5 hex,
    Future of the fsync started on an io thread).

    Raises
    ------
    OSError
        When the medium refuses the write; the message names ``key`` (the
        bcolz file being written) and where its blob goes.
    """
    if digest is None:
        digest = md5_parts(parts)
    try:
        if sync:
            return digest, store.put_and_sync(blob, parts)
        store.put(blob, parts)
    except OSError as err:
        raise write_error(err, key, store.path(blob), store.url) from err
    return digest


def staged_md5(digest):
    """A staged checksum: the md5 hex, once the background write (and its
    fsync) is done; raises what they raised."""
    if isinstance(digest, Future):
        digest = digest.result()
    if isinstance(digest, tuple):
        digest, synced = digest
        synced.result()
    return digest


def commit_order(key: str) -> tuple:
    """Data first, then metadata, ``meta/sizes`` next, the checksum file and
    the consolidated metadata (which marks the commit applied) last."""
    if key == CONSOLIDATED_FILE:
        return (4, key)
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
    blob a name this library gives its blobs (``[writer/]NNNNNN.blob``) or
    ``{"data": base64}`` (content carried by the record itself, on remote
    stores) no larger than the key may hold, and no key may appear twice.

    Returns
    -------
    list of [key, blob name, content bytes, or None]

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
        limit = commit_key_limit(key, where)
        if isinstance(blob, dict):
            text = blob.get("data")
            if set(blob) != {"data"} or not isinstance(text, str) or \
                    len(text) > 4 * (min(limit, INLINE_MAX_BYTES) // 3 + 2):
                raise FormatError(f"{where}: malformed content for {key!r:.80}")
            try:
                entry[1] = base64.b64decode(text.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError) as err:
                raise FormatError(f"{where}: malformed content for {key!r:.80}") from err
        elif blob is not None and not (isinstance(blob, str) and BLOB_NAME.fullmatch(blob)):
            raise FormatError(f"{where}: malformed blob name {blob!r:.80}")
        if key in seen:
            raise FormatError(f"{where}: {key!r} appears twice")
        seen.add(key)
    return entries


@dataclass(frozen=True)
class RecordInfo:
    """Who made a commit record and what it did (None: a record of an earlier
    version, which did not say)."""

    writer: str | None = None
    base: int | None = None
    ops: tuple | None = None


def parse_record(data: bytes, where: str):
    """``(entries, RecordInfo)`` of the bytes of a commit record, validated
    (:func:`check_manifest`).

    Raises
    ------
    FormatError
        When it is not JSON, not a record, or an entry is invalid.
    """
    try:
        obj = json.loads(bytes(data).decode("utf-8"))
    except (ValueError, RecursionError) as err:
        raise FormatError(f"{where}: unreadable commit record ({err})") from err
    if isinstance(obj, list):           # earlier versions: the entries alone
        return check_manifest(obj, where), RecordInfo()
    if not isinstance(obj, dict) or set(obj) != {"writer", "base", "ops", "entries"}:
        raise FormatError(f"{where}: malformed commit record (not an object with writer, "
                          f"base, ops and entries)")
    writer, base, ops = obj["writer"], obj["base"], obj["ops"]
    if not (isinstance(writer, str) and TOKEN.fullmatch(writer)):
        raise FormatError(f"{where}: malformed commit record writer {writer!r:.40}")
    if not (type(base) is int and 0 <= base < 10 ** 12):
        raise FormatError(f"{where}: malformed commit record base {base!r:.40}")
    if not (isinstance(ops, list) and len(ops) <= len(OPS) and all(op in OPS for op in ops)):
        raise FormatError(f"{where}: malformed commit record ops {ops!r:.80}")
    return check_manifest(obj["entries"], where), RecordInfo(writer, base, tuple(ops))


def record_bytes(entries: list, writer: str, base: int, ops) -> bytes:
    """The JSON of a commit record; contents carried inline are base64."""
    return json.dumps({
        "writer": writer, "base": int(base), "ops": sorted(set(ops), key=OPS.index),
        "entries": [[key, {"data": base64.b64encode(blob).decode("ascii")}
                     if isinstance(blob, bytes) else blob] for key, blob in entries],
    }).encode("utf-8")
