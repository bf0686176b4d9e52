"""Column kinds beyond bcolz's fixed dtypes: bcolz_store vs Parquet (zstd) and Lance.

Run ``python -m benchmarks.kinds`` (``--quick`` for a smoke run, ``--out
FILE.json`` to keep the figures, ``--kinds a,b`` for a subset, ``--profile
KIND:MEASURE`` to see where one cell's time goes).  Each kind is a column of
``--rows`` rows (default 2,000,000; about 10% nulls where the kind has nulls),
built once as a pyarrow Array from a fixed seed:

* ``vlen-str``: ``string``, words of 0..40 characters;
* ``category``: ``dictionary<int16, string>`` of 1,000 symbols;
* ``int64-nullable``: ``int64``;
* ``decimal``: ``decimal128(12, 2)``;
* ``list-int32``: ``list<int32>`` of 0..8 elements (some lists null);
* ``struct``: ``struct<a: int32, b: string>`` (a nullable field of each);
* ``map``: ``map<string, int64>`` of 0..4 entries (null values too);
* ``fixed-binary``: ``fixed_size_binary(16)`` (random bytes).

Measures, each contender's time the median of ``--repeat`` runs (default 3),
every contender in turn in each round so that all see the same load; the
files are in a temporary folder, in the page cache (just written):

* ``write-arrow``: the pyarrow Array written: ``bcolz_store.carray(arr,
  rootdir=p, mode="w").flush()``; ``pq.write_table(pa.table({"c": arr}), path,
  compression="zstd")``; ``lance.write_dataset(..., mode="overwrite")``;
* ``read-arrow``: a fresh open read whole to Arrow: bcolz_store through the
  carray's Arrow C stream (``pa.RecordBatchReader.from_stream(open(p))``, a
  stream of one-column batches, ``read_all().column(0)``: a ChunkedArray);
  ``pq.read_table``; ``lance.dataset(path).to_table()``;
* ``write-python``: the same data as Python objects (``arr.to_pylist()``,
  made outside the timed part): ``bcolz_store.carray(objs, dtype=<the kind's
  type>, rootdir=p, mode="w")``; ``pa.array(objs, type=arr.type)`` then the
  Parquet (or Lance) write;
* ``read-python``: a fresh open read whole to numpy: ``open(p)[:]`` gives a
  ``StringDType`` array (vlen, category), a ``MaskedArray`` (int64), an object
  array of ``Decimal``, int32 arrays, dicts and lists of ``(key, value)``
  tuples (decimal, list, struct, map), None for a null; Parquet and Lance:
  ``table.column("c").to_numpy(zero_copy_only=False)`` (a dictionary column
  cast to its values first: pyarrow's ``to_numpy`` of one puts a value, not
  None, where a row is null), pyarrow's objects
  (an object array of str, Decimal, arrays, dicts, lists of tuples; a float64
  array with NaN for the nullable int64).

Then two whole-table measures:

* ``table:read-arrow``: a ctable of every kind bcolz_store takes from Arrow
  plus a float64 column, read whole through its Arrow C stream
  (``pa.RecordBatchReader.from_stream(open(root)).read_all()``) vs
  ``pq.read_table`` of the same table as one Parquet file vs Lance's
  ``to_table()``;
* ``query:numpy`` and ``query:arrow``: a table of ``--rows`` rows of five
  columns (a sorted ``timestamp[ns]``, a random int64, a categorical of 1,000
  symbols, a float64, text of 0..40 characters); the rows where the symbol is
  ``'S0042'``, every column, from a fresh open: bcolz_store
  ``fetchwhere("sym == 'S0042'", out_flavor="numpy")`` (a structured array) and
  ``pa.table(fetchwhere(...))`` (an in-memory ctable's Arrow stream), vs
  DuckDB over the Parquet file (``duckdb.sql("select * from read_parquet(..)
  where sym = 'S0042'").arrow()``, read whole) and Lance's
  ``to_table(filter="sym = 'S0042'")``.

Every result is checked once against the source data outside the timed runs
(equal values, nulls in place).  A contender that refuses a kind is recorded
as ``refused`` with its error.  The ratio is bcolz_store / Parquet (DuckDB over
Parquet for the queries); targets: write-arrow <= 1.0, read-arrow <= 1.0,
write-python <= 1.2, read-python <= 1.0, the whole table <= 1.0, the query
<= 1.0.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

import bcolz_store

os.environ.setdefault("LANCE_LOG", "error")     # (Lance logs a warning for each new dataset)

KINDS = ("vlen-str", "category", "int64-nullable", "decimal", "list-int32", "struct", "map",
         "fixed-binary")
MEASURES = ("write-arrow", "read-arrow", "write-python", "read-python")
TARGETS = {"write-arrow": 1.0, "read-arrow": 1.0, "write-python": 1.2, "read-python": 1.0,
           "table:read-arrow": 1.0, "query:numpy": 1.0, "query:arrow": 1.0}
CONTENDERS = ("bcolz_store", "parquet", "lance")
SYMBOLS = [f"S{i:04d}" for i in range(1000)]
QUERY = "S0042"
NULLS = 0.1


# --------------------------------------------------------------------------- data

def _mask(rng, n: int) -> np.ndarray:
    return rng.random(n) < NULLS


def _offsets(lengths: np.ndarray) -> np.ndarray:
    return np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)


def _words(rng, n: int, nulls: bool = True):
    """``n`` strings of lowercase words and spaces, 0..40 characters."""
    import pyarrow as pa
    lengths = rng.integers(0, 41, n)
    offsets = _offsets(lengths)
    letters = np.frombuffer(b"etaoinshrdlucmfwypvbgkjqxz     ", dtype=np.uint8)
    data = rng.choice(letters, int(offsets[-1])).astype(np.uint8)
    arr = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                 pa.py_buffer(data.tobytes())])
    return _with_nulls(arr, _mask(rng, n)) if nulls else arr


def _with_nulls(arr, mask: np.ndarray):
    import pyarrow as pa
    import pyarrow.compute as pc
    return pc.if_else(pa.array(mask), pa.scalar(None, arr.type), arr)


def _category(rng, n: int):
    import pyarrow as pa
    codes = rng.integers(0, len(SYMBOLS), n).astype(np.int16)
    return pa.DictionaryArray.from_arrays(pa.array(codes, mask=_mask(rng, n)),
                                          pa.array(SYMBOLS))


def make_kind(kind: str, n: int, seed: int = 0):
    """The pyarrow Array of ``kind`` (``n`` rows, from seed ``seed``)."""
    import pyarrow as pa
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    if kind == "vlen-str":
        return _words(rng, n)
    if kind == "category":
        return _category(rng, n)
    if kind == "int64-nullable":
        return pa.array(rng.integers(-10**12, 10**12, n), mask=_mask(rng, n))
    if kind == "decimal":
        unscaled = rng.integers(-10**11, 10**11, n)
        words = np.empty((n, 2), dtype=np.int64)
        words[:, 0], words[:, 1] = unscaled, unscaled >> 63
        arr = pa.Array.from_buffers(pa.decimal128(12, 2), n, [None, pa.py_buffer(words)])
        return _with_nulls(arr, _mask(rng, n))
    if kind == "list-int32":
        offsets = _offsets(rng.integers(0, 9, n))
        values = pa.array(rng.integers(-10**6, 10**6, int(offsets[-1])).astype(np.int32))
        return pa.ListArray.from_arrays(pa.array(offsets), values, mask=pa.array(_mask(rng, n)))
    if kind == "struct":
        a = pa.array(rng.integers(-10**6, 10**6, n).astype(np.int32), mask=_mask(rng, n))
        return pa.StructArray.from_arrays([a, _words(rng, n)], names=["a", "b"],
                                          mask=pa.array(_mask(rng, n)))
    if kind == "map":
        offsets = _offsets(rng.integers(0, 5, n))
        total = int(offsets[-1])
        keys = pa.array([f"key{i}" for i in range(50)]).take(rng.integers(0, 50, total))
        values = pa.array(rng.integers(-10**9, 10**9, total), mask=_mask(rng, total))
        return pa.MapArray.from_arrays(pa.array(offsets), keys, values,
                                       mask=pa.array(_mask(rng, n)))
    if kind == "fixed-binary":
        arr = pa.Array.from_buffers(pa.binary(16), n, [None, pa.py_buffer(rng.bytes(16 * n))])
        return _with_nulls(arr, _mask(rng, n))
    raise ValueError(f"unknown kind {kind!r}; kinds are {', '.join(KINDS)}")


def python_dtype(kind: str):
    """``(dtype, extra carray arguments)`` for a carray of the kind's Python objects."""
    if kind == "vlen-str":
        return bcolz_store.vlen("str", nullable=True), {}
    if kind == "category":
        return bcolz_store.category(SYMBOLS), {}
    if kind == "int64-nullable":
        return "int64", {"nullable": True}
    if kind == "decimal":
        return bcolz_store.decimal(12, 2, nullable=True), {}
    if kind == "list-int32":
        return bcolz_store.list_("int32"), {}
    if kind == "struct":
        return bcolz_store.struct([("a", "int32", True), ("b", "str")], nullable=True), {}
    if kind == "map":
        return bcolz_store.map_("str", "int64"), {}
    if kind == "fixed-binary":
        return "V16", {}     # (numpy S16 would strip trailing NUL bytes)
    raise ValueError(kind)


