"""What the ``bcolz-store`` commands share: exit statuses, one-line errors,
and the ``--storage-options`` of commands that take a URL."""

from __future__ import annotations

import json
import os
import sys

from bcolz_store.errors import BcolzStoreError
from bcolz_store.storage.packs import DATASET_FILES      # the names that make a dataset

__all__ = ["CommandError", "EXIT_CHANGED", "EXIT_FAILURE", "EXIT_INTERRUPTED", "EXIT_OK",
           "EXIT_UNVERIFIED", "EXIT_USAGE", "PROG", "Progress", "add_progress_options",
           "add_storage_options", "check_outside", "check_target", "describe", "fmt_ratio",
           "local_location", "ratio", "remote_reason",
           "storage_options"]

PROG = "bcolz-store"

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# ``verify`` on a dataset without a checksum file (as bcolz writes them):
# nothing could be checked, which is neither "ok" nor "damaged".
EXIT_UNVERIFIED = 3
# ``verify`` finding only files another program changed consistently (the real
# bcolz appending): nothing is damaged, but the checksums do not record them
# until ``verify --reseal`` accepts the change.
EXIT_CHANGED = 4


class CommandError(Exception):
    """A failure the command reports as one line on stderr."""

    def __init__(self, message: str, status: int = EXIT_FAILURE):
        super().__init__(message)
        self.status = status


def local_location(location) -> str | None:
    """The local path of ``location`` (a path or ``file://`` URL); None for
    another URL."""
    location = os.fspath(location)
    if location.startswith("file://"):
        return location[len("file://"):]
    return None if "://" in location else location


def check_outside(dataset, out, what: str) -> None:
    """CommandError when the file ``out`` a command writes would be ``dataset``
    itself or lie inside it (a stray file among a dataset's files is an extra
    file to ``verify`` and is packed with it).  URLs are not compared.

    Raises
    ------
    CommandError
        Naming both.
    """
    a, b = local_location(dataset), local_location(out)
    if a is None or b is None:
        return
    a, b = os.path.realpath(a), os.path.realpath(b)
    if b == a or b.startswith(a.rstrip(os.sep) + os.sep):
        raise CommandError(f"{what}: {out} is inside the dataset {dataset}; write it "
                           f"elsewhere")


def check_target(src, dst, overwrite: bool, options, what: str) -> None:
    """CommandError unless a command may write a dataset at ``dst``: nothing
    there, or a bcolz dataset and ``overwrite`` (a file or another folder is
    never replaced); and ``dst`` neither ``src``, inside it nor around it.

    Raises
    ------
    CommandError
        Saying why, naming ``dst``.
    """
    src, dst = os.fspath(src), os.fspath(dst)
    a, b = local_location(src), local_location(dst)
    if a is not None and b is not None:
        a, b = os.path.realpath(a), os.path.realpath(b)
        if a == b or b.startswith(a.rstrip(os.sep) + os.sep) or \
                a.startswith(b.rstrip(os.sep) + os.sep):
            raise CommandError(f"{what}: source {src} and destination {dst} overlap")
    if b is not None:
        if not os.path.lexists(b):
            return
        dataset = os.path.isdir(b) and not os.path.islink(b) and \
            any(os.path.isfile(os.path.join(b, name)) for name in DATASET_FILES)
    else:
        from bcolz_store.storage.urls import open_store
        try:
            store = open_store(dst, False, options)
            if store.root_state() == "missing":
                return
            dataset = any(store.exists(name) for name in DATASET_FILES)
        except (ImportError, ValueError, OSError) as err:
            reason = remote_reason(err, dst)
            raise CommandError(f"{what}: {reason}" if reason else describe(err, dst, what)) \
                from err
    if not overwrite:
        raise CommandError(f"{what}: {dst}: exists; pass --overwrite to replace it")
    if not dataset:
        raise CommandError(f"{what}: {dst}: exists and is not a bcolz dataset; not replacing it")


def describe(err: BaseException, path: str, what: str) -> str:
    """One line for an error: ``what: path: message`` (the path once)."""
    text = str(err) or type(err).__name__
    if path not in text:
        text = f"{path}: {text}"
    return f"{what}: {text}"


# botocore's and aiohttp's failures, told by name (neither is imported here).
_NO_CREDENTIALS = ("NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError",
                   "NoAuthTokenError")
_UNREACHABLE = ("EndpointConnectionError", "ConnectTimeoutError", "ClientConnectorError",
                "ServerDisconnectedError")


