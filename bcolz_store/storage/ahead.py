"""Blobs written ahead: a file of the pending change written (and its md5
taken) on whatever thread made its content, then staged in order.

The chunk pool compresses chunks on several threads at once.  Each thread
writes the chunk file it just compressed as a blob of the writer's folder,
takes its md5 while the bytes are still in the CPU's cache, and starts its
fsync on an io thread (:func:`write_ahead`); the calling thread then stages
the blobs in chunk order (:func:`stage_ahead`).  Nothing changes in what is
committed: a blob written ahead is a blob like those :meth:`~.journal.Journal.stage`
writes, staged under its key only by :func:`stage_ahead`; one never staged
(an operation that failed between the two) is removed with the writer's
blob folder when the failed operation discards its change.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import ReadOnlyError
from ..format.layout import commit_key_limit, is_metadata_key
from .checksums import md5_parts
from .records import INLINE_MAX_BYTES, write_blob

__all__ = ["Written", "stage_ahead", "write_ahead"]


class Written(NamedTuple):
    """A file of the pending change written ahead (see :func:`write_ahead`).

    Attributes
    ----------
    key : str
        The dataset key it is the new content of.
    blob : str or None
        The blob written, or None for content staged only by
        :func:`stage_ahead` (``parts`` holds it): metadata, and on remote
        stores content small enough to travel in the commit record.
    parts : list or None
        That content, when ``blob`` is None.
    digest : str or tuple
        The md5 hex, or (md5 hex, Future of the fsync).
    size : int
        Its size in bytes.
    """

    key: str
    blob: str | None
    parts: list | None
    digest: object
    size: int


def write_ahead(journal, key: str, data, digest: str | None = None) -> Written:
    """Write ``data`` as a blob of ``journal``'s pending change for ``key``,
    on the calling thread (any thread), with its md5 (``digest`` when given)
    and its fsync started; :func:`stage_ahead` stages it.

    Parameters
    ----------
    journal : Journal
        The dataset's journal.
    key : str
        Path relative to the root.
    data : bytes-like, or a list of them (written one after the other)
    digest : str, optional
        The md5 hex of ``data``, when the caller computed it already.

    Returns
    -------
    Written

    Raises
    ------
    ReadOnlyError
        In mode 'r'.
    OSError
        When the medium refuses the write, naming the file.
    """
    if journal.readonly:
        raise ReadOnlyError(f"{journal.root}: cannot modify data because mode is 'r'")
    commit_key_limit(key, journal.root)
    parts = data if isinstance(data, list) else [data]
    size = sum(memoryview(part).nbytes for part in parts)
    if journal.store.remote and size <= INLINE_MAX_BYTES or is_metadata_key(key):
        return Written(key, None, parts, digest or md5_parts(parts), size)   # staged later
    blob = journal.new_blob(key)
    return Written(key, blob, None, write_blob(journal.store, blob, parts, journal.sync_blobs,
                                               key, digest), size)


def stage_ahead(journal, key: str, written: Written) -> None:
    """Stage ``written`` (see :func:`write_ahead`) as the new content of ``key``,
    on the thread that stages this writer's changes.

    Raises
    ------
    ValueError
        When ``written`` was written for another key, or into a blob folder
        that is no longer this writer's (a commit came between).
    ReadOnlyError
        In mode 'r'.
    OSError
        As :meth:`~.journal.Journal.stage`, for content staged only now.
    """
    if written.key != key:
        raise ValueError(f"a blob written ahead for {written.key!r} cannot be staged "
                         f"as {key!r}")
    if written.blob is None:
        journal.stage(key, written.parts, written.digest)
        return
    staging = journal.staging
    if not written.blob.startswith(staging.prefix):
        raise ValueError(f"{written.blob!r} is not in this writer's blob folder "
                         f"{staging.prefix!r}")
    if journal.readonly:
        raise ReadOnlyError(f"{journal.root}: cannot modify data because mode is 'r'")
    journal.unstage(key)
    staging.files[key] = written.blob
    staging.sums[key] = written.digest
    if isinstance(written.digest, tuple):       # its fsync: bounded like background writes
        journal.limit_inflight(written.digest[1], written.size)