def query_table(n: int, seed: int = 0):
    """The five-column table of the query (a pyarrow Table)."""
    import pyarrow as pa
    rng = np.random.default_rng([seed, 100])
    ts = np.datetime64("2020-01-01", "ns") + \
        np.sort(rng.integers(0, 86_400 * 10**9 * 365, n)).astype("timedelta64[ns]")
    codes = rng.integers(0, len(SYMBOLS), n).astype(np.int16)
    return pa.table({"ts": pa.array(ts), "x": pa.array(rng.integers(-10**12, 10**12, n)),
                     "sym": pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(SYMBOLS)),
                     "f": pa.array(rng.random(n)), "text": _words(rng, n, nulls=False)})


# --------------------------------------------------------------------------- checks

def _plain(value):
    """A value as plain Python: lists, tuples, dicts, None for a null (NaN too)."""
    if isinstance(value, np.ma.MaskedArray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return [None if v != v else v for v in value.tolist()]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()] if value.dtype == object or \
            value.dtype.kind == "T" else value.tolist()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def same_python(got, source) -> bool:
    """Whether a numpy read holds the source Array's values, nulls in place."""
    want = source.to_pylist()
    return _plain(got) == want          # (1.0 == 1: pyarrow's float64 for a nullable int64)


def to_numpy(column):
    """pyarrow's numpy of a column (a dictionary decoded first: pyarrow's
    ``to_numpy`` of a dictionary column gives a value, not None, for a null)."""
    import pyarrow as pa
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    return column.to_numpy(zero_copy_only=False)


