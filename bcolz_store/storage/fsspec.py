"""Any fsspec filesystem as a :class:`~.base.Store`: ``s3://``, ``gs://``,
``az://``, ``memory://``, ``http(s)://`` (read-only) and the others fsspec knows.

Keys map to ``<root>/<key>``.  Reads are bounded: a file is fetched with a
byte range that stops one byte past what it may hold, so a hostile object of
10 GB costs one small request and a :class:`FormatError`.  Several keys are
fetched concurrently with fsspec's batched ``cat_ranges``.  The commit record
is created with fsspec's exclusive write (``mode="create"``: S3's
``If-None-Match``, GCS's ``if_generation_match=0``); where a filesystem has
none, the record's existence is checked just before writing it.

fsspec and the filesystem's own package (s3fs, gcsfs, adlfs...) are optional:
``pip install 'bcolz_store[s3]'`` installs fsspec and s3fs.
"""

from __future__ import annotations

import datetime

from ..errors import (ConcurrentWriteError, DatasetNotFoundError, FormatError,
                      MissingDependencyError)
from ..format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, OWN_NAMES, ROOTDIRS_FILE,
                             TEMP_PREFIX)
from .base import Store
from .ranges import check_ranges, coalesce, split_groups
from .s3_ranges import (get_ranges_if_etag, is_md5_hex, precondition_failed,
                        range_not_satisfiable)

__all__ = ["FsspecStore"]

_READ_ONLY_PROTOCOLS = {"http", "https"}
_IN_PROCESS_PROTOCOLS = {"memory"}


def _import_fsspec():
    try:
        import fsspec
    except ImportError as err:
        raise MissingDependencyError("opening a URL needs fsspec: pip install 'bcolz_store[s3]' "
                                     "(or fsspec and the package of your filesystem)") from err
    return fsspec


def _timestamp(info: dict) -> float:
    for name in ("LastModified", "mtime", "last_modified", "updated", "created"):
        value = info.get(name)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    return 0.0