def remote_reason(err: BaseException, path: str) -> str | None:
    """One line saying why a dataset at a URL could not be reached, or None
    when ``err`` is not such a failure (missing credentials, an unreachable
    endpoint, access denied, a missing bucket or object)."""
    if isinstance(err, BcolzStoreError):
        return None                 # bcolz_store's own errors say what they mean
    name = type(err).__name__
    chain = [err, err.__cause__, err.__context__]
    names = {type(e).__name__ for e in chain if e is not None}
    if names & set(_NO_CREDENTIALS):
        return (f"{path}: no credentials to read it: set them in the environment (for S3 "
                f"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE) or pass "
                f"--storage-options '{{\"key\": ..., \"secret\": ...}}'")
    if names & set(_UNREACHABLE) or isinstance(err, (ConnectionError, TimeoutError)):
        return f"{path}: cannot reach the storage endpoint ({err})"
    if isinstance(err, PermissionError) or name == "AccessDenied":
        return f"{path}: access denied ({err})"
    if isinstance(err, FileNotFoundError) or name in ("NoSuchBucket", "NoSuchKey"):
        return f"{path}: no such bucket or path ({err})"
    if name == "ClientError":
        return f"{path}: the store refused the request ({err})"
    return None


def ratio(nbytes: int, cbytes: int) -> float | None:
    """``nbytes / cbytes`` (None when nothing is compressed)."""
    return nbytes / cbytes if cbytes > 0 else None


def fmt_ratio(value: float | None) -> str:
    """A compression ratio as text (``-`` when there is none)."""
    return "-" if value is None else f"{value:.2f}"


def add_storage_options(parser) -> None:
    """The ``--storage-options JSON`` argument of a command taking a URL."""
    parser.add_argument("--storage-options", metavar="JSON", default=None,
                        help="fsspec options for a URL, as JSON (for example "
                             "'{\"client_kwargs\": {\"endpoint_url\": \"http://...\"}}'); "
                             "fsspec's FSSPEC_<PROTOCOL> environment variables work too")


def storage_options(args):
    """The parsed ``--storage-options`` of ``args`` (None when not given).

    Raises
    ------
    CommandError
        When the option is not a JSON object (exit status 2).
    """
    text = getattr(args, "storage_options", None)
    if not text:
        return None
    try:
        options = json.loads(text)
    except ValueError as err:
        raise CommandError(f"--storage-options is not valid JSON ({err})", 2) from None
    if not isinstance(options, dict):
        raise CommandError("--storage-options must be a JSON object", 2)
    return options


def add_progress_options(parser) -> None:
    """``--progress`` and ``--no-progress`` of a command that may run long."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--progress", dest="progress", action="store_const", const=True,
                       default=None, help="show progress bars on stderr even when it is not a "
                                          "terminal (needs tqdm: pip install "
                                          "'bcolz_store[progress]')")
    group.add_argument("--no-progress", dest="progress", action="store_const", const=False,
                       help="no progress bars (default: shown when tqdm is installed and "
                            "stderr is a terminal)")


class Progress:
    """Progress bars on stderr for a long command, one per step, as the demo
    command shows them: tqdm's, when tqdm (the ``progress`` extra) is
    installed and stderr is a terminal, or always with ``--progress``; a
    callable ``progress(step, done, total)`` for the library functions that
    report how far they are.  A context manager: the bars close at its end.

    Parameters
    ----------
    args : argparse.Namespace
        Its ``progress``: True (``--progress``), False (``--no-progress``)
        or None (when stderr is a terminal).
    unit : str, default 'file'
        What the bars count.
    """

    def __init__(self, args, unit: str = "file"):
        wanted = getattr(args, "progress", None)
        self.unit = unit
        self._tqdm = None
        self._bars = {}
        if wanted is False or (wanted is None and not _is_terminal(sys.stderr)):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            if wanted:
                print(f"{PROG}: no progress bars: tqdm is not installed (pip install "
                      f"'bcolz_store[progress]')", file=sys.stderr)
            return
        self._tqdm = tqdm

    @property
    def enabled(self) -> bool:
        """True when bars are shown."""
        return self._tqdm is not None

    def __call__(self, step: str, done: int, total: int) -> None:
        if self._tqdm is None:
            return
        bar = self._bars.get(step)
        if bar is None:
            bar = self._bars[step] = self._tqdm(total=total, desc=step, unit=self.unit,
                                                leave=False, file=sys.stderr)
        bar.total = total
        bar.update(done - bar.n)

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