def same_arrow(got, source) -> bool:
    """Whether an Arrow array (or ChunkedArray) holds the source's values."""
    import pyarrow as pa
    if isinstance(got, pa.ChunkedArray):
        got = got.combine_chunks() if got.num_chunks else pa.array([], got.type)
    if got.type != source.type:
        try:
            got = got.cast(source.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return got.to_pylist() == source.to_pylist()
    return got.equals(source) or got.to_pylist() == source.to_pylist()


def same_table(got, source) -> bool:
    if got.num_rows != source.num_rows:
        return False
    return all(same_arrow(got.column(name), source.column(name).combine_chunks())
               for name in source.column_names)


# --------------------------------------------------------------------------- contenders

def _clear(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def _write_ours(arr, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bcolz_store.carray(arr, rootdir=path, mode="w").flush()


def _read_ours_arrow(path):
    import pyarrow as pa
    return pa.RecordBatchReader.from_stream(bcolz_store.open(path, mode="r")).read_all().column(0)


def kind_cells(kind: str, arr, objs, base: str) -> dict:
    """``{measure: {contender: (prepare, run, check)}}`` for one kind.

    ``prepare()`` runs untimed before each ``run()``; ``check(result)`` tells
    whether a result is right."""
    import lance
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = {c: os.path.join(base, f"{kind}.{c}") for c in CONTENDERS}
    path["parquet"] += ".parquet"
    opath = {c: p + ".py" for c, p in path.items()}
    dtype, extra = python_dtype(kind)

    def write_ours_py():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bcolz_store.carray(objs, dtype=dtype, rootdir=opath["bcolz_store"], mode="w",
                               **extra).flush()

    arrow_check = {  # a written file, read back through Arrow
        "bcolz_store": lambda p: same_arrow(_read_ours_arrow(p), arr),
        "parquet": lambda p: same_arrow(pq.read_table(p).column("c"), arr),
        "lance": lambda p: same_arrow(lance.dataset(p).to_table().column("c"), arr)}
    nothing = lambda: None  # noqa: E731
    return {
        "write-arrow": {
            "bcolz_store": (nothing, lambda: _write_ours(arr, path["bcolz_store"]),
                            lambda _: arrow_check["bcolz_store"](path["bcolz_store"])),
            "parquet": (nothing, lambda: pq.write_table(pa.table({"c": arr}), path["parquet"],
                                                        compression="zstd"),
                        lambda _: arrow_check["parquet"](path["parquet"])),
            "lance": (lambda: _clear(path["lance"]),
                      lambda: lance.write_dataset(pa.table({"c": arr}), path["lance"],
                                                  mode="overwrite"),
                      lambda _: arrow_check["lance"](path["lance"]))},
        "read-arrow": {
            "bcolz_store": (nothing, lambda: _read_ours_arrow(path["bcolz_store"]),
                            lambda got: same_arrow(got, arr)),
            "parquet": (nothing, lambda: pq.read_table(path["parquet"]),
                        lambda got: same_arrow(got.column("c"), arr)),
            "lance": (nothing, lambda: lance.dataset(path["lance"]).to_table(),
                      lambda got: same_arrow(got.column("c"), arr))},
        "write-python": {
            "bcolz_store": (nothing, write_ours_py,
                            lambda _: arrow_check["bcolz_store"](opath["bcolz_store"])),
            "parquet": (nothing, lambda: pq.write_table(
                pa.table({"c": pa.array(objs, type=arr.type)}), opath["parquet"],
                compression="zstd"), lambda _: arrow_check["parquet"](opath["parquet"])),
            "lance": (lambda: _clear(opath["lance"]), lambda: lance.write_dataset(
                pa.table({"c": pa.array(objs, type=arr.type)}), opath["lance"],
                mode="overwrite"), lambda _: arrow_check["lance"](opath["lance"]))},
        "read-python": {
            "bcolz_store": (nothing, lambda: bcolz_store.open(path["bcolz_store"], mode="r")[:],
                            lambda got: same_python(got, arr)),
            "parquet": (nothing, lambda: to_numpy(pq.read_table(path["parquet"]).column("c")),
                        lambda got: same_python(got, arr)),
            "lance": (nothing, lambda: to_numpy(lance.dataset(path["lance"]).to_table().column(
                "c")), lambda got: same_python(got, arr))},
    }


def table_cells(source, base: str) -> dict:
    """The whole table (``source``, a pyarrow Table), written once each way."""
    import lance
    import pyarrow as pa
    import pyarrow.parquet as pq
    root = os.path.join(base, "table.bcolz_store")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bcolz_store.ctable(source, rootdir=root, mode="w").flush()
    pq.write_table(source, os.path.join(base, "table.parquet"), compression="zstd")
    lance.write_dataset(source, os.path.join(base, "table.lance"), mode="overwrite")
    check = lambda got: same_table(got, source)  # noqa: E731
    nothing = lambda: None  # noqa: E731
    return {"read-arrow": {
        "bcolz_store": (nothing, lambda: pa.RecordBatchReader.from_stream(
            bcolz_store.open(root, mode="r")).read_all(), check),
        "parquet": (nothing, lambda: pq.read_table(os.path.join(base, "table.parquet")), check),
        "lance": (nothing, lambda: lance.dataset(os.path.join(base, "table.lance")).to_table(),
                  check)}}


def query_cells(source, base: str) -> dict:
    """The query over ``source`` (the five-column pyarrow Table)."""
    import duckdb
    import lance
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    root = os.path.join(base, "query.bcolz_store")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bcolz_store.ctable(source, rootdir=root, mode="w").flush()
    parquet = os.path.join(base, "query.parquet")
    pq.write_table(source, parquet, compression="zstd")
    lpath = os.path.join(base, "query.lance")
    lance.write_dataset(source, lpath, mode="overwrite")
    want = source.filter(pc.equal(source.column("sym").cast(pa.string()), QUERY))
    sql = f"select * from read_parquet('{parquet}') where sym = '{QUERY}'"
    expr = f"sym == '{QUERY}'"

    def duck():
        got = duckdb.sql(sql).arrow()
        return got.read_all() if hasattr(got, "read_all") else got

    def check_numpy(got):
        return len(got) == want.num_rows and all(
            _plain(got[name]) == _plain(want.column(name).to_numpy(zero_copy_only=False))
            if name != "sym" else _plain(got[name]) == want.column(name).to_pylist()
            for name in source.column_names)

    def check_arrow(got):
        return same_table(got, want)
    nothing = lambda: None  # noqa: E731
    lance_run = lambda: lance.dataset(lpath).to_table(filter=f"sym = '{QUERY}'")  # noqa: E731
    return {
        "numpy": {
            "bcolz_store": (nothing, lambda: bcolz_store.open(root, mode="r").fetchwhere(
                expr, out_flavor="numpy"), check_numpy),
            "parquet": (nothing, duck, check_arrow),
            "lance": (nothing, lance_run, check_arrow)},
        "arrow": {
            "bcolz_store": (nothing, lambda: pa.table(bcolz_store.open(root, mode="r").fetchwhere(
                expr, out_flavor="bcolz")), check_arrow),
            "parquet": (nothing, duck, check_arrow),
            "lance": (nothing, lance_run, check_arrow)}}


# --------------------------------------------------------------------------- run

def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:200]


def run_cells(kind: str, cells: dict, repeat: int, log) -> list:
    """Check every cell once, then time it ``repeat`` times, every contender in turn."""
    rows, live = [], {}
    for measure, contenders in cells.items():
        row = {"kind": kind, "measure": measure, "times": {}, "median": {}, "refused": {},
               "wrong": []}
        for name, (prepare, run, check) in contenders.items():
            unwritten = measure.startswith("read-") and bool(rows) and \
                rows[0]["measure"] == "write-arrow" and name in rows[0]["refused"]
            if unwritten:                       # (its write-arrow refused the kind)
                row["refused"][name] = "not written (write-arrow refused)"
                continue
            try:
                prepare()
                result = run()
            except Exception as exc:            # noqa: BLE001 (a contender refusing a kind)
                row["refused"][name] = _short(exc)
                log(f"  {kind} {measure} {name}: refused ({_short(exc)})")
                continue
            if not check(result):
                row["wrong"].append(name)
                log(f"  {kind} {measure} {name}: WRONG result")
            del result
            row["times"][name] = []
            live.setdefault(measure, []).append(name)
        rows.append(row)
    by_measure = {row["measure"]: row for row in rows}
    for _ in range(repeat):
        for measure, names in live.items():
            for name in names:
                prepare, run, _check = cells[measure][name]
                prepare()
                gc.collect()
                t0 = time.perf_counter()
                result = run()
                by_measure[measure]["times"][name].append(time.perf_counter() - t0)
                del result
    for row in rows:
        key = f"{kind}:{row['measure']}" if kind in ("table", "query") else row["measure"]
        row["median"] = {n: statistics.median(t) for n, t in row["times"].items()}
        ours, theirs = row["median"].get("bcolz_store"), row["median"].get("parquet")
        row["ratio"] = ours / theirs if ours is not None and theirs else None
        row["target"] = TARGETS.get(key)
        if "bcolz_store" in row["wrong"]:
            row["status"] = "WRONG"
        elif row["ratio"] is None:
            row["status"] = "refused" if "bcolz_store" in row["refused"] else "n/a"
        else:
            row["status"] = "PASS" if row["ratio"] <= row["target"] else "MISS"
        log(f"  {kind:15s} {row['measure']:13s} " + "  ".join(
            f"{n} {row['median'][n]:.3f}s" for n in row["median"]) + f"  [{row['status']}]")
    return rows


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def table(rows: list) -> str:
    """The results as a Markdown table."""
    out = ["| kind | measure | bcolz_store (s) | Parquet (s) | Lance (s) | ratio | target | |",
           "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        cells = [r["median"].get(c) for c in CONTENDERS]
        shown = [("refused" if c in r["refused"] else _cell(v)) for c, v in zip(CONTENDERS, cells)]
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        target = "-" if r["target"] is None else f"<= {r['target']:.1f}x"
        mark = {"PASS": "ok", "MISS": "MISS"}.get(r["status"], r["status"])
        out.append(f"| {r['kind']} | {r['measure']} | {' | '.join(shown)} | {ratio} | "
                   f"{target} | {mark} |")
    notes = [f"- {r['kind']} {r['measure']} {c}: refused, {msg}" for r in rows
             for c, msg in r["refused"].items()] + \
        [f"- {r['kind']} {r['measure']} {c}: WRONG result" for r in rows for c in r["wrong"]]
    if notes:
        out += ["", "Notes:"] + notes
    out += ["", "Parquet for the queries: DuckDB over the Parquet file."]
    return "\n".join(out)


def whole_table(arrays: dict, refused: set, n: int, seed: int):
    """A pyarrow Table of every kind bcolz_store takes from Arrow, plus a float64."""
    import pyarrow as pa
    cols = {k.replace("-", "_"): a for k, a in arrays.items() if k not in refused}
    cols["f64"] = pa.array(np.random.default_rng([seed, 200]).random(n))
    return pa.table(cols)


def _selected(text: str | None) -> list:
    if not text:
        return list(KINDS) + ["table", "query"]
    names = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in names if k not in KINDS + ("table", "query")]
    if unknown:
        raise SystemExit(f"unknown kinds {unknown}; kinds are "
                         f"{', '.join(KINDS + ('table', 'query'))}")
    return names


def profile(spec: str, rows: int, base: str, seed: int) -> int:
    """Run one cell (``KIND:MEASURE[:CONTENDER]``) under pyinstrument, print the profile."""
    from pyinstrument import Profiler
    parts = spec.split(":")
    if len(parts) not in (2, 3):
        raise SystemExit("--profile takes KIND:MEASURE or KIND:MEASURE:CONTENDER")
    kind, measure = parts[:2]
    who = parts[2] if len(parts) == 3 else "bcolz_store"
    if kind == "query":
        cells = query_cells(query_table(rows, seed), base)
    elif kind == "table":
        arrays = {k: make_kind(k, rows, seed) for k in KINDS if k != "fixed-binary"}
        cells = table_cells(whole_table(arrays, set(), rows, seed), base)
    else:
        arr = make_kind(kind, rows, seed)
        objs = arr.to_pylist() if measure == "write-python" else None
        cells = kind_cells(kind, arr, objs, base)
        if measure in ("read-arrow", "read-python"):
            cells["write-arrow"][who][1]()
    if measure not in cells or who not in cells[measure]:
        raise SystemExit(f"no cell {spec}; measures of {kind}: {', '.join(cells)}")
    prepare, run, _check = cells[measure][who]
    prepare()
    run()                                       # once to warm up
    prepare()
    gc.collect()
    profiler = Profiler(interval=0.001)
    profiler.start()
    run()
    profiler.stop()
    print(profiler.output_text(unicode=True, color=False, show_all=False))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kinds",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="20,000 rows, one repeat")
    parser.add_argument("--kinds", help=f"a comma-separated subset of {', '.join(KINDS)}, "
                                        f"table, query")
    parser.add_argument("--out", help="write the figures to this JSON file")
    parser.add_argument("--dir", help="where to write the data (default: a temporary folder)")
    parser.add_argument("--profile", metavar="KIND:MEASURE",
                        help="run one cell of bcolz_store (or KIND:MEASURE:CONTENDER) under "
                             "pyinstrument and print the profile")
    args = parser.parse_args(argv)
    if args.quick:
        args.rows = min(args.rows, 20_000) if "--rows" in (argv or sys.argv) else 20_000
        args.repeat = 1
    kinds = _selected(args.kinds)
    log = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    base = tempfile.mkdtemp(prefix="kinds-bench-", dir=args.dir)
    rows = []
    try:
        if args.profile:
            return profile(args.profile, args.rows, base, args.seed)
        arrays, refused = {}, set()
        for kind in kinds:
            if kind in ("table", "query"):
                continue
            log(f"{kind}: making {args.rows:,} rows")
            arr = make_kind(kind, args.rows, args.seed)
            arrays[kind] = arr
            objs = arr.to_pylist()
            part = run_cells(kind, kind_cells(kind, arr, objs, base), args.repeat, log)
            del objs
            if "bcolz_store" in part[0]["refused"]:
                refused.add(kind)
            rows += part
            for name in os.listdir(base):
                _clear(os.path.join(base, name))
        if "table" in kinds:
            for kind in KINDS:
                if kind not in arrays:
                    arrays[kind] = make_kind(kind, args.rows, args.seed)
            if "fixed-binary" not in refused and "fixed-binary" in arrays:
                try:
                    _write_ours(arrays["fixed-binary"], os.path.join(base, "probe"))
                except Exception:               # noqa: BLE001
                    refused.add("fixed-binary")
            log(f"table: {len(arrays) - len(refused) + 1} columns"
                + (f" (left out, refused: {', '.join(sorted(refused))})" if refused else ""))
            source = whole_table(arrays, refused, args.rows, args.seed)
            rows += run_cells("table", table_cells(source, base), args.repeat, log)
            for name in os.listdir(base):
                _clear(os.path.join(base, name))
        arrays = None
        if "query" in kinds:
            log("query: making the table")
            rows += run_cells("query", query_cells(query_table(args.rows, args.seed), base),
                              args.repeat, log)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(table(rows))
    if args.out:
        import pyarrow as pa
        try:
            import lance
            lance_version = lance.__version__
        except ImportError:
            lance_version = None
        meta = {"argv": sys.argv[1:] if argv is None else list(argv), "rows": args.rows,
                "repeat": args.repeat, "numpy": np.__version__, "pyarrow": pa.__version__,
                "lance": lance_version, "cpus": os.cpu_count()}
        with open(args.out, "w") as fh:
            json.dump({"meta": meta, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
