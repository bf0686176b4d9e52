"""The ``bcolz-store`` command: inspect bcolz datasets and run a demo.

::

    bcolz-store info PATH [--json]     describe a carray or ctable rootdir
    bcolz-store verify PATH [--json]   check every file against bcolz_store.md5
    bcolz-store demo [--rows N] [--dir D] [--keep] [--no-progress]
                                       write, append, reopen and slice a table
                                       of daily price bars; print throughput

Exit status: 0 on success, 1 when a dataset is missing, is not a bcolz
dataset, cannot be read or written, or (``verify``) has a missing, extra or
damaged file, 2 on a command-line usage error, 3 when ``verify`` could check
nothing because the dataset has no checksum file, 130 when interrupted.  Errors are one line on stderr (``--traceback`` shows
the Python traceback as well).

Only the public API of :mod:`bcolz_store` is used here, so the command works
on anything ``bcolz_store.open`` can open.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import bcolz_store
from bcolz_store.errors import BcolzStoreError

__all__ = ["main", "dataset_info", "format_info", "run_demo", "verify_dataset", "format_verify"]

PROG = "bcolz-store"
MB = 1e6

EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# ``verify`` on a dataset without a checksum file (as bcolz writes them):
# nothing could be checked, which is neither "ok" nor "damaged".
EXIT_UNVERIFIED = 3


class CommandError(Exception):
    """A failure the command reports as one line on stderr."""

    def __init__(self, message: str, status: int = EXIT_FAILURE):
        super().__init__(message)
        self.status = status


# --- info ---------------------------------------------------------------------

def _cparams_dict(cp) -> dict:
    return {"clevel": int(cp.clevel), "shuffle": int(cp.shuffle),
            "cname": str(cp.cname), "quantize": int(getattr(cp, "quantize", 0))}


def _ratio(nbytes: int, cbytes: int) -> float | None:
    return nbytes / cbytes if cbytes > 0 else None


def _carray_facts(ca) -> dict:
    """Facts about one carray (a dataset or a ctable column) as plain JSON values."""
    length = int(ca.shape[0]) if len(ca.shape) else 0
    chunklen, nchunks = int(ca.chunklen), int(ca.nchunks)
    nbytes, cbytes = int(ca.nbytes), int(ca.cbytes)
    return {
        "shape": [int(n) for n in ca.shape],
        "dtype": str(ca.dtype),
        "chunklen": chunklen,
        "nchunks": nchunks,
        "leftover": length - nchunks * chunklen,
        "cparams": _cparams_dict(ca.cparams),
        "nbytes": nbytes,
        "cbytes": cbytes,
        "cratio": _ratio(nbytes, cbytes),
        "attrs": ca.attrs.getall(),
    }


def _shared(columns: list, key: str):
    """The value of ``key`` when every column has the same one, else None."""
    values = [col[key] for col in columns]
    return values[0] if values and all(v == values[0] for v in values) else None


def _ctable_facts(ct) -> dict:
    columns = [{"name": name, **_carray_facts(ct.cols[name])} for name in ct.names]
    nbytes = sum(col["nbytes"] for col in columns)
    cbytes = sum(col["cbytes"] for col in columns)
    return {
        "shape": [int(len(ct))],
        "dtype": str(ct.dtype),
        "chunklen": _shared(columns, "chunklen"),
        "nchunks": _shared(columns, "nchunks"),
        "cparams": _shared(columns, "cparams"),
        "nbytes": nbytes,
        "cbytes": cbytes,
        "cratio": _ratio(nbytes, cbytes),
        "attrs": ct.attrs.getall(),
        "names": list(ct.names),
        "columns": columns,
    }


def dataset_info(path) -> dict:
    """Describe the bcolz dataset at ``path``.

    Parameters
    ----------
    path : str or os.PathLike
        A carray or ctable rootdir.  It is opened read-only.

    Returns
    -------
    dict
        JSON-serialisable facts: ``path``, ``kind`` ('carray' or 'ctable'),
        ``shape``, ``dtype`` (``str(dtype)``), ``chunklen``, ``nchunks``
        (full chunks), ``cparams`` (dict), ``nbytes``, ``cbytes`` (bytes),
        ``cratio`` (float, None when cbytes is 0) and ``attrs``.  A carray also
        has ``leftover`` (items after the last full chunk); a ctable has
        ``names`` and ``columns``, a list with these facts per column, and
        holds ``chunklen``/``nchunks``/``cparams`` only when every column
        agrees on them (None otherwise).

    Raises
    ------
    CommandError
        When nothing exists at ``path``, or ``bcolz_store.open`` refuses it
        (not a dataset, corrupt, unreadable); the message names the path.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file or directory")
    try:
        obj = bcolz_store.open(path, mode="r")
        if isinstance(obj, bcolz_store.ctable):
            facts = {"path": path, "kind": "ctable", **_ctable_facts(obj)}
        else:
            facts = {"path": path, "kind": "carray", **_carray_facts(obj)}
    except (BcolzStoreError, OSError) as err:
        raise CommandError(_describe(err, path, "not a readable bcolz dataset")) from err
    return facts


