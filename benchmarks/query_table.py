"""The table of the query benchmark (:mod:`benchmarks.queries`, and on S3
:mod:`benchmarks.query_s3`): its columns made from a seed, the queries over
it, the ctable and Parquet file written from it, and the check of an answer
against numpy over the generated columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import query_libs as L

SELECTIVITIES = (0.0001, 0.01, 0.1, 0.5)
ROW_GROUP = 131_072
CHUNK = 8 * ROW_GROUP            # rows generated and written at a time
SYMBOL = "S123"
DATA_VERSION = 1                 # of what Data makes; a workdir of another is written anew


# ------------------------------------------------------------------ the data

class Data:
    """The table's numeric columns in memory (the oracle), its text made a
    chunk at a time."""

    def __init__(self, rows: int, seed: int):
        rng = np.random.default_rng(seed)
        self.rows, self.seed = rows, seed
        start = np.datetime64("2024-01-02", "ns").astype(np.int64)
        steps = rng.integers(1, 2_001, rows, dtype=np.int64) * 1_000
        self.ts = (start + np.cumsum(steps)).view("M8[ns]")
        self.id = rng.permutation(rows).astype(np.int64)
        self.code = rng.integers(0, len(L.SYMBOLS), rows).astype(np.int16)
        self.price = rng.uniform(0.0, 100.0, rows)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        self.words = np.array(["".join(rng.choice(letters, n)) for n in rng.integers(2, 10, 512)],
                              dtype=np.dtypes.StringDType())
        self.symbols = np.array(L.SYMBOLS, dtype=np.dtypes.StringDType())

    def chunk(self, start: int, stop: int) -> dict:
        rng = np.random.default_rng([self.seed, start])
        n = stop - start
        w = [self.words[rng.integers(0, len(self.words), n)] for _ in range(3)]
        two = np.strings.add(np.strings.add(w[0], " "), w[1])
        note = np.where(rng.random(n) < 0.5, two, np.strings.add(np.strings.add(two, " "), w[2]))
        return {"ts": self.ts[start:stop], "id": self.id[start:stop],
                "sym": self.symbols[self.code[start:stop]], "code": self.code[start:stop],
                "price": self.price[start:stop], "note": note}

    def chunks(self):
        for start in range(0, self.rows, CHUNK):
            yield self.chunk(start, min(start + CHUNK, self.rows))

    def mask(self, conds) -> np.ndarray:
        ops = {">=": np.greater_equal, "<": np.less, "==": np.equal}
        out = np.ones(self.rows, dtype=bool)
        for col, op, value in conds:
            if col == "sym":
                col, value = "code", L.SYMBOLS.index(value)
            out &= ops[op](getattr(self, col), value)
        return out

    def expected(self, conds) -> np.ndarray:
        return np.sort(self.id[self.mask(conds)])


@dataclass
class Query:
    key: str
    title: str
    conds: list


def conditions(conds) -> list:
    """A query's conditions as JSON can hold them."""
    return [[col, op, str(value) if col == "ts" else value] for col, op, value in conds]


def _pct(sel: float) -> str:
    return f"{sel * 100:g}%"


def make_queries(data: Data, seed: int, npoints: int) -> tuple:
    """``(queries, point ids)``: the range, symbol and conjunction queries,
    and the ids of the point lookups."""
    rng = np.random.default_rng([seed, 1])
    n, out = data.rows, []
    for sel in SELECTIVITIES:
        m = max(1, round(sel * n))
        first = int(rng.integers(0, n - m + 1))
        lo = data.ts[first]
        hi = data.ts[first + m] if first + m < n else data.ts[-1] + np.timedelta64(1, "ns")
        out.append(Query(f"ts {_pct(sel)}", f"`ts` range, {_pct(sel)}",
                         [("ts", ">=", lo), ("ts", "<", hi)]))
    for sel in SELECTIVITIES:
        lo = float(np.round(rng.uniform(0.0, 100.0 * (1 - sel)), 6))
        out.append(Query(f"price {_pct(sel)}", f"`price` range, {_pct(sel)}",
                         [("price", ">=", lo), ("price", "<", lo + 100.0 * sel)]))
    out.append(Query("sym", f"`sym == '{SYMBOL}'`", [("sym", "==", SYMBOL)]))
    m = round(0.1 * n)
    first = int(rng.integers(0, n - m))
    out.append(Query("ts & price", "`ts` 10% & `price < 10`",
                     [("ts", ">=", data.ts[first]), ("ts", "<", data.ts[first + m]),
                      ("price", "<", 10.0)]))
    points = [int(data.id[i]) for i in rng.integers(0, n, npoints)]
    return out, points


def write_bcolz(data: Data, path: str, storage_options=None) -> None:
    """The ctable: ``sym`` categorical, ``note`` vlen str."""
    import bcolz_store as bcolz
    kw = {"storage_options": storage_options} if storage_options else {}
    t = None
    for chunk in data.chunks():
        cols = [chunk[n] for n in L.NAMES]
        if t is None:
            t = bcolz.ctable(cols, names=list(L.NAMES), rootdir=path, mode="w",
                             expectedlen=data.rows,
                             dtype={"sym": bcolz.category(L.SYMBOLS), "note": "vlen-str"}, **kw)
        else:
            t.append(cols)
    t.flush()


def write_parquet(data: Data, path: str) -> None:
    """The Parquet file: row groups of ``ROW_GROUP`` rows with statistics."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    schema = pa.schema([pa.field("ts", pa.timestamp("ns"), False),
                        pa.field("id", pa.int64(), False),
                        pa.field("sym", pa.dictionary(pa.int16(), pa.string()), False),
                        pa.field("price", pa.float64(), False),
                        pa.field("note", pa.string(), False)])
    symbols = pa.array(L.SYMBOLS)
    with pq.ParquetWriter(path, schema, write_statistics=True) as writer:
        for c in data.chunks():
            sym = pa.DictionaryArray.from_arrays(pa.array(c["code"]), symbols)
            table = pa.table([pa.array(c["ts"]), pa.array(c["id"]), sym, pa.array(c["price"]),
                              pa.array(c["note"], pa.string())], schema=schema)
            writer.write_table(table, row_group_size=ROW_GROUP)



def check(side, out, expected: np.ndarray) -> str | None:
    """None when ``out`` holds exactly the expected ids, else what differs."""
    ids = np.sort(side.ids(out))
    if len(ids) != len(expected):
        return f"{len(ids)} rows, expected {len(expected)}"
    if not np.array_equal(ids, expected):
        return f"other ids ({int(np.sum(ids != expected))} differ)"
    return None


def best(variants: dict) -> dict:
    """Per query the fastest right answer of a library's variants (``{name:
    rows}``); every variant's median and error are kept."""
    out = {}
    for key in next(iter(variants.values())):
        tried = {name: rows[key] for name, rows in variants.items() if key in rows}
        right = [(info.get("median", 0), name) for name, info in tried.items() if info["ok"]]
        name = min(right)[1] if right else next(iter(tried))
        out[key] = dict(tried[name], variant=name, variants={
            n: {"median": i.get("median"), "ok": i["ok"], "error": i["error"]}
            for n, i in tried.items()})
    return out