class FsspecStore(Store):
    """A dataset under a URL, through fsspec.

    Parameters
    ----------
    url : str
        ``protocol://bucket/path/to/dataset.bcolz``.
    readonly : bool, default False
        Forced for http(s).
    storage_options : dict, optional
        Passed to the fsspec filesystem (credentials, ``client_kwargs`` such
        as an ``endpoint_url``...).

    Raises
    ------
    ImportError
        When fsspec, or the package of the URL's filesystem, is not installed.
    ValueError
        For a URL fsspec does not know.
    """

    def __init__(self, url: str, readonly: bool = False, storage_options=None):
        fsspec = _import_fsspec()
        try:
            fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        except ImportError as err:
            raise MissingDependencyError(
                f"{url}: {err} (for s3://, pip install 'bcolz_store[s3]')") from err
        except ValueError as err:
            raise ValueError(f"{url}: not a URL fsspec can open ({err})") from err
        protocol = fs.protocol if isinstance(fs.protocol, str) else fs.protocol[0]
        super().__init__(url.rstrip("/"), readonly or protocol in _READ_ONLY_PROTOCOLS)
        self.fs = fs
        self.protocol = protocol
        self.base = path.rstrip("/")
        self.remote = protocol not in _IN_PROCESS_PROTOCOLS
        self.storage_options = dict(storage_options or {})
        # s3fs: single requests where fsspec's generic calls make several.
        self._s3 = protocol in ("s3", "s3a") and hasattr(fs, "call_s3")

    # ------------------------------------------------------------ naming

    def _path(self, key: str) -> str:
        self.path(key)          # refuses unsafe keys
        return f"{self.base}/{key}"

    def _prefix_path(self, prefix: str) -> str:
        """The path of a folder key (``""``: the root)."""
        prefix = prefix.rstrip("/")
        return self._path(prefix) if prefix else self.base

    def _key(self, path: str) -> str:
        path = path.rstrip("/")
        base = self.base.lstrip("/")
        stripped = path.lstrip("/")
        if not stripped.startswith(base):
            raise FormatError(f"{self.url}: listing returned {path!r}, outside the root")
        return stripped[len(base):].lstrip("/")

    # ------------------------------------------------------------ reading

    def get(self, key: str, limit: int) -> bytes:
        path = self._path(key)
        try:
            data = self.fs.cat_file(path, start=0, end=limit + 1)
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{self.path(key)}: no such file") from err
        except IsADirectoryError as err:
            raise FormatError(f"{self.path(key)}: expected a file, found a folder") from err
        except OSError as err:
            if not range_not_satisfiable(err):
                raise
            data = b""      # S3 answers 416 to a range from 0 of an empty object
        if len(data) > limit:
            raise FormatError(f"{self.path(key)}: holds more than the {limit} bytes such a "
                              f"file may hold")
        return bytes(data)

    def get_many(self, keys, limit: int) -> dict:
        """Fetch ``keys`` concurrently (fsspec's batched ranged reads)."""
        keys = list(keys)
        if len(keys) < 2:
            return super().get_many(keys, limit)
        paths = [self._path(key) for key in keys]
        got = self.fs.cat_ranges(paths, [0] * len(paths), [limit + 1] * len(paths),
                                 on_error="return")
        out = {}
        for key, data in zip(keys, got):
            if isinstance(data, FileNotFoundError):
                data = DatasetNotFoundError(f"{self.path(key)}: no such file")
            elif isinstance(data, Exception) and range_not_satisfiable(data):
                data = b""      # an empty object (see get)
            elif isinstance(data, Exception):
                pass
            elif len(data) > limit:
                data = FormatError(f"{self.path(key)}: holds more than the {limit} bytes such "
                                   f"a file may hold")
            else:
                data = bytes(data)
            out[key] = data
        return out

    def get_ranges(self, key: str, ranges) -> list:
        """The bytes of several ranges of the object ``key`` (see
        :meth:`Store.get_ranges`): ranges less than
        :data:`~.ranges.MAX_GAP` bytes apart are fetched in one request,
        the groups farther apart concurrently (fsspec's ``cat_ranges``).

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
        ValueError, DatasetNotFoundError, FormatError, OSError
            As :meth:`get_range`.
        """
        ranges = check_ranges(ranges)
        path = self._path(key)
        if not ranges:
            return []
        groups = coalesce(ranges)
        if len(groups) == 1:
            try:
                fetched = [self.fs.cat_file(path, start=groups[0][0], end=groups[0][1])]
            except Exception as err:  # sorted out below, with those of cat_ranges
                fetched = [err]
        else:
            fetched = self.fs.cat_ranges([path] * len(groups), [g[0] for g in groups],
                                         [g[1] for g in groups], on_error="return")
        for i, data in enumerate(fetched):
            if isinstance(data, BaseException):
                fetched[i] = self._range_error(key, data)
        return split_groups(ranges, groups, fetched)

    def get_ranges_if_md5(self, key: str, ranges, md5: str):
        """The bytes of several ranges of the object ``key``, read only while its
        content's md5 is ``md5`` (see :meth:`Store.get_ranges_if_md5`).

        On S3: ranged ``GetObject`` requests with ``If-Match: "<md5>"`` (the
        ETag of an object put in one request is its md5), ranges less than
        :data:`~.ranges.MAX_GAP` bytes apart in one request, the groups
        concurrently.  Other filesystems: None.

        Parameters
        ----------
        key : str
        ranges : iterable of (int, int)
            ``(start, stop)`` pairs.
        md5 : str
            The hex md5 the object's whole content must have.

        Returns
        -------
        list of bytes, or None
            One per range, in their order, as :meth:`get_ranges` returns
            them; None when the object's ETag is not ``md5`` (another content,
            or an ETag that is no md5: a multipart upload, SSE-KMS), when a
            range starts at or past the object's end, when ``md5`` is not a
            lowercase hex md5, and on filesystems other than S3.

        Raises
        ------
        ValueError
            For ranges that are not ``(start, stop)`` pairs of a range.
        DatasetNotFoundError
            When nothing is at ``key`` (S3).
        FormatError
            When ``key`` could leave the root.
        OSError
            When a request fails otherwise (as s3fs raises it).
        """
        ranges = check_ranges(ranges)
        self._path(key)                     # refuses unsafe keys
        if not self._s3 or not is_md5_hex(md5):
            return None
        if not ranges:
            return []
        bucket, name = self._s3_key(key)
        try:
            return get_ranges_if_etag(self.fs, bucket, name, ranges, f'"{md5}"')
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{self.path(key)}: no such file") from err

    def _range_error(self, key: str, err: BaseException) -> bytes:
        """What a failed ranged request means: no bytes (the range starts at
        or past the object's end: S3 answers 416), or the error to raise."""
        if isinstance(err, FileNotFoundError):
            raise DatasetNotFoundError(f"{self.path(key)}: no such file") from err
        if isinstance(err, IsADirectoryError):
            raise FormatError(f"{self.path(key)}: expected a file, found a folder") from err
        if range_not_satisfiable(err):
            return b""
        raise err

    def _s3_key(self, key: str) -> tuple:
        bucket, name, _version = self.fs.split_path(self._path(key))
        return bucket, name

    def _info(self, key: str):
        path = self._path(key)
        try:
            if self._s3:
                # one HEAD (fsspec's info() also lists, to tell a folder)
                bucket, name = self._s3_key(key)
                head = self.fs.call_s3("head_object", Bucket=bucket, Key=name)
                return {"ETag": head.get("ETag"), "LastModified": head.get("LastModified"),
                        "size": head.get("ContentLength"), "type": "file"}
            return self.fs.info(path)
        except FileNotFoundError:
            return None

    def exists(self, key: str) -> bool:
        return self._info(key) is not None

    def size(self, key: str):
        info = self._info(key)
        if info is None:
            return None
        if info.get("type") == "directory":
            raise FormatError(f"{self.path(key)}: expected a file, found a folder")
        return int(info.get("size") or 0)

    def identity(self, key: str):
        info = self._info(key)
        if info is None or info.get("type") == "directory":
            return None
        return (info.get("ETag") or info.get("etag") or info.get("md5Hash"),
                _timestamp(info), info.get("size"))

    def list(self, prefix: str = "") -> list:
        """Keys under ``prefix``, our own files and temporary files excluded."""
        out = []
        for key in self._find(prefix):
            parts = key.split("/")
            if any(part in OWN_NAMES for part in parts) or parts[-1].startswith(TEMP_PREFIX):
                continue
            out.append(key)
        return sorted(out)

    def _list_s3(self, path: str) -> dict:
        """``{path: info}`` of every object under the folder ``path``: one
        ListObjectsV2 request per thousand objects (fsspec's ``find`` adds a HEAD
        and a second listing when the folder is empty)."""
        bucket, name, _version = self.fs.split_path(path)
        params = {"Bucket": bucket, "Prefix": name.rstrip("/") + "/" if name else ""}
        found = {}
        while True:
            page = self.fs.call_s3("list_objects_v2", **params)
            for obj in page.get("Contents", []):
                if not obj["Key"].endswith("/"):          # a folder marker
                    found[f"{bucket}/{obj['Key']}"] = {
                        "size": obj.get("Size"), "LastModified": obj.get("LastModified"),
                        "ETag": obj.get("ETag"), "type": "file"}
            if not page.get("IsTruncated"):
                return found
            token = page.get("NextContinuationToken")
            if not token or token == params.get("ContinuationToken"):
                raise FormatError(f"{self.url}: the listing of {path} does not end (the store "
                                  f"answered a truncated page without a new continuation token)")
            params["ContinuationToken"] = token

    def _find(self, prefix: str, detail: bool = False):
        path = self._prefix_path(prefix)
        if self._s3:
            found = self._list_s3(path)
            if detail:
                return {self._key(p): info for p, info in found.items()}
            return [self._key(p) for p in found]
        try:
            found = self.fs.find(path, detail=detail)
        except FileNotFoundError:
            return {} if detail else []
        if detail:
            return {self._key(p): info for p, info in found.items()
                    if info.get("type") != "directory"}
        return [self._key(p) for p in found]

    def list_times(self, prefix: str) -> dict:
        return {key: _timestamp(info) for key, info in self._find(prefix, detail=True).items()}

    def root_state(self) -> str:
        """``"folder"`` when the dataset's root holds objects, else ``"missing"``."""
        for key in (CONSOLIDATED_FILE, "meta/sizes", ROOTDIRS_FILE, CHECKSUM_FILE):
            if self._info(key) is not None:
                return "folder"
        if self.protocol in _READ_ONLY_PROTOCOLS:
            return "missing"
        return "folder" if self._find("") else "missing"

    # ------------------------------------------------------------ writing

    def put(self, key: str, data) -> None:
        self._check_writable()
        payload = b"".join(data) if isinstance(data, list) else bytes(data)
        self.fs.pipe_file(self._path(key), payload)

    def put_if_absent(self, key: str, data: bytes) -> None:
        """Create ``key`` unless it exists: atomically where the filesystem has an
        exclusive write (S3 ``If-None-Match``), else after an existence check."""
        self._check_writable()
        path = self._path(key)
        try:
            self.fs.pipe_file(path, bytes(data), mode="create")
        except FileExistsError as err:
            raise ConcurrentWriteError(f"{self.path(key)}: exists already (another writer "
                                       f"committed)") from err
        except (TypeError, NotImplementedError):
            if self.exists(key):
                raise ConcurrentWriteError(f"{self.path(key)}: exists already (another "
                                           f"writer committed)") from None
            self.fs.pipe_file(path, bytes(data))

    def delete(self, key: str) -> None:
        self._check_writable()
        try:
            if self._s3:
                bucket, name = self._s3_key(key)
                self.fs.call_s3("delete_object", Bucket=bucket, Key=name)
            else:
                self.fs.rm_file(self._path(key))
        except FileNotFoundError:
            pass

    def delete_if(self, key: str, data: bytes) -> bool:
        """Remove ``key`` only while it holds ``data``: on S3 one conditional
        delete (``If-Match``), elsewhere read, compare, delete.  False also
        when a delete whose answer was lost is retried and finds the object
        gone (callers read the object again when the outcome matters)."""
        if not self._s3:
            return super().delete_if(key, data)
        self._check_writable()
        try:
            return self._s3_if_match(key, data, "delete_object", {})
        except _NoConditionalRequests:
            return super().delete_if(key, data)

    def replace_if(self, key: str, data: bytes, expected: bytes) -> bool:
        """Make ``data`` the object ``key`` only while it holds ``expected``: on
        S3 one conditional put (``If-Match``), elsewhere read, compare, put.
        True also when the put's retry was refused because the object holds
        ``data`` already (its first try took effect)."""
        if not self._s3:
            return super().replace_if(key, data, expected)
        self._check_writable()
        data = bytes(data)
        try:
            if self._s3_if_match(key, expected, "put_object", {"Body": data}):
                return True
        except _NoConditionalRequests:
            return super().replace_if(key, data, expected)
        # A put whose answer was lost is sent again by the client and answered
        # 412: the object already holds ``data``, which is what was asked.
        found = self._s3_get_with_etag(*self._s3_key(key))
        return found is not None and found[0] == data

    def _s3_if_match(self, key: str, expected: bytes, method: str, kwargs: dict) -> bool:
        """Call ``method`` on ``key`` only while it holds ``expected``; False when
        it holds something else or nothing.  The ETag of an object put in one
        request is its md5 (tried first); otherwise (server-side encryption
        with KMS) the object's own ETag is read along with its content."""
        import hashlib
        bucket, name = self._s3_key(key)
        expected = bytes(expected)
        etag = f'"{hashlib.md5(expected).hexdigest()}"'
        for attempt in range(2):
            try:
                self.fs.call_s3(method, Bucket=bucket, Key=name, IfMatch=etag, **kwargs)
                return True
            except FileNotFoundError:
                return False
            except OSError as err:
                if not precondition_failed(err):
                    raise
            except Exception as err:
                # botocore releases before S3's conditional writes refuse the
                # parameter: read, compare and act instead.
                if type(err).__name__ == "ParamValidationError":
                    raise _NoConditionalRequests from err
                raise
            if attempt:
                return False
            found = self._s3_get_with_etag(bucket, name)
            if found is None or found[0] != expected:
                return False
            etag = found[1]
        return False

    def _s3_get_with_etag(self, bucket: str, name: str):
        """``(content, ETag)`` of an S3 object in one request (None when missing)."""
        from fsspec.asyn import sync

        async def get():
            try:
                response = await self.fs._call_s3("get_object", Bucket=bucket, Key=name)
            except FileNotFoundError:
                return None
            body = response["Body"]
            try:
                data = await body.read()
            finally:
                body.close()
            return data, response["ETag"]
        return sync(self.fs.loop, get)

    def delete_many(self, keys) -> None:
        """Remove several objects (S3: one request per thousand)."""
        self._check_writable()
        keys = list(keys)
        paths = [self._path(k) for k in keys]
        if not paths:
            return
        if self._s3:
            from fsspec.asyn import sync
            for start in range(0, len(paths), 1000):
                sync(self.fs.loop, self.fs._bulk_delete, paths[start:start + 1000])
            return
        for key in keys:
            self.delete(key)

    def delete_prefix(self, prefix: str) -> None:
        self._check_writable()
        self.delete_many(self._find(prefix.rstrip("/")))

    def move(self, src: str, dst: str) -> None:
        """Copy ``src`` onto ``dst`` (server-side where the filesystem can) and
        delete ``src``.

        Raises
        ------
        DatasetNotFoundError
            When ``src`` is gone (moved already).
        """
        self.copy(src, dst)
        self.delete(src)

    def copy(self, src: str, dst: str) -> None:
        """Copy ``src`` onto ``dst``, server-side where the filesystem can.

        Raises
        ------
        DatasetNotFoundError
            When ``src`` does not exist.
        """
        self._check_writable()
        try:
            if self._s3:
                bucket, src_name = self._s3_key(src)
                dst_bucket, dst_name = self._s3_key(dst)
                self.fs.call_s3("copy_object", Bucket=dst_bucket, Key=dst_name,
                                CopySource={"Bucket": bucket, "Key": src_name})
            else:
                self.fs.copy(self._path(src), self._path(dst))
        except FileNotFoundError as err:
            raise DatasetNotFoundError(f"{self.path(src)}: no such file") from err

    def remove_root(self) -> None:
        self._check_writable()
        self.delete_prefix("")

    def portable(self):
        if self.protocol in _IN_PROCESS_PROTOCOLS:
            return None
        return (self.url, dict(self.storage_options) or None)

    def child(self, prefix: str) -> "FsspecStore":
        out = FsspecStore.__new__(FsspecStore)
        Store.__init__(out, f"{self.url}/{prefix.rstrip('/')}", self.readonly)
        out.fs, out.protocol, out.remote, out._s3 = self.fs, self.protocol, self.remote, self._s3
        out.base = self._prefix_path(prefix)
        out.storage_options = self.storage_options
        return out


class _NoConditionalRequests(Exception):
    """The installed botocore has no ``IfMatch`` on the call."""
