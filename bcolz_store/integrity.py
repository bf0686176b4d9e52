"""Checking a dataset against its checksum file: :func:`verify`.

Every commit rewrites ``ROOT/bcolz_store.md5`` (md5sum format, as datadings
ships with its datasets), so a dataset can also be checked without this
library: ``cd ROOT && md5sum -c bcolz_store.md5``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from .errors import BcolzStoreError, DatasetNotFoundError, FormatError
from .format.layout import CHECKSUM_FILE, JOURNAL_DIR, MAX_OWN_FILE_BYTES, OWN_NAMES, TEMP_PREFIX
from .storage.files import describe_mode, read_regular
from .storage.journal import MANIFEST, load_checksums, md5_hex, read_limit

__all__ = ["VerifyReport", "verify"]


@dataclass
class VerifyReport:
    """What :func:`verify` found; paths are relative to ``root``.

    Attributes
    ----------
    root : str
    missing : list of str
        Files the checksum file lists that are not there.
    extra : list of str
        Files in the dataset that the checksum file does not list (our own
        checksum file, journal and lock are not counted).
    damaged : list of str
        Files whose md5 differs from the recorded one, or that cannot be
        checked (a symlink, a FIFO, a device, an oversized file).
    reasons : dict
        ``{path: why}`` for every damaged file.
    no_checksums : bool
        The dataset has no checksum file (bcolz wrote it, or it was never
        changed by bcolz_store); nothing could be checked.
    interrupted_commit : bool
        A writer died during a commit; the next writer to open it finishes it.
    """

    root: str
    missing: list = field(default_factory=list)
    extra: list = field(default_factory=list)
    damaged: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)
    no_checksums: bool = False
    interrupted_commit: bool = False

    @property
    def ok(self) -> bool:
        """True when checksums exist and every file matches, none missing or extra."""
        return not (self.missing or self.extra or self.damaged or self.no_checksums)

    def problems(self) -> list:
        """``(kind, path)`` pairs, kinds 'missing', 'extra', 'damaged', 'no-checksums'."""
        out = [("no-checksums", CHECKSUM_FILE)] if self.no_checksums else []
        for kind in ("missing", "damaged", "extra"):
            out += [(kind, path) for path in getattr(self, kind)]
        return out


def verify(rootdir) -> VerifyReport:
    """Check every file of a carray or ctable rootdir against ``bcolz_store.md5``.

    Only regular files are read, each within the size the format allows for
    it; a symlink, FIFO, device or oversized file in the dataset is reported
    as damaged (with the reason in :attr:`VerifyReport.reasons`), never
    followed or read.  A dataset without a checksum file is not read at all
    (``no_checksums``).

    Parameters
    ----------
    rootdir : str or os.PathLike

    Returns
    -------
    VerifyReport

    Raises
    ------
    DatasetNotFoundError
        If ``rootdir`` is not a directory.
    FormatError
        If the checksum file itself is malformed, is not a regular file, or
        is too large.
    """
    root = os.fspath(rootdir)
    if not os.path.isdir(root):
        raise DatasetNotFoundError(f"{root}: no dataset here (not a directory)")
    report = VerifyReport(root)
    report.interrupted_commit = os.path.lexists(os.path.join(root, JOURNAL_DIR, MANIFEST))
    try:
        data = read_regular(os.path.join(root, CHECKSUM_FILE), MAX_OWN_FILE_BYTES)
    except DatasetNotFoundError:
        report.no_checksums = True
        return report
    recorded = load_checksums(data, os.path.join(root, CHECKSUM_FILE))
    on_disk = set()
    for key, path, problem in _files(root):
        on_disk.add(key)
        if key not in recorded:
            continue
        if problem is None:
            try:
                problem = None if md5_hex(read_regular(path, read_limit(key))) == \
                    recorded[key] else "content does not match its md5"
            except BcolzStoreError as err:
                problem = str(err)
        if problem is not None:
            report.damaged.append(key)
            report.reasons[key] = problem
    report.missing = sorted(set(recorded) - on_disk)
    report.extra = sorted(on_disk - set(recorded))
    report.damaged.sort()
    return report


def _files(root: str):
    """Yield ``(key, path, problem)`` for every entry of the dataset that is
    not a folder (our own files excluded); ``problem`` says why a symlink or
    other non-file cannot be checked, else None."""
    def fail(err):
        raise FormatError(f"{err.filename}: cannot be listed ({err.strerror})") from err

    for folder, dirs, files in os.walk(root, onerror=fail):
        rel = os.path.relpath(folder, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in [d for d in dirs if d not in OWN_NAMES]:
            if os.path.islink(os.path.join(folder, name)):
                yield rel + name, os.path.join(folder, name), "a symlink (not followed)"
        dirs[:] = sorted(d for d in dirs if d not in OWN_NAMES
                         and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            if name in OWN_NAMES or name.startswith(TEMP_PREFIX):
                continue
            path = os.path.join(folder, name)
            mode = os.lstat(path).st_mode
            problem = None if stat.S_ISREG(mode) else f"{describe_mode(mode)} (not read)"
            yield rel + name, path, problem