def _describe(err: BaseException, path: str, what: str) -> str:
    """One line for an error: ``what: path: message`` (the path once)."""
    text = str(err) or type(err).__name__
    if path not in text:
        text = f"{path}: {text}"
    return f"{what}: {text}"


def _human(nbytes: int) -> str:
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.2f} {unit}"
        size /= 1024
    return f"{nbytes} B"  # pragma: no cover - the loop always returns


def _fmt_cparams(cp: dict | None) -> str:
    if cp is None:
        return "(differs by column)"
    return " ".join(f"{k}={cp[k]}" for k in ("cname", "clevel", "shuffle", "quantize"))


def _fmt_ratio(ratio: float | None) -> str:
    return "-" if ratio is None else f"{ratio:.2f}"


def format_info(facts: dict) -> str:
    """Render :func:`dataset_info`'s result as aligned text lines.

    Returns
    -------
    str
        One ``key: value`` line per fact, then a column table for a ctable.
    """
    def varies(value):
        return "(differs by column)" if value is None else value

    lines = [
        ("path", facts["path"]),
        ("kind", facts["kind"]),
        ("shape", tuple(facts["shape"])),
        ("dtype", facts["dtype"]),
        ("chunklen", varies(facts["chunklen"])),
        ("nchunks", varies(facts["nchunks"])),
    ]
    if "leftover" in facts:
        lines.append(("leftover", facts["leftover"]))
    lines += [
        ("cparams", _fmt_cparams(facts["cparams"])),
        ("nbytes", f"{facts['nbytes']} ({_human(facts['nbytes'])})"),
        ("cbytes", f"{facts['cbytes']} ({_human(facts['cbytes'])})"),
        ("cratio", _fmt_ratio(facts["cratio"])),
        ("attrs", json.dumps(facts["attrs"], sort_keys=True)),
    ]
    out = [f"{key + ':':<10} {value}" for key, value in lines]
    if facts["kind"] == "ctable":
        out.append(f"columns:   {len(facts['columns'])}")
        out.extend(_column_table(facts["columns"]))
    return "\n".join(out)


def _column_table(columns: list) -> list:
    head = ("name", "dtype", "shape", "chunklen", "nchunks", "cparams",
            "nbytes", "cbytes", "cratio", "attrs")
    rows = [head] + [
        (c["name"], c["dtype"], str(tuple(c["shape"])), str(c["chunklen"]), str(c["nchunks"]),
         _fmt_cparams(c["cparams"]), str(c["nbytes"]), str(c["cbytes"]),
         _fmt_ratio(c["cratio"]), json.dumps(c["attrs"], sort_keys=True))
        for c in columns]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip()
            for row in rows]


def _cmd_info(args) -> int:
    facts = dataset_info(args.path)
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print(format_info(facts))
    return EXIT_OK


# --- verify -------------------------------------------------------------------

PROBLEM_KINDS = ("missing", "extra", "damaged")


