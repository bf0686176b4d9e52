"""Checking a dataset against its checksum file: :func:`verify`.

Every commit rewrites ``ROOT/bcolz_store.md5`` (md5sum format, as datadings
ships with its datasets), so a dataset can also be checked without this
library: ``cd ROOT && md5sum -c bcolz_store.md5``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .errors import DatasetNotFoundError
from .storage.journal import CHECKSUM_FILE, JOURNAL_DIR, MANIFEST, Journal, load_checksums

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
        Files whose md5 differs from the recorded one.
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
        If the checksum file itself is malformed.
    """
    root = os.fspath(rootdir)
    if not os.path.isdir(root):
        raise DatasetNotFoundError(f"{root}: no dataset here (not a directory)")
    report = VerifyReport(root)
    report.interrupted_commit = os.path.isfile(os.path.join(root, JOURNAL_DIR, MANIFEST))
    path = os.path.join(root, CHECKSUM_FILE)
    on_disk = Journal(root, readonly=True)._scan()
    if not os.path.isfile(path):
        report.no_checksums = True
        return report
    with open(path, "rb") as fh:
        recorded = load_checksums(fh.read(), path)
    for key, digest in sorted(recorded.items()):
        if key not in on_disk:
            report.missing.append(key)
        elif on_disk[key] != digest:
            report.damaged.append(key)
    report.extra = sorted(set(on_disk) - set(recorded))
    return report
