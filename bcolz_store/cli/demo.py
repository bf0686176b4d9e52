"""``bcolz-store demo``: write, append, reopen and slice a table of daily price bars."""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import bcolz_store
from bcolz_store.errors import BcolzStoreError

from .common import EXIT_OK, PROG, CommandError, fmt_ratio, ratio

__all__ = ["DAYS_PER_ID", "DailyBars", "NAMES", "run_demo"]

MB = 1e6


# --- demo ---------------------------------------------------------------------

NAMES = ("id", "date", "open", "high", "low", "close", "volume")
DAYS_PER_ID = 2520          # ten years of trading days per instrument
FIRST_DAY = np.datetime64("2010-01-04", "D")
BLOCKLEN = 1 << 19          # rows generated and stored per step


class DailyBars:
    """Deterministic daily price bars, made block by block.

    Rows are sorted by instrument, then date, as in a zipline daily bundle:
    instrument ``k`` (ids from 1) holds ``DAYS_PER_ID`` consecutive business
    days.  Each close follows a geometric random walk that continues across
    blocks; open/high/low scatter around it; volume is log-normal.

    Parameters
    ----------
    seed : int, default 0
        Seed of the random generator.
    """

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.nrows = 0          # rows made so far
        self.level = 0.0        # log close of the last row made
        self.sums = {"id": 0, "volume": 0, "close": 0.0}

    def block(self, nrows: int) -> list:
        """The next ``nrows`` rows, as one numpy array per column of ``NAMES``."""
        rng = self.rng
        row = np.arange(self.nrows, self.nrows + nrows, dtype=np.int64)
        day = row % DAYS_PER_ID
        ids = (row // DAYS_PER_ID + 1).astype(np.int32)
        dates = np.busday_offset(FIRST_DAY, day, roll="forward").astype("M8[D]")
        close = np.round(np.exp(self._walk(day == 0)), 2)
        open_ = np.round(close * np.exp(rng.normal(0.0, 0.004, nrows)), 2)
        top, bottom = np.maximum(open_, close), np.minimum(open_, close)
        high = np.round(top * (1 + np.abs(rng.normal(0.0, 0.006, nrows))), 2)
        low = np.round(bottom * (1 - np.abs(rng.normal(0.0, 0.006, nrows))), 2)
        volume = rng.lognormal(12.0, 1.0, nrows).astype(np.int64)
        self.nrows += nrows
        self.sums["id"] += int(ids.sum(dtype=np.int64))
        self.sums["volume"] += int(volume.sum())
        self.sums["close"] += float(close.sum())
        return [ids, dates, open_, high, low, close, volume]

    def _walk(self, fresh: np.ndarray) -> np.ndarray:
        """Log closes: a random walk restarting where ``fresh`` is true."""
        steps = self.rng.normal(0.0002, 0.015, len(fresh))
        starts = np.flatnonzero(fresh)
        steps[starts] = np.log(self.rng.uniform(5.0, 500.0, len(starts)))
        if not fresh[0]:
            steps[0] += self.level
        total = np.cumsum(steps)
        before = np.zeros(len(starts) + 1)
        before[1:] = np.where(starts > 0, total[starts - 1], 0.0)
        level = total - before[np.cumsum(fresh)]
        self.level = float(level[-1])
        return level


def _progress(enabled: bool, total: int, desc: str):
    """A tqdm bar (auto-disabled when stderr is not a terminal), or a stand-in."""
    if enabled:
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, desc=desc, unit="row", unit_scale=True,
                        leave=False, disable=None, file=sys.stderr)
    return _NoBar()


class _NoBar:
    def update(self, n):
        pass

    def close(self):
        pass


class Report:
    """Collects and prints one line per demo step."""

    HEAD = f"{'step':<26}{'rows':>13}{'MB':>10}{'seconds':>10}{'MB/s':>10}{'rows/s':>13}{'cratio':>8}"

    def __init__(self, out):
        self.out = out
        self.steps = []

    def header(self):
        print(self.HEAD, file=self.out)
        print("-" * len(self.HEAD), file=self.out)

    def step(self, name: str, rows: int, nbytes: int, seconds: float, cratio: float | None):
        """Record and print a step; ``nbytes`` 0 means no data moved (no throughput)."""
        seconds = max(seconds, 1e-9)
        mbps = nbytes / MB / seconds if nbytes else None
        rowsps = rows / seconds if nbytes else None
        self.steps.append({"step": name, "rows": rows, "nbytes": nbytes, "seconds": seconds,
                           "MB/s": mbps, "rows/s": rowsps, "cratio": cratio})
        mbps_text = "-" if mbps is None else f"{mbps:.1f}"
        rowsps_text = "-" if rowsps is None else f"{rowsps:,.0f}"
        print(f"{name:<26}{rows:>13,}{nbytes / MB:>10.1f}{seconds:>10.3f}"
              f"{mbps_text:>10}{rowsps_text:>13}{fmt_ratio(cratio):>8}",
              file=self.out, flush=True)


