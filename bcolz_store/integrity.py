"""Checking a dataset against its checksum file, and its chunk statistics
against its items: :func:`verify`.

Every commit rewrites ``ROOT/bcolz_store.md5`` (md5sum format, as datadings
ships with its datasets), so a dataset can also be checked without this
library: ``cd ROOT && md5sum -c bcolz_store.md5``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from .datasets.carray_files import index_problem, load_carray, stats_problem
from .datasets.foreign import foreign_change, restage_derived, stage_foreign_appends
from .format.index_meta import INDEX_META_KEY
from .errors import BcolzStoreError, DatasetNotFoundError, FormatError
from .format.stats_meta import STATS_KEY
from .format.consolidated import load_consolidated
from .format.layout import (CHECKSUM_FILE, CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES, OWN_NAMES,
                            ROOTDIRS_FILE, TEMP_PREFIX, is_metadata_key)
from .storage.checksums import load_checksums, md5_hex, read_limit
from .storage.dataset import DatasetStore
from .storage.files import describe_mode
from .storage.local import LocalStore
from .storage.urls import open_store

__all__ = ["VerifyReport", "verify"]

# Files read and checked together (fetched concurrently on remote stores).
VERIFY_BATCH = 64


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
        checked (a symlink, a FIFO, a device, an oversized file), and chunk
        statistics (``meta/stats``) that do not describe their carray's
        items (damaged, or stale: recomputed from the chunks).
    changed : list of str
        Files another program changed consistently since bcolz_store's last
        commit (the real bcolz appending: ``meta/sizes``, the chunk file
        that held the leftover, new chunk files, which decode and agree with
        ``meta/sizes``): not damage, but not what the checksums record;
        ``verify(..., reseal=True)`` accepts them (before bcolz_store writes
        to the dataset again).
    resealed : list of str
        The changed files whose checksums ``reseal=True`` committed.
    reasons : dict
        ``{path: why}`` for every damaged or changed file.
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
    changed: list = field(default_factory=list)
    resealed: list = field(default_factory=list)
    reasons: dict = field(default_factory=dict)
    no_checksums: bool = False
    interrupted_commit: bool = False

    @property
    def ok(self) -> bool:
        """True when checksums exist and every file matches, none missing or extra."""
        return not (self.missing or self.extra or self.damaged or self.changed or
                    self.no_checksums)

    def problems(self) -> list:
        """``(kind, path)`` pairs, kinds 'missing', 'extra', 'damaged', 'changed',
        'no-checksums'."""
        out = [("no-checksums", CHECKSUM_FILE)] if self.no_checksums else []
        for kind in ("missing", "damaged", "extra", "changed"):
            out += [(kind, path) for path in getattr(self, kind)]
        return out


# One of these is in every carray or ctable folder.
_DATASET_KEYS = (CHECKSUM_FILE, CONSOLIDATED_FILE, ROOTDIRS_FILE, "meta/sizes", "meta/storage")


def verify(rootdir, *, storage_options=None, reseal: bool = False,
           progress=None) -> VerifyReport:
    """Check every file of a carray or ctable against ``bcolz_store.md5``, and
    each carray's chunk statistics against its items.

    Files another program changed consistently (the real bcolz appending to
    a carray or ctable: ``meta/sizes``, the leftover's chunk file and new
    chunk files, which decode and agree with ``meta/sizes``) are reported as
    ``changed``, not damaged; ``reseal=True`` accepts them: it commits their
    checksums, and the chunk statistics and indexes of those carrays computed
    again, when nothing is missing, extra or damaged besides.

    Only plain files are read, each within the size the format allows for
    it; a symlink, FIFO, device or oversized file in the dataset is reported
    as damaged (with the reason in :attr:`VerifyReport.reasons`), never
    followed or read.  A dataset without a checksum file is reported as
    ``no_checksums``; a folder or URL is then not read at all, while every
    entry of a ``.zip`` pack is still read, so that its CRC-32 is checked,
    and an entry that cannot be read is reported as damaged.  Every
    ``meta/stats`` of a carray whose files all check out is parsed and
    compared with statistics recomputed from its chunks (each chunk is
    decompressed once more): one that does not describe them is damaged,
    with the first chunk that differs in :attr:`VerifyReport.reasons`.

    Parameters
    ----------
    rootdir : str, os.PathLike or Store
        A dataset folder, a URL (``s3://...``), or a ``.zip`` pack.
    storage_options : dict, optional
        Passed to fsspec for a URL.
    reseal : bool, default False
        Accept the ``changed`` files (see above); the report lists them in
        ``resealed`` and no longer in ``changed``.
    progress : callable, optional
        Called as ``progress(step, done, total)`` as the check goes on:
        ``step`` ``'files'`` (files read and compared with their md5) and
        ``'statistics'`` / ``'indexes'`` (carrays whose chunk statistics or
        index were computed again), ``done`` of ``total`` so far.

    Returns
    -------
    VerifyReport

    Raises
    ------
    DatasetNotFoundError
        If nothing is stored at ``rootdir``, or a file or a folder that holds
        none of a dataset's files.
    FormatError
        If the checksum file itself is malformed, is not a regular file, or
        is too large.
    ReadOnlyError
        With ``reseal=True``, on a store that cannot be written (a pack).
    """
    store = open_store(rootdir, not reseal, storage_options)
    state = store.root_state()
    if state != "folder":
        what = "a file, not a folder" if state == "other" else "the path does not exist"
        raise DatasetNotFoundError(f"{store.url}: no dataset here ({what})")
    if not any(store.exists(key) for key in _DATASET_KEYS):
        raise DatasetNotFoundError(f"{store.url}: not a bcolz dataset (a folder without "
                                   f"__rootdirs__, meta/sizes or {CHECKSUM_FILE})")
    report = VerifyReport(store.url)
    dataset = DatasetStore(store, readonly=True)
    try:
        dataset.recover()
        report.interrupted_commit = dataset.interrupted_commit
    except BcolzStoreError:
        report.interrupted_commit = True
    try:
        data = store.get(CHECKSUM_FILE, MAX_OWN_FILE_BYTES)
    except DatasetNotFoundError:
        report.no_checksums = True
        if store.self_checking:
            _check_files(store, store.list(""), None, report, progress)
            report.damaged.sort()
        return report
    recorded = load_checksums(data, store.path(CHECKSUM_FILE))
    if isinstance(store, LocalStore):
        entries = list(_local_files(store.root))
    else:
        entries = [(key, None) for key in store.list("")]
    on_store = {key for key, _problem in entries}
    wanted = [key for key, problem in entries if key in recorded and problem is None]
    for key, problem in entries:
        if key in recorded and problem is not None:
            report.damaged.append(key)
            report.reasons[key] = problem
    _check_files(store, wanted, recorded, report, progress)
    report.missing = sorted(set(recorded) - on_store)
    report.extra = sorted(on_store - set(recorded))
    _tell_changes(dataset, recorded, on_store, report)
    suspect = set(report.damaged) | set(report.missing) | set(report.extra) | \
        set(report.changed)
    problem = _check_consolidated(store, on_store, suspect)
    if problem is not None:
        report.damaged.append(CONSOLIDATED_FILE)
        report.reasons[CONSOLIDATED_FILE] = problem
    _check_stats(dataset, on_store, suspect, report, progress=progress)
    _check_stats(dataset, on_store, suspect, report, INDEX_META_KEY, index_problem, progress)
    report.damaged.sort()
    if reseal and report.changed and not (report.damaged or report.missing or report.extra):
        _reseal(store, report)
    return report


_PLAIN = "content does not match its md5"


def _tell_changes(dataset, recorded: dict, on_store: set, report: VerifyReport) -> None:
    """Move the files of each carray that another program changed
    consistently (see :func:`~.datasets.foreign.foreign_change`) from
    ``report.damaged`` and ``report.extra`` to ``report.changed``."""
    damaged = {k for k in report.damaged if report.reasons.get(k) == _PLAIN}
    extra = set(report.extra)
    for sizes in sorted(k for k in on_store if k == "meta/sizes" or k.endswith("/meta/sizes")):
        if sizes not in damaged:
            continue
        folder = sizes[:-len("meta/sizes")]
        mine = lambda keys: {k[len(folder):] for k in keys if k.startswith(folder)}  # noqa: E731
        view = dataset.sub(folder[:-1]) if folder else dataset
        consistent, why = foreign_change(view, {k[len(folder):]: v for k, v in recorded.items()
                                                if k.startswith(folder)},
                                         mine(damaged), mine(extra))
        if not consistent:
            continue
        for rel in mine(damaged) | mine(extra):
            key = folder + rel
            if not (rel == "meta/sizes" or rel.startswith("data/")) or "/" in rel[5:]:
                continue
            (report.damaged if key in damaged else report.extra).remove(key)
            report.changed.append(key)
            report.reasons[key] = why
    report.changed.sort()


def _reseal(store, report: VerifyReport) -> None:
    """Commit the checksums of ``report.changed`` (checked again, as a
    writer checks them) and the statistics and indexes of their carrays."""
    writer = DatasetStore(store)
    writer.recover()
    folders = sorted({key[:-len("meta/sizes")] for key in report.changed
                      if key.endswith("meta/sizes")})
    with writer.operation("other"):
        for folder in folders:
            view = writer.sub(folder[:-1]) if folder else writer
            stage_foreign_appends(view, load_carray(view))
            restage_derived(view)
        writer.commit()
    report.resealed, report.changed = report.changed, []


def _check_files(store, keys, recorded, report: VerifyReport, progress=None) -> None:
    """Read ``keys`` in batches and add those that cannot be read, are too
    large or differ from their md5 in ``recorded`` (when given) to
    ``report.damaged``; ``progress('files', done, total)`` after each batch."""
    for start in range(0, len(keys), VERIFY_BATCH):
        if progress is not None:
            progress("files", start, len(keys))
        batch = keys[start:start + VERIFY_BATCH]
        got = store.get_many(batch, max(read_limit(k) for k in batch))
        for key in batch:
            data = got[key]
            if isinstance(data, BcolzStoreError):
                problem = str(data)
            elif isinstance(data, Exception):
                raise data
            elif len(data) > read_limit(key):
                problem = f"holds {len(data)} bytes, more than such a file may hold"
            elif recorded is None:
                problem = None
            else:
                problem = None if md5_hex(data) == recorded[key] else \
                    "content does not match its md5"
            if problem is not None:
                report.damaged.append(key)
                report.reasons[key] = problem
    if progress is not None:
        progress("files", len(keys), len(keys))


def _check_consolidated(store, keys: set, suspect: set):
    """Why the consolidated metadata disagrees with the metadata files (None if it
    agrees, or if there is none).  Files already reported (``suspect``) are not
    compared again."""
    try:
        data = store.get(CONSOLIDATED_FILE, MAX_OWN_FILE_BYTES)
    except DatasetNotFoundError:
        return None
    except BcolzStoreError as err:
        return str(err)
    try:
        loaded = load_consolidated(data, store.path(CONSOLIDATED_FILE))
        files, checksums = loaded.files, loaded.checksums
    except BcolzStoreError as err:
        return str(err)
    if checksums is not None and CHECKSUM_FILE not in suspect:
        try:
            if md5_hex(store.get(CHECKSUM_FILE, MAX_OWN_FILE_BYTES)) != checksums:
                return f"its md5 of {CHECKSUM_FILE} differs from the file"
        except BcolzStoreError as err:
            return str(err)
    wanted = sorted(k for k in keys if is_metadata_key(k) and k not in suspect)
    listed = sorted(k for k in files if k not in suspect)
    if listed != wanted:
        return (f"lists the metadata files {listed[:6]}, the dataset holds "
                f"{wanted[:6]}")
    got = store.get_many(wanted, MAX_OWN_FILE_BYTES)
    for key in wanted:
        if got[key] != files[key]:
            return f"its copy of {key} differs from the file"
    return None


def _check_stats(dataset, keys: set, suspect: set, report: VerifyReport, name=STATS_KEY,
                 problem_of=stats_problem, progress=None) -> None:
    """Add every ``meta/stats`` (or, with ``name`` and ``problem_of``, every
    ``index/meta``) that does not describe its carray's items (damaged, or
    stale: recomputed from every chunk) to ``report.damaged``.  A carray with
    a file already reported is not read (its items are not the committed
    ones)."""
    step = "statistics" if name == STATS_KEY else "indexes"
    found = sorted(k for k in keys if k == name or k.endswith("/" + name))
    for done, key in enumerate(found):
        if progress is not None:
            progress(step, done, len(found))
        folder = key[:-len(name)]
        if any(k.startswith(folder) and k[len(folder):].startswith(("meta/", "data/"))
               for k in suspect):
            continue
        try:
            problem = problem_of(dataset.sub(folder[:-1]) if folder else dataset)
        except BcolzStoreError as err:
            problem = f"cannot be checked: {err}"
        if problem is not None:
            report.damaged.append(key)
            report.reasons[key] = problem
    if progress is not None and found:
        progress(step, len(found), len(found))


def _local_files(root: str):
    """Yield ``(key, problem)`` for every entry of a local dataset that is not
    a folder (our own files excluded); ``problem`` says why a symlink or other
    non-file cannot be checked, else None."""
    def fail(err):
        raise FormatError(f"{err.filename}: cannot be listed ({err.strerror})") from err

    for folder, dirs, files in os.walk(root, onerror=fail):
        rel = os.path.relpath(folder, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/") + "/"
        for name in [d for d in dirs if d not in OWN_NAMES]:
            if os.path.islink(os.path.join(folder, name)):
                yield rel + name, "a symlink (not followed)"
        dirs[:] = sorted(d for d in dirs if d not in OWN_NAMES
                         and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(files):
            if name in OWN_NAMES or name.startswith(TEMP_PREFIX):
                continue
            mode = os.lstat(os.path.join(folder, name)).st_mode
            yield rel + name, None if stat.S_ISREG(mode) else f"{describe_mode(mode)} (not read)"
