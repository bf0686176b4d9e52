"""The libraries ``benchmarks.queries`` runs its queries on, one adapter each.

A query is a conjunction of conditions ``(column, op, value)`` (op one of
``>=``, ``<``, ``==``); each adapter turns it into its own library's
expression, runs it and returns all matching rows, every column, in the
library's natural result:

* ``bcolz_store scan`` / ``bcolz_store planned``: ``ctable.fetchwhere(...,
  out_flavor="numpy")``, a structured array.  ``scan`` runs with
  ``bcolz_store.defaults.query_planning = False`` (a full scan); ``planned``
  with it True, after ``create_index("id", kind="sorted")`` and
  ``create_index("sym", kind="bitmap")``.  Where that API does not exist
  (yet), the planned side says so and is left out, and the scan side is
  whatever the library does.
* ``blosc2``: ``CTable.where(...)`` then every column read (``col[:]``: numpy
  arrays, a list for the dictionary column), with the SUMMARY indexes a
  CTable builds itself, then again with FULL indexes; the faster counts.
* ``duckdb``: a native DuckDB table (``sym`` an ENUM, an ART index on
  ``id``, zone maps by itself), ``SELECT *`` to an Arrow table.
* ``duckdb parquet``: the same SQL over ``read_parquet`` (row-group
  statistics).
* ``pyarrow``: ``pyarrow.dataset`` over the Parquet file, ``to_table(filter=)``
  (row-group statistics).

Every adapter imports its library only when it is used, and ``missing()``
tells why one cannot run (not installed), so a run leaves it out.
"""

from __future__ import annotations

import importlib
import os
import shutil
import time
import warnings
from contextlib import contextmanager

import numpy as np

SYMBOLS = [f"S{i:03d}" for i in range(1000)]
NAMES = ("ts", "id", "sym", "price", "note")
NOT_BUILT = "n/a (not built)"


def _installed(module: str) -> str | None:
    """None when ``module`` imports, else why not."""
    try:
        importlib.import_module(module)
    except ImportError as err:
        return f"not installed ({err})"
    return None


def remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.unlink(path)


# ------------------------------------------------------------------ bcolz_store

@contextmanager
def planning(on: bool):
    """``bcolz_store.defaults.query_planning = on`` for a block (nothing where
    the setting does not exist)."""
    import bcolz_store
    d = bcolz_store.defaults
    if not hasattr(d, "query_planning"):
        yield
        return
    old = d.query_planning
    d.query_planning = on
    try:
        yield
    finally:
        d.query_planning = old


def bcolz_expression(conds) -> tuple:
    """``(expression, user_dict)`` for bcolz_store: values as variables
    ``v0, v1...``, except symbols, written in the text (``sym == 'S123'``)."""
    parts, names = [], {}
    for i, (col, op, value) in enumerate(conds):
        if col == "sym":
            parts.append(f"({col} {op} {value!r})")
        else:
            names[f"v{i}"] = value
            parts.append(f"({col} {op} v{i})")
    return " & ".join(parts), names


class BcolzStore:
    """bcolz_store's ctable: ``scan`` (planning off) or ``planned``."""

    def __init__(self, planned: bool, path: str, storage_options=None):
        self.planned = planned
        self.name = "bcolz_store planned" if planned else "bcolz_store scan"
        self.path = path
        self.opts = storage_options
        self.t = None
        self.notes = []

    @staticmethod
    def version() -> str:
        import bcolz_store
        return bcolz_store.__version__

    @staticmethod
    def missing() -> str | None:
        return None

    def _open(self, mode="r"):
        import bcolz_store
        kw = {"storage_options": self.opts} if self.opts else {}
        return bcolz_store.open(self.path, mode=mode, **kw)

    def prepare(self) -> dict:
        """Untimed once: the planned side's indexes (their build times)."""
        out = {}
        if not self.planned:
            return out
        t = self._open("a")
        for col, kind in (("id", "sorted"), ("sym", "bitmap")):
            if col in t.indexes:
                t.drop_index(col)
            t0 = time.perf_counter()
            t.create_index(col, kind=kind)
            out[f"index {col} ({kind})"] = time.perf_counter() - t0
        t.flush()
        out["indexes"] = repr(t.indexes)
        return out

    def open(self):
        self.t = self._open("r")

    def close(self):
        self.t = None

    def run(self, conds):
        expr, names = bcolz_expression(conds)
        with planning(self.planned), warnings.catch_warnings():
            # an expression over the datetime64 column goes to the python engine,
            # with a warning each time: the benchmark knows
            warnings.filterwarnings("ignore", "numexpr cannot evaluate", UserWarning)
            return self.t.fetchwhere(expr, user_dict=names, out_flavor="numpy")

    def plan(self, conds) -> str | None:
        """``str(t.explain(...))`` of the planned side."""
        if not self.planned:
            return None
        expr, names = bcolz_expression(conds)
        with planning(True):
            return str(self.t.explain(expr, user_dict=names))

    @staticmethod
    def ids(out) -> np.ndarray:
        return np.asarray(out["id"])