def _store(ct, bars: DailyBars, nrows: int, bar, rootdir=None, expectedlen=None):
    """Make and store ``nrows`` rows block by block; return (ctable, storage seconds).

    With ``ct`` None the first block creates the ctable at ``rootdir``.
    Only the time spent in bcolz_store is counted, not the making of the data.
    """
    spent = 0.0
    done = 0
    while done < nrows:
        cols = bars.block(min(BLOCKLEN, nrows - done))
        t0 = time.perf_counter()
        if ct is None:
            ct = bcolz_store.ctable(columns=cols, names=list(NAMES), rootdir=rootdir,
                                    mode="w", expectedlen=expectedlen)
        else:
            ct.append(cols)
        spent += time.perf_counter() - t0
        done += len(cols[0])
        bar.update(len(cols[0]))
    t0 = time.perf_counter()
    ct.flush()
    return ct, spent + time.perf_counter() - t0


def _step_write(rootdir, bars, rows, extra, report, progress):
    bar = _progress(progress, rows, "write")
    try:
        ct, seconds = _store(None, bars, rows, bar, rootdir, rows + extra)
    finally:
        bar.close()
    report.step("write (create + append)", rows, ct.nbytes, seconds, ratio(ct.nbytes, ct.cbytes))
    return ct


def _step_append(rootdir, bars, extra, report, progress):
    t0 = time.perf_counter()
    ct = bcolz_store.open(rootdir, mode="a")
    opened = time.perf_counter() - t0
    nbytes0 = ct.nbytes
    bar = _progress(progress, extra, "append")
    try:
        ct, seconds = _store(ct, bars, extra, bar)
    finally:
        bar.close()
    report.step("reopen + append", extra, ct.nbytes - nbytes0, opened + seconds,
                ratio(ct.nbytes, ct.cbytes))


def _step_scan(ct, report, progress):
    """Read every column in blocks; return the sums to verify."""
    n = len(ct)
    bar = _progress(progress, n * len(NAMES), "scan")
    sums = {}
    t0 = time.perf_counter()
    try:
        for name in NAMES:
            col = ct.cols[name]
            total = 0.0 if name == "close" else 0
            for start in range(0, n, BLOCKLEN):
                block = col[start:start + BLOCKLEN]
                if name in ("id", "volume", "close"):
                    total += block.sum(dtype=np.float64 if name == "close" else np.int64).item()
                bar.update(len(block))
            sums[name] = total
    finally:
        bar.close()
    report.step("scan all columns", n, ct.nbytes, time.perf_counter() - t0,
                ratio(ct.nbytes, ct.cbytes))
    return sums