def verify_dataset(path) -> dict:
    """Check the files of the dataset at ``path`` against its checksum file.

    Parameters
    ----------
    path : str or os.PathLike
        A carray or ctable rootdir.  Nothing is written to it.

    Returns
    -------
    dict
        ``path``, ``ok`` (bool) and the sorted lists ``missing`` (listed in
        ``bcolz_store.md5`` but absent), ``extra`` (present but not listed)
        and ``damaged`` (content differs from its md5), as paths relative to
        the rootdir.

    Raises
    ------
    CommandError
        When nothing exists at ``path`` or it cannot be checked (not a
        dataset, unreadable checksum file); the message names the path.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise CommandError(f"{path}: no such file or directory")
    check = getattr(bcolz_store, "verify", None)
    if check is None:
        raise CommandError("this version of bcolz_store cannot verify checksums")
    try:
        report = check(path)
    except (BcolzStoreError, OSError) as err:
        raise CommandError(_describe(err, path, "cannot verify")) from err
    facts = {"path": path, "ok": bool(report.ok),
             "no_checksums": bool(getattr(report, "no_checksums", False))}
    for kind in PROBLEM_KINDS:
        facts[kind] = sorted(str(p) for p in getattr(report, kind))
    facts["reasons"] = {str(k): v for k, v in sorted(getattr(report, "reasons", {}).items())}
    return facts


def format_verify(facts: dict) -> str:
    """Render :func:`verify_dataset`'s result: one ``KIND  PATH`` line per problem, then a summary."""
    reasons = facts.get("reasons", {})
    plain = "content does not match its md5"
    lines = [f"{kind:<8}{rel}" + (f"  ({reasons[rel]})" if kind == "damaged" and
                                   reasons.get(rel, plain) != plain else "")
             for kind in PROBLEM_KINDS for rel in facts[kind]]
    if facts.get("no_checksums"):
        lines.append(f"{facts['path']}: not verified: the dataset has no checksum file "
                     f"(bcolz wrote it, or bcolz_store has not committed to it yet)")
    elif facts["ok"]:
        lines.append(f"{facts['path']}: ok")
    else:
        counts = ", ".join(f"{len(facts[k])} {k}" for k in PROBLEM_KINDS if facts[k])
        total = sum(len(facts[k]) for k in PROBLEM_KINDS)
        noun = "problem" if total == 1 else "problems"
        lines.append(f"{facts['path']}: {total} {noun} ({counts})" if total
                     else f"{facts['path']}: not ok")
    return "\n".join(lines)


def _cmd_verify(args) -> int:
    facts = verify_dataset(args.path)
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print(format_verify(facts))
    if facts.get("no_checksums"):
        return EXIT_UNVERIFIED
    return EXIT_OK if facts["ok"] else EXIT_FAILURE


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
              f"{mbps_text:>10}{rowsps_text:>13}{_fmt_ratio(cratio):>8}",
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
    report.step("write (create + append)", rows, ct.nbytes, seconds, _ratio(ct.nbytes, ct.cbytes))
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
                _ratio(ct.nbytes, ct.cbytes))


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
                _ratio(ct.nbytes, ct.cbytes))
    return sums