# ------------------------------------------------------------------ blosc2

def blosc2_expression(conds) -> str:
    parts = []
    for col, op, value in conds:
        if col == "ts":
            value = int(np.datetime64(value, "ns").astype("i8"))
        elif col == "price":
            value = float(value)
        parts.append(f"({col} {op} {value!r})")
    return " & ".join(parts)


class Blosc2:
    """python-blosc2's CTable, loaded from the Parquet file (dictionary
    ``sym``, utf8 ``note``, timestamp ``ts``).  ``variant`` 'summary': the
    indexes a CTable builds itself on close (SUMMARY on ts, id, price);
    'full': FULL indexes on ts, id, price and sym."""

    name = "blosc2"

    def __init__(self, path: str, variant: str = "summary"):
        self.path = path
        self.variant = variant
        self.t = None
        self.notes = []

    @staticmethod
    def version() -> str:
        import blosc2
        return blosc2.__version__

    @staticmethod
    def missing() -> str | None:
        reason = _installed("blosc2")
        if reason is None and not hasattr(importlib.import_module("blosc2"), "CTable"):
            return "blosc2 without CTable"
        return reason

    def build(self, parquet: str) -> dict:
        import blosc2
        remove(self.path)
        t0 = time.perf_counter()
        t = blosc2.CTable.from_parquet(parquet, urlpath=self.path, mode="w", batch_size=131072,
                                       blosc2_batch_size=131072)
        t.close()                     # builds the SUMMARY indexes
        return {"load": time.perf_counter() - t0}

    def index_full(self) -> dict:
        """Replace the SUMMARY indexes with FULL ones (build times)."""
        import blosc2
        t = blosc2.CTable.open(self.path, mode="a")
        out = {}
        for col in ("ts", "id", "price", "sym"):
            try:
                t.drop_index(col)
            except (KeyError, ValueError):
                pass
            t0 = time.perf_counter()
            t.create_index(col, kind=blosc2.IndexKind.FULL)
            out[f"index {col} (full)"] = time.perf_counter() - t0
        t.close()
        self.variant = "full"
        return out

    def to_b2z(self, path: str) -> None:
        """The table as one ``.b2z`` archive (what a remote CTable reads)."""
        import blosc2
        t = blosc2.CTable.open(self.path, mode="r")
        t.to_b2z(path, overwrite=True)
        t.close()

    def open(self):
        import blosc2
        self.t = blosc2.CTable.open(self.path, mode="r")

    def close(self):
        if self.t is not None:
            self.t.close()
        self.t = None

    def run(self, conds):
        view = self.t.where(blosc2_expression(conds))
        return {name: view[name][:] for name in view.col_names}

    @staticmethod
    def ids(out) -> np.ndarray:
        return np.asarray(out["id"])

    def plan(self, conds):
        return None


class Blosc2Remote(Blosc2):
    """blosc2's read-only ``RemoteCTable`` of a ``.b2z`` archive at an fsspec
    URL (its indexes inside)."""

    def __init__(self, url: str, storage_options: dict, variant: str):
        super().__init__(url, variant)
        self.opts = storage_options

    @staticmethod
    def missing() -> str | None:
        reason = Blosc2.missing()
        if reason is None and not hasattr(importlib.import_module("blosc2"), "RemoteCTable"):
            return "blosc2 without RemoteCTable"
        return reason

    def open(self):
        import blosc2
        self.t = blosc2.RemoteCTable(self.path, storage_options=self.opts)


# ------------------------------------------------------------------ DuckDB