def _step_slices(ct, report, rng):
    n = len(ct)
    rowbytes = ct.dtype.itemsize
    length = min(1_000_000, n)
    start = (n - length) // 2
    t0 = time.perf_counter()
    rows = ct[start:start + length]
    report.step(f"slice {length:,} rows", len(rows), rows.nbytes, time.perf_counter() - t0,
                ratio(ct.nbytes, ct.cbytes))
    nids = max(1, n // DAYS_PER_ID)
    picks = rng.integers(0, nids, size=min(200, nids))
    got = 0
    t0 = time.perf_counter()
    for k in picks:
        history = ct[int(k) * DAYS_PER_ID:min(n, (int(k) + 1) * DAYS_PER_ID)]
        got += len(history)
    report.step(f"{len(picks)} instrument histories", got, got * rowbytes,
                time.perf_counter() - t0, ratio(ct.nbytes, ct.cbytes))


def _verify(ct, bars: DailyBars, sums: dict) -> None:
    expected = bars.sums
    problems = []
    if len(ct) != bars.nrows:
        problems.append(f"length {len(ct)} (expected {bars.nrows})")
    for key in ("id", "volume"):
        if sums[key] != expected[key]:
            problems.append(f"sum of {key} {sums[key]} (expected {expected[key]})")
    if not math.isclose(sums["close"], expected["close"], rel_tol=1e-9):
        problems.append(f"sum of close {sums['close']!r} (expected {expected['close']!r})")
    if problems:
        raise CommandError(f"{ct.rootdir}: read back differs from what was written: "
                           + "; ".join(problems))


def _disk_usage(root: str) -> tuple:
    nfiles = nbytes = 0
    for folder, _, files in os.walk(root):
        for name in files:
            nfiles += 1
            nbytes += os.path.getsize(os.path.join(folder, name))
    return nfiles, nbytes


def run_demo(rows: int = 10_000_000, directory=None, keep: bool = False,
             progress: bool = True, out=None) -> list:
    """Write, append to, reopen and slice a ctable of daily price bars.

    Parameters
    ----------
    rows : int, default 10_000_000
        Rows written in the first step; the append step adds ``rows // 10``
        more (at least 1).
    directory : str or os.PathLike, optional
        Folder in which a fresh ``bcolz-store-demo-*`` folder is made; the
        system's temporary folder by default.
    keep : bool, default False
        Keep the dataset instead of removing the demo folder at the end.
    progress : bool, default True
        Show tqdm progress bars on stderr (when tqdm is installed and stderr
        is a terminal).
    out : file, optional
        Where the report goes; ``sys.stdout`` by default.

    Returns
    -------
    list of dict
        One entry per step: ``step``, ``rows``, ``nbytes``, ``seconds``,
        ``MB/s``, ``rows/s``, ``cratio``.

    Raises
    ------
    CommandError
        When the data read back differs from the data written.
    BcolzStoreError, OSError
        When the dataset cannot be written or read.
    """
    out = out or sys.stdout
    extra = max(1, rows // 10)
    if directory is not None:
        os.makedirs(directory, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="bcolz-store-demo-", dir=directory)
    rootdir = os.path.join(workdir, "daily_bars")
    report = Report(out)
    try:
        bars = DailyBars(seed=0)
        print(f"{PROG} demo: {rows:,} daily price bars, then {extra:,} appended; "
              f"{len(NAMES)} columns {', '.join(NAMES)}", file=out)
        print(f"dataset: {rootdir}", file=out)
        report.header()
        _step_write(rootdir, bars, rows, extra, report, progress)
        _step_append(rootdir, bars, extra, report, progress)
        t0 = time.perf_counter()
        ct = bcolz_store.open(rootdir, mode="r")
        report.step("reopen (read-only)", len(ct), 0, time.perf_counter() - t0, None)
        sums = _step_scan(ct, report, progress)
        _step_slices(ct, report, np.random.default_rng(1))
        _verify(ct, bars, sums)
        _summary(ct, rootdir, out)
    finally:
        if keep:
            print(f"kept: {rootdir}", file=out)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
            print(f"removed: {workdir}", file=out)
    return report.steps


def _summary(ct, rootdir: str, out) -> None:
    ratios = ", ".join(f"{name} {fmt_ratio(ratio(ct.cols[name].nbytes, ct.cols[name].cbytes))}"
                       for name in NAMES)
    nfiles, nbytes = _disk_usage(rootdir)
    print(f"verified: {len(ct):,} rows read back; sums of id, volume and close match", file=out)
    print(f"cratio by column: {ratios}", file=out)
    print(f"total: {ct.nbytes / MB:.1f} MB in memory, {ct.cbytes / MB:.1f} MB compressed "
          f"(cratio {fmt_ratio(ratio(ct.nbytes, ct.cbytes))}); on disk {nbytes / MB:.1f} MB "
          f"in {nfiles} files", file=out)


def cmd_demo(args) -> int:
    if args.dir is not None and os.path.exists(args.dir) and not os.path.isdir(args.dir):
        raise CommandError(f"--dir {args.dir}: not a folder (the demo writes its dataset in "
                           f"a new folder inside it)")
    try:
        run_demo(args.rows, args.dir, args.keep, progress=not args.no_progress)
    except (BcolzStoreError, OSError) as err:
        raise CommandError(f"demo failed: {err}") from err
    return EXIT_OK