def _step_slices(ct, report, rng):
    n = len(ct)
    rowbytes = ct.dtype.itemsize
    length = min(1_000_000, n)
    start = (n - length) // 2
    t0 = time.perf_counter()
    rows = ct[start:start + length]
    report.step(f"slice {length:,} rows", len(rows), rows.nbytes, time.perf_counter() - t0,
                _ratio(ct.nbytes, ct.cbytes))
    nids = max(1, n // DAYS_PER_ID)
    picks = rng.integers(0, nids, size=min(200, nids))
    got = 0
    t0 = time.perf_counter()
    for k in picks:
        history = ct[int(k) * DAYS_PER_ID:min(n, (int(k) + 1) * DAYS_PER_ID)]
        got += len(history)
    report.step(f"{len(picks)} instrument histories", got, got * rowbytes,
                time.perf_counter() - t0, _ratio(ct.nbytes, ct.cbytes))


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
    ratios = ", ".join(f"{name} {_fmt_ratio(_ratio(ct.cols[name].nbytes, ct.cols[name].cbytes))}"
                       for name in NAMES)
    nfiles, nbytes = _disk_usage(rootdir)
    print(f"verified: {len(ct):,} rows read back; sums of id, volume and close match", file=out)
    print(f"cratio by column: {ratios}", file=out)
    print(f"total: {ct.nbytes / MB:.1f} MB in memory, {ct.cbytes / MB:.1f} MB compressed "
          f"(cratio {_fmt_ratio(_ratio(ct.nbytes, ct.cbytes))}); on disk {nbytes / MB:.1f} MB "
          f"in {nfiles} files", file=out)


def _cmd_demo(args) -> int:
    try:
        run_demo(args.rows, args.dir, args.keep, progress=not args.no_progress)
    except (BcolzStoreError, OSError) as err:
        raise CommandError(f"demo failed: {err}") from err
    return EXIT_OK


# --- command line -------------------------------------------------------------

def _positive_int(text: str) -> int:
    try:
        value = int(text.replace("_", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, found {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, found {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``bcolz-store``."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Inspect and verify bcolz datasets (carray/ctable rootdirs) "
                               "and run a demo.",
        epilog="Exit status: 0 success, 1 dataset missing/invalid/unreadable or (verify) "
               "damaged, 2 usage error.")
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {bcolz_store.__version__}")
    parser.add_argument("--traceback", action="store_true",
                        help="on error, show the Python traceback too")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = sub.add_parser("info", help="describe a carray or ctable rootdir",
                          description="Print kind, shape, dtype, chunklen, nchunks, cparams, "
                                      "nbytes, cbytes, cratio and attrs of a dataset "
                                      "(and of each column of a ctable).")
    info.add_argument("path", help="the dataset's rootdir")
    info.add_argument("--json", action="store_true", help="print machine-readable JSON")
    info.set_defaults(func=_cmd_info)

    verify = sub.add_parser("verify", help="check a dataset's files against bcolz_store.md5",
                            description="Compare every file of a carray or ctable rootdir with "
                                        "the checksum file bcolz_store.md5 and print each "
                                        "missing, extra or damaged file.  Exit status 0 when "
                                        "all is well, 1 otherwise.")
    verify.add_argument("path", help="the dataset's rootdir")
    verify.add_argument("--json", action="store_true", help="print machine-readable JSON")
    verify.set_defaults(func=_cmd_verify)

    demo = sub.add_parser("demo", help="write, append, reopen and slice a table of price bars",
                          description="Write a ctable of daily price bars chunk by chunk, append "
                                      "to it, reopen and slice it, and print throughput and "
                                      "compression ratio for each step.")
    demo.add_argument("--rows", type=_positive_int, default=10_000_000,
                      help="rows in the first write (default 10_000_000); 10%% more are appended")
    demo.add_argument("--dir", help="folder for the demo data (default: the system temp folder)")
    demo.add_argument("--keep", action="store_true", help="keep the dataset instead of removing it")
    demo.add_argument("--no-progress", action="store_true", help="no progress bars")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    """Run ``bcolz-store`` with ``argv`` (``sys.argv[1:]`` by default).

    Returns
    -------
    int
        The exit status: 0 success, 1 failure, 2 usage error, 130 interrupted.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:      # --help, --version, usage errors
        return stop.code if isinstance(stop.code, int) else EXIT_USAGE
    try:
        return args.func(args)
    except CommandError as err:
        return _fail(args, f"{PROG}: error: {err}", err.status)
    except KeyboardInterrupt:
        return _fail(args, f"{PROG}: interrupted", EXIT_INTERRUPTED)
    except BrokenPipeError:
        sys.stderr.close()          # output went to a closed pipe (e.g. `| head`)
        return EXIT_OK
    except Exception as err:        # a bug: still one line unless --traceback
        return _fail(args, f"{PROG}: unexpected error: {type(err).__name__}: {err} "
                           f"(rerun with --traceback for details)", EXIT_FAILURE)


def _fail(args, message: str, status: int) -> int:
    if getattr(args, "traceback", False):
        import traceback
        traceback.print_exc()
    print(" ".join(message.split()), file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