def sql_condition(conds) -> str:
    parts = []
    for col, op, value in conds:
        if col == "ts":
            text = f"TIMESTAMP_NS '{np.datetime_as_string(np.datetime64(value, 'ns'))}'"
        elif col == "sym":
            text = f"'{value}'"
        else:
            text = repr(float(value)) if col == "price" else str(int(value))
        parts.append(f"{col} {'=' if op == '==' else op} {text}")
    return " AND ".join(parts)


def _arrow_of(result):
    """An Arrow table of a DuckDB result (the method's name changed in 1.4)."""
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        if hasattr(result, name):
            return getattr(result, name)()
    raise AttributeError("no Arrow export on this DuckDB result")


class DuckDB:
    """DuckDB: a native table in a database file (``parquet=False``: ``sym``
    an ENUM of the 1,000 symbols, an ART index on ``id``; zone maps are
    DuckDB's own) or ``read_parquet`` of the Parquet file."""

    def __init__(self, parquet: str, db: str | None = None, setup_sql=(), name=None):
        self.parquet = parquet
        self.db = db
        self.setup_sql = list(setup_sql)
        self.name = name or ("duckdb" if db else "duckdb parquet")
        self.con = None
        self.notes = []

    @staticmethod
    def version() -> str:
        import duckdb
        return duckdb.__version__

    @staticmethod
    def missing() -> str | None:
        return _installed("duckdb")

    def build(self) -> dict:
        if not self.db:
            return {}
        import duckdb
        remove(self.db)
        con = duckdb.connect(self.db)
        con.execute("SET enable_progress_bar = false")
        t0 = time.perf_counter()
        con.execute("CREATE TYPE sym_t AS ENUM (" + ", ".join(f"'{s}'" for s in SYMBOLS) + ")")
        con.execute(f"CREATE TABLE t AS SELECT ts, id, CAST(sym AS sym_t) AS sym, price, note "
                    f"FROM read_parquet('{self.parquet}')")
        out = {"load": time.perf_counter() - t0}
        t0 = time.perf_counter()
        con.execute("CREATE INDEX t_id ON t (id)")
        out["index id (ART)"] = time.perf_counter() - t0
        con.close()
        return out

    def open(self):
        import duckdb
        self.con = duckdb.connect(self.db, read_only=True) if self.db else duckdb.connect()
        self.con.execute("SET enable_progress_bar = false")
        for sql in self.setup_sql:
            self.con.execute(sql)

    def close(self):
        if self.con is not None:
            self.con.close()
        self.con = None

    def source(self) -> str:
        return "t" if self.db else f"read_parquet('{self.parquet}')"

    def run(self, conds):
        return _arrow_of(self.con.execute(f"SELECT * FROM {self.source()} "
                                          f"WHERE {sql_condition(conds)}"))

    @staticmethod
    def ids(out) -> np.ndarray:
        return out.column("id").to_numpy()

    def plan(self, conds):
        return None


# ------------------------------------------------------------------ pyarrow

def arrow_filter(conds):
    import operator

    import pyarrow as pa
    import pyarrow.compute as pc
    ops = {">=": operator.ge, "<": operator.lt, "==": operator.eq}
    expr = None
    for col, op, value in conds:
        if col == "ts":
            value = pa.scalar(np.datetime64(value, "ns"), pa.timestamp("ns"))
        part = ops[op](pc.field(col), value)
        expr = part if expr is None else expr & part
    return expr


class Arrow:
    """``pyarrow.dataset`` over the Parquet file (local, or through an fsspec
    filesystem), ``to_table(filter=...)``."""

    name = "pyarrow"

    def __init__(self, parquet: str, filesystem=None):
        self.parquet = parquet
        self.filesystem = filesystem
        self.ds = None
        self.notes = []

    @staticmethod
    def version() -> str:
        import pyarrow
        return pyarrow.__version__

    @staticmethod
    def missing() -> str | None:
        return _installed("pyarrow.dataset")

    def open(self):
        import pyarrow.dataset as ds
        self.ds = ds.dataset(self.parquet, format="parquet", filesystem=self.filesystem)

    def close(self):
        self.ds = None

    def run(self, conds):
        return self.ds.to_table(filter=arrow_filter(conds))

    @staticmethod
    def ids(out) -> np.ndarray:
        return out.column("id").to_numpy()

    def plan(self, conds):
        return None
