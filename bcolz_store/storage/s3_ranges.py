"""Ranged reads of an S3 object that hold only while it has a given md5.

The ETag of an object put in one request (not a multipart upload, not
encrypted with SSE-KMS) is the hex md5 of its content.  A ``GetObject`` with
``If-Match: "<md5>"`` and a ``Range`` therefore sends bytes of the object only
while its content is the one whose md5 the caller knows, in the same single
request: S3 answers 412 otherwise.  :func:`get_ranges_if_etag` fetches
several ranges so, nearby ones coalesced (:mod:`.ranges`), the groups
concurrently on s3fs's event loop, and checks each answer's ETag as well, so
that a server ignoring ``If-Match`` cannot hand over bytes of another
content.  The answers of S3 errors that the fsspec store tells apart are
recognised here too (:func:`precondition_failed`,
:func:`range_not_satisfiable`).
"""

from __future__ import annotations

import asyncio
import re

from .ranges import coalesce, split_groups

__all__ = ["get_ranges_if_etag", "is_md5_hex", "precondition_failed",
           "range_not_satisfiable"]

_MD5_HEX = re.compile(r"[0-9a-f]{32}")


def is_md5_hex(value) -> bool:
    """True for an md5 digest as lowercase hex (what a checksum file records)."""
    return isinstance(value, str) and _MD5_HEX.fullmatch(value) is not None


def get_ranges_if_etag(fs, bucket: str, name: str, ranges: list, etag: str):
    """The bytes of ``ranges`` of the object ``bucket/name``, read only while
    its ETag is ``etag``, or None.

    Parameters
    ----------
    fs : s3fs.S3FileSystem
        The filesystem whose client sends the requests.
    bucket, name : str
        The object.
    ranges : list of (int, int)
        Checked ranges (see :func:`~.ranges.check_ranges`), at least one.
    etag : str
        The ETag the object must have, quoted (``'"<md5 hex>"'``).

    Returns
    -------
    list of bytes, or None
        One per range, in their order (fewer bytes where the object ends
        before a range's stop); None when the object's ETag is another, or a
        range starts at or past its end (S3 answers 416 before it would tell
        whether the ETag matched).

    Raises
    ------
    FileNotFoundError
        When there is no object ``bucket/name``.
    OSError
        When a request fails otherwise (as s3fs raises it).
    """
    from fsspec.asyn import sync

    groups = coalesce(ranges)

    async def one(start: int, stop: int):
        try:
            response = await fs._call_s3("get_object", Bucket=bucket, Key=name,
                                         Range=f"bytes={start}-{stop - 1}", IfMatch=etag)
        except OSError as err:
            if isinstance(err, FileNotFoundError):
                raise
            if precondition_failed(err) or range_not_satisfiable(err):
                return None
            raise
        body = response["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        if _unquoted(response.get("ETag")) != _unquoted(etag) or len(data) > stop - start:
            return None         # a server that ignores If-Match, or Range
        return data

    async def every():
        return await asyncio.gather(*(one(start, stop) for start, stop in groups),
                                    return_exceptions=True)

    fetched = sync(fs.loop, every)
    for data in fetched:                 # a missing object first: it explains the others
        if isinstance(data, FileNotFoundError):
            raise data
    for data in fetched:
        if isinstance(data, BaseException):
            raise data
    if any(data is None for data in fetched):
        return None
    return split_groups(ranges, groups, fetched)


def _unquoted(etag) -> str:
    return str(etag or "").strip().strip('"').lower()


def _error_response(err: BaseException) -> dict:
    cause = getattr(err, "__cause__", None)
    return getattr(cause, "response", None) or {}


def precondition_failed(err: OSError) -> bool:
    """True for S3's answer 412 (a condition of the request did not hold)."""
    response = _error_response(err)
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in ("PreconditionFailed", "412") or status == 412 or \
        "PreconditionFailed" in str(err) or "Precondition" in str(err)


def range_not_satisfiable(err: BaseException) -> bool:
    """True for an answer 416 (a range starting at or past the object's end;
    S3 answers so for any range of an empty object too)."""
    if not isinstance(err, OSError):
        return False
    response = _error_response(err)
    code = str(response.get("Error", {}).get("Code", ""))
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code == "InvalidRange" or status == 416 or "not satisfiable" in str(err)
