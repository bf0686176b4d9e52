"""Peak memory of streaming a ctable on disk into DuckDB and polars through
the Arrow C stream (``ctable.__arrow_c_stream__``).

Run ``python -m benchmarks.arrow_stream`` (``--rows`` sets the size: the
default, 2,000,000 rows, is a quick run; ``--rows 64000000`` makes the
~1 GB table of docs/performance.md; ``--out FILE.json`` keeps the figures).

The table: ``--rows`` rows of ``i`` (int64), ``price`` (float64) and
``sym`` (a categorical column of 500 symbols, int16 codes): 18 bytes a
row, written to a temporary folder.  Each consumer then runs in a child
process of its own that opens the table and:

* ``duckdb``: ``select sym, avg(price), count(*) from t group by sym``,
  DuckDB reading ``t`` (the ctable) by its replacement scan of a Python
  variable exporting ``__arrow_c_stream__``;
* ``polars``: ``pl.DataFrame(t)`` - this one *does* hold the whole table
  (a DataFrame is in memory), as the reference of what holding it costs;
* ``polars lazy``: the same aggregation as DuckDB's over the batches of
  ``pa.RecordBatchReader.from_stream(t)``, one ``pl.from_arrow(batch)``
  at a time (the partial sums and counts combined at the end);
* ``pyarrow count``: the batches of the stream, counted and dropped.

Each child reports its peak resident memory (``VmHWM`` of
``/proc/self/status``, else ``ru_maxrss``) before and after, and Arrow's
peak allocation (``pa.default_memory_pool().max_memory()``); the figure
that matters is the peak over the table's uncompressed size.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

import bcolz_store

MB = 1e6
NSYMS = 500

_CHILD = r"""
import json, os, resource, sys, time
import numpy as np
import pyarrow as pa
import bcolz_store as bcolz

def peak():
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

consumer, root = sys.argv[1], sys.argv[2]
if consumer == "duckdb":
    import duckdb
if consumer.startswith("polars"):
    import polars as pl
t = bcolz.open(root, mode="r")
before = peak()            # (after the imports: the growth is the stream's)
start = time.perf_counter()
if consumer == "duckdb":
    result = duckdb.sql("select sym, avg(price), count(*) from t group by sym").fetchall()
    check = sum(r[2] for r in result)
elif consumer == "polars":
    df = pl.DataFrame(t)
    check = df.height
elif consumer == "polars lazy":
    parts = []
    for batch in pa.RecordBatchReader.from_stream(t):
        frame = pl.from_arrow(batch).with_columns(pl.col("sym").cast(pl.String))
        parts.append(frame.group_by("sym").agg(pl.col("price").sum(), pl.len()))
    total = pl.concat(parts).group_by("sym").agg(pl.col("price").sum(), pl.col("len").sum())
    check = int(total["len"].sum())
else:
    check = sum(b.num_rows for b in pa.RecordBatchReader.from_stream(t))
seconds = time.perf_counter() - start
print(json.dumps({"consumer": consumer, "rows": int(check), "seconds": seconds,
                  "rss_before": before, "rss_peak": peak(),
                  "arrow_peak": pa.default_memory_pool().max_memory()}))
"""

CONSUMERS = ("pyarrow count", "duckdb", "polars lazy", "polars")


def build(root: str, rows: int, seed: int = 0) -> bcolz_store.ctable:
    """The table of the module's docstring, written block by block."""
    rng = np.random.default_rng(seed)
    syms = [f"S{k:03d}" for k in range(NSYMS)]
    block = 1 << 22
    t = None
    for start in range(0, rows, block):
        n = min(block, rows - start)
        i = np.arange(start, start + n, dtype=np.int64)
        price = rng.random(n) * 100
        codes = rng.integers(0, NSYMS, n)
        if t is None:
            sym = bcolz_store.carray(np.array(syms, dtype=object)[codes],
                                     dtype=bcolz_store.category(syms), expectedlen=rows)
            t = bcolz_store.ctable([i, price, sym], names=["i", "price", "sym"],
                                   rootdir=root, mode="w", expectedlen=rows)
        else:
            t.append([i, price, np.array(syms, dtype=object)[codes]])
    t.flush()
    return t


def run(consumer: str, root: str) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, consumer, root], capture_output=True,
                         text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.arrow_stream",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000, help="rows of the table")
    parser.add_argument("--out", help="write the figures to this JSON file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "t.bcolz")
        start = time.perf_counter()
        t = build(root, args.rows)
        built = time.perf_counter() - start
        nbytes = args.rows * (8 + 8 + 2)
        meta = {"rows": args.rows, "table_bytes": nbytes, "disk_bytes": t.cbytes,
                "build_seconds": built, "cpus": os.cpu_count(), "machine": platform.machine(),
                "python": platform.python_version(), "bcolz_store": bcolz_store.__version__}
        print(f"{args.rows:,} rows, {nbytes / MB:,.0f} MB uncompressed, "
              f"{t.cbytes / MB:,.0f} MB on disk, built in {built:.1f} s")
        rows = []
        for consumer in CONSUMERS:
            r = run(consumer, root)
            assert r["rows"] == args.rows, r
            r["rss_growth"] = r["rss_peak"] - r["rss_before"]
            r["growth_over_table"] = r["rss_growth"] / nbytes
            rows.append(r)
            print(f"{consumer:14s} {r['seconds']:6.2f} s  peak RSS +{r['rss_growth'] / MB:7.0f} MB "
                  f"({100 * r['growth_over_table']:5.1f}% of the table)  Arrow peak "
                  f"{r['arrow_peak'] / MB:7.0f} MB")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
