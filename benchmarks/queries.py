"""Query planning: filtered reads of a 5-column table, bcolz_store against peers.

``python -m benchmarks.queries`` (from the repository root) makes one table of
``--rows`` rows (default 20,000,000; ``--seed``), generated and written
``CHUNK`` rows at a time:

* ``ts``: datetime64[ns], sorted ascending (steps of 1 to 2,000 us);
* ``id``: int64, a random permutation of ``0..rows-1``;
* ``sym``: a categorical of 1,000 symbols ``S000..S999``, random;
* ``price``: float64, uniform in [0, 100);
* ``note``: text of 5 to 29 characters (two or three words from a vocabulary
  of 512), a vlen str column.

It is written as a bcolz_store ctable (``sym`` a ``category``, ``note``
``vlen-str``) and a Parquet file (row groups of 131,072 rows, statistics,
snappy), from which the peers load theirs (see :mod:`benchmarks.query_libs`
for what each does and which index it uses).  The queries, each returning
all columns of every matching row:

1. ``ts`` ranges (sorted column) selecting 0.01%, 1%, 10% and 50% of rows;
2. ``price`` ranges (random column), the same fractions;
3. ``id == X`` for ``--points`` random ids: the first lookup after opening the
   table ("cold": the files are in the page cache, nothing in the library's
   caches) and, after it, the median of ``--repeats`` ("warm");
4. ``sym == 'S123'`` (about 0.1% of rows);
5. ``(ts >= a) & (ts < b) & (price < 10)``: a 10% time range and a 10% price
   range (about 1% of rows).

Each query runs ``--repeats`` times per library (one library after the
other, each on its own open table); the table gives the median in seconds and
its ratio to bcolz_store's full scan.  Every library's answer is checked: the
same number of rows and the same ids as numpy over the generated columns (a
wrong answer is reported as WRONG, and listed after the table; the run exits 1
when bcolz_store's is wrong).  bcolz_store is timed
twice: ``scan`` (``defaults.query_planning = False``) and ``planned`` (planning
on, a sorted index on ``id`` and a bitmap index on ``sym``); where that API is
not there the planned column reads "n/a (not built)" and ``t.explain``'s plan,
where it exists, is recorded in the JSON for each query.

``--s3`` also runs the queries on a moto server on 127.0.0.1
(:mod:`benchmarks.query_s3`, ``--s3-rows`` rows), counting requests and bytes.
Results go to ``--out`` (a JSON file, or a folder for ``queries.json``;
default ``benchmarks/results/queries.json``) and are printed as Markdown;
``--markdown`` prints a results file again.  ``--workdir`` keeps the data
(default: a temporary folder, removed); with ``--reuse`` a workdir holding
data of the same rows and seed is not written again.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

from . import query_libs as L
from .query_table import (DATA_VERSION, Data, best, check, conditions, make_queries,
                          write_bcolz, write_parquet)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "queries.json")
LIB_KEYS = ("bcolz_store", "blosc2", "duckdb", "pyarrow")
COLUMNS = ("bcolz_store scan", "bcolz_store planned", "blosc2", "duckdb", "duckdb parquet",
           "pyarrow")


# ------------------------------------------------------------------ measuring

def _summary(values: list, rows: int, error, **extra) -> dict:
    return dict({"median": statistics.median(values), "min": min(values), "values": values,
                 "rows": rows, "ok": error is None, "error": error}, **extra)


def measure(side, queries, points, data, repeats: int, log=print) -> dict:
    """``{query key: result}`` of one library: the queries, then the point
    lookups (``point cold`` and ``point warm``, each over all ids)."""
    out_rows = {}
    side.open()
    try:
        for q in queries:
            values, error, rows, result = [], None, 0, None
            for r in range(repeats):
                result = None
                gc.collect()
                t0 = time.perf_counter()
                result = side.run(q.conds)
                values.append(time.perf_counter() - t0)
                if r == 0:
                    rows = len(side.ids(result))
                    error = check(side, result, data.expected(q.conds))
            result = None
            out_rows[q.key] = _summary(values, rows, error, plan=side.plan(q.conds))
            log(f"    {q.key:<12} {_fmt(out_rows[q.key]['median']):>9}  {rows:>10,} rows"
                f"{'  WRONG: ' + error if error else ''}")
        cold, warm, errors, plans = [], [], [], []
        for x in points:
            conds = [("id", "==", x)]
            side.close()
            side.open()
            t0 = time.perf_counter()
            result = side.run(conds)
            cold.append(time.perf_counter() - t0)
            errors.append(check(side, result, data.expected(conds)))
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                side.run(conds)
                times.append(time.perf_counter() - t0)
            warm.append(statistics.median(times))
            plans.append(side.plan(conds))
        error = next((e for e in errors if e), None)
        out_rows["point cold"] = _summary(cold, 1, error, ids=points, plan=plans[0])
        out_rows["point warm"] = _summary(warm, 1, error, ids=points, plan=plans[0])
        log(f"    {'point':<12} cold {_fmt(statistics.median(cold))}, warm "
            f"{_fmt(statistics.median(warm))}{'  WRONG: ' + error if error else ''}")
    finally:
        side.close()
    return out_rows


# ------------------------------------------------------------------ the run

def build_local(args, data: Data, work: str, log=print) -> dict:
    """Write the ctable and the Parquet file (unless ``--reuse`` finds them)."""
    manifest = os.path.join(work, "manifest.json")
    want = {"rows": data.rows, "seed": data.seed, "version": DATA_VERSION}
    if args.reuse and os.path.exists(manifest):
        with open(manifest) as fh:
            if json.load(fh) == want:
                log(f"reusing the data in {work}")
                return {"reused": True}
    for name in os.listdir(work):
        L.remove(os.path.join(work, name))
    out = {}
    t0 = time.perf_counter()
    write_bcolz(data, os.path.join(work, "table.bcolz"))
    out["bcolz_store write"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    write_parquet(data, os.path.join(work, "data.parquet"))
    out["parquet write"] = time.perf_counter() - t0
    with open(manifest, "w") as fh:
        json.dump(want, fh)
    log("  " + ", ".join(f"{k} {v:.1f} s" for k, v in out.items()))
    return out


def _bcolz_store(ctx) -> dict:
    out = {}
    for planned in (False, True):
        side = L.BcolzStore(planned, os.path.join(ctx.work, "table.bcolz"))
        ctx.versions["bcolz_store"] = side.version()
        reason = side.missing()
        if reason:
            ctx.skip(side.name, reason)
            continue
        ctx.log(f"  {side.name}")
        ctx.build[side.name] = side.prepare()
        out[side.name] = ctx.measure(side)
    return out


def _blosc2(ctx) -> dict:
    side = L.Blosc2(os.path.join(ctx.work, "table.b2d"))
    ctx.versions["blosc2"] = side.version()
    ctx.build["blosc2"] = side.build(ctx.parquet)
    ctx.log("  blosc2 (SUMMARY indexes, its default)")
    summary = ctx.measure(side)
    ctx.build["blosc2"].update(side.index_full())
    ctx.log("  blosc2 (FULL indexes)")
    return {"blosc2": best({"summary": summary, "full": ctx.measure(side)})}


def _duckdb(ctx) -> dict:
    out = {}
    for side in (L.DuckDB(ctx.parquet, os.path.join(ctx.work, "table.duckdb")),
                 L.DuckDB(ctx.parquet)):
        ctx.versions["duckdb"] = side.version()
        ctx.build[side.name] = side.build()
        ctx.log(f"  {side.name}")
        out[side.name] = ctx.measure(side)
    return out


def _pyarrow(ctx) -> dict:
    side = L.Arrow(ctx.parquet)
    ctx.versions["pyarrow"] = side.version()
    ctx.log("  pyarrow")
    return {"pyarrow": ctx.measure(side)}


#: ``--libs`` key -> (the adapter that says whether it can run, the runner)
PEERS = {"bcolz_store": (None, _bcolz_store), "blosc2": (L.Blosc2, _blosc2),
         "duckdb": (L.DuckDB, _duckdb), "pyarrow": (L.Arrow, _pyarrow)}


class _Context:
    """What the runners share: the paths, the data, what they record."""

    def __init__(self, args, work, data, queries, points, log):
        self.work, self.data, self.log = work, data, log
        self.parquet = os.path.join(work, "data.parquet")
        self.queries, self.points, self.repeats = queries, points, args.repeats
        self.build, self.missing, self.versions = {}, {}, {}

    def skip(self, name, reason):
        self.missing[name] = reason
        self.log(f"  {name}: {reason}")

    def measure(self, side) -> dict:
        return measure(side, self.queries, self.points, self.data, self.repeats, self.log)


def run_local(args, log=print) -> dict:
    t_start = time.perf_counter()
    work = args.workdir
    os.makedirs(work, exist_ok=True)
    t0 = time.perf_counter()
    data = Data(args.rows, args.seed)
    queries, points = make_queries(data, args.seed, args.points)
    log(f"{args.rows:,} rows ({time.perf_counter() - t0:.1f} s to generate); writing to {work}")
    ctx = _Context(args, work, data, queries, points, log)
    ctx.build["generate"] = time.perf_counter() - t0
    ctx.build.update(build_local(args, data, work, log))
    results = {}
    for key in args.libs:
        adapter, runner = PEERS[key]
        reason = adapter.missing() if adapter else None
        if reason:
            ctx.skip(key, reason)
            continue
        if key == "bcolz_store":
            results.update(runner(ctx))          # bcolz_store's failures are not hidden
            continue
        try:
            results.update(runner(ctx))
        except Exception as err:  # noqa: BLE001 - a failing peer is reported, not fatal
            ctx.skip(key, f"failed: {type(err).__name__}: {err}")
    build, missing, versions = ctx.build, ctx.missing, ctx.versions
    rows = []
    points_conds = [["id", "==", f"X in {points}"]]
    for key, title, conds in [(q.key, q.title, conditions(q.conds)) for q in queries] + [
            ("point cold", f"`id == X`, cold ({len(points)} ids)", points_conds),
            ("point warm", f"`id == X`, warm ({len(points)} ids)", points_conds)]:
        libs = {name: res[key] for name, res in results.items() if key in res}
        scan = libs.get("bcolz_store scan")
        for info in libs.values():
            info["ratio_to_scan"] = info["median"] / scan["median"] if scan else None
        expected = next((i["rows"] for i in libs.values()), None)
        rows.append({"key": key, "title": title, "conditions": conds, "rows": expected,
                     "libs": libs})
    return {"machine": f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()})",
            "python": sys.version.split()[0], "versions": versions, "numpy": np.__version__,
            "config": {k: v for k, v in vars(args).items() if k not in ("out", "markdown")},
            "build": build, "missing": missing, "rows": rows,
            "wall_s": time.perf_counter() - t_start, "date": time.strftime("%Y-%m-%d %H:%M")}


# ------------------------------------------------------------------ reporting

def _fmt(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def _cell(info, missing) -> str:
    if info is None:
        return missing if missing == L.NOT_BUILT else "–"
    if not info["ok"]:
        return f"**WRONG** ({info['error']})"
    text = _fmt(info["median"])
    extra = []
    if info.get("ratio_to_scan") is not None:
        extra.append(f"{info['ratio_to_scan']:.2g}×")
    if info.get("variant"):
        extra.append(info["variant"])
        extra += [f"{name} WRONG" for name, other in info["variants"].items() if not other["ok"]]
    return text + (f" ({', '.join(extra)})" if extra else "")


def markdown(result: dict) -> str:
    cfg = result["config"]
    names = [n for n in COLUMNS if n in result["missing"] or
             any(n in row["libs"] for row in result["rows"])]
    versions = ", ".join(f"{k} {v}" for k, v in result["versions"].items())
    head = (f"{cfg['rows']:,} rows (ts, id, sym, price, note); median of {cfg['repeats']} runs "
            f"(ratio to bcolz_store's scan). {versions}; {result['machine']}, {result['date']}; "
            f"whole run {result['wall_s']:.0f} s.")
    lines = [head, "",
             "| query | rows | " + " | ".join(names) + " |",
             "|---|---:|" + "---:|" * len(names)]
    if not result["rows"]:
        lines = []
    for row in result["rows"]:
        cells = [_cell(row["libs"].get(n), result["missing"].get(n)) for n in names]
        rows = "-" if row["rows"] is None else f"{row['rows']:,}"
        lines.append(f"| {row['title']} | {rows} | " + " | ".join(cells) + " |")
    from .query_s3 import left_out
    from .query_s3 import markdown as s3_markdown
    if lines:
        lines += left_out(result["missing"])
    if "s3" in result:
        lines += ["", s3_markdown(result["s3"])] if lines else [s3_markdown(result["s3"])]
    return "\n".join(lines)


def wrong(result: dict) -> list:
    """``(where, query, library, error)`` of every wrong answer."""
    parts = [("local", result["rows"]), ("S3", result.get("s3", {}).get("rows", []))]
    return [(where, row["key"], name, info["error"]) for where, rows in parts for row in rows
            for name, info in row["libs"].items() if not info["ok"]]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.queries",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=20_000_000)
    p.add_argument("--seed", type=int, default=20241127)
    p.add_argument("--repeats", type=int, default=3, help="runs of each query (median)")
    p.add_argument("--points", type=int, default=5, help="ids looked up one by one")
    p.add_argument("--libs", default=",".join(LIB_KEYS),
                   help=f"comma-separated subset of {','.join(LIB_KEYS)}")
    p.add_argument("--workdir", help="where the data is written (default: a temporary folder)")
    p.add_argument("--reuse", action="store_true",
                   help="keep the workdir's data when it is of the same rows and seed")
    p.add_argument("--s3", action="store_true", help="also run the queries on a moto S3 server")
    p.add_argument("--s3-rows", type=int, default=1_000_000,
                   help="rows of the S3 table (2,000,000 take about 11 minutes)")
    p.add_argument("--no-local", action="store_true", help="only the S3 part")
    p.add_argument("--out", default=RESULTS, help="the JSON file, or a folder for queries.json")
    p.add_argument("--markdown", action="store_true", help="print OUT as Markdown and exit")
    return p


def _out_file(out: str) -> str:
    return os.path.join(out, "queries.json") if os.path.isdir(out) or out.endswith(os.sep) \
        else out


def main(argv=None, log=print) -> int:
    args = parser().parse_args(argv)
    out = _out_file(args.out)
    if args.markdown:
        with open(out) as fh:
            print(markdown(json.load(fh)))
        return 0
    args.libs = [name.strip() for name in args.libs.split(",") if name.strip()]
    unknown = set(args.libs) - set(LIB_KEYS)
    if unknown:
        raise SystemExit(f"unknown --libs {sorted(unknown)}; choose among {LIB_KEYS}")
    own = args.workdir is None
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="bcolz-store-queries-")
    try:
        if args.no_local:
            result = {"config": vars(args).copy(), "rows": [], "missing": {}, "versions": {},
                      "build": {}, "wall_s": 0.0, "date": time.strftime("%Y-%m-%d %H:%M"),
                      "machine": f"{platform.node()} ({os.cpu_count()} cores)"}
        else:
            result = run_local(args, log)
        if args.s3:
            from .query_s3 import run_s3
            result["s3"] = run_s3(args, os.path.join(args.workdir, "s3"), log)
    finally:
        if own:
            shutil.rmtree(args.workdir, ignore_errors=True)
    if own:
        result["config"]["workdir"] = None
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as fh:
        json.dump(result, fh, indent=1, default=str)
    log(markdown(result))
    errors = wrong(result)
    for where, key, name, error in errors:
        log(f"WRONG ({where}): {name}, {key}: {error}")
    return 1 if any(name.startswith("bcolz_store") for _, _, name, _ in errors) else 0


if __name__ == "__main__":
    sys.exit(main())
