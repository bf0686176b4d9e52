"""Chunk statistics of nullable fixed columns and decimal columns: those of
the present items (a null's stored fill is no item), exact decimals, and
queries planned with them answering exactly what a scan answers."""

import hashlib
import json
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest

import bcolz_store as bcolz
from bcolz_store import ctable_plan
from bcolz_store.carray_ops import chunk_stats
from bcolz_store.errors import FormatError
from bcolz_store.format.stats_meta import dump_stats, load_stats

CL = 50
COLS = ("ni", "nf", "nt", "d", "nd")


@pytest.fixture
def plan_everything(monkeypatch):
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_ROWS", 0)
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_FRACTION", 0)


def _table(n, start=0, seed=0):
    """Sorted-ish columns (so that chunks are skipped), nulls here and there,
    rows [100, 150) all null, NaN among the present floats."""
    rng = np.random.default_rng(seed)
    rows = np.arange(start, start + n)
    null = rng.random(n) < 0.2
    null |= (rows >= 100) & (rows < 150)
    ints = rows * 10 - 2000
    floats = ints / 4.0
    floats[(rng.random(n) < 0.05) & ~null] = np.nan
    times = np.datetime64("2020-01-01", "ns") + rows.astype("m8[s]").astype("m8[ns]")
    decs = [Decimal(int(v)).scaleb(-3) for v in ints * 7 + 5]
    # under a null: a fill far outside the present values, which must not count
    return pa.table({
        "i": pa.array(rows.astype(np.int64)),
        "ni": pa.array(np.where(null, 10 ** 9, ints), mask=null),
        "nf": pa.array(np.where(null, -1e300, floats), mask=null),
        "nt": pa.array(times, mask=null),
        "d": pa.array(decs, pa.decimal128(12, 3)),
        "nd": pa.array([None if m else v for m, v in zip(null, decs)], pa.decimal128(12, 3)),
    })


T0 = np.datetime64("2020-01-01", "ns")
CONDITIONS = [
    "ni > 500", "ni <= -1500", "ni == 30", "ni != 30", "~(ni < 2000)", "(ni > 100) & (i < 300)",
    "(ni < -1900) | (ni > 3000)", "isnull(ni)", "notnull(ni)", "notnull(ni) & (i > 120)",
    "~isnull(ni) | (i == 3)", "ni > 10000000000",
    "nf > 100.5", "nf < -400", "nf != 2.5", "~(nf >= 0)", "isnull(nf)", "notnull(nf)",
    "nt > t1", "nt <= t2", "(nt > t1) & (ni < 1000)", "isnull(nt)",
    "d > dc", "d <= -13", "d == dx", "d != dx", "~(d > 2.5)", "d >= 1000.005",
    "nd > dc", "nd < -10", "nd == dx", "~(nd > dc)", "isnull(nd)", "notnull(nd)",
    "(nd > dc) | (ni < -1500)", "(d > dc) & notnull(nd)",
]
VARIABLES = {"t1": T0 + np.timedelta64(400, "s"), "t2": T0 + np.timedelta64(60, "s"),
             "dc": Decimal("7.005"), "dx": Decimal("-13.995")}


def _answers(t, cond):
    rows = [r.i for r in t.where(cond, user_dict=VARIABLES, outcols=["i"])]
    blocks = [b["i"].tolist() for b in t.whereblocks(cond, user_dict=VARIABLES, outcols=["i"])]
    return rows, sum(blocks, [])


def _planned_is_scanned(t, conditions=CONDITIONS):
    """Every condition answers with planning as without; returns the plans."""
    plans = {}
    for cond in conditions:
        planned = _answers(t, cond)
        with bcolz.defaults_ctx(query_planning=False):
            scanned = _answers(t, cond)
        assert planned == scanned, cond
        plans[cond] = t.explain(cond, user_dict=VARIABLES)
    return plans


def _columns(table):
    """The columns of ``table`` as carrays (the timestamps nullable: Arrow's
    nulls of a timestamp column are otherwise NaT)."""
    out = []
    for name in table.column_names:
        arr = table.column(name).combine_chunks()
        if name == "nt":
            mask = arr.is_null().to_numpy(zero_copy_only=False)
            values = arr.fill_null(0).to_numpy(zero_copy_only=False).astype("M8[ns]")
            out.append(bcolz.carray(np.ma.masked_array(values, mask=mask), nullable=True,
                                    chunklen=CL))
        elif name == "d":
            out.append(bcolz.carray(np.array(arr.to_pylist(), dtype=object), chunklen=CL,
                                    dtype=bcolz.decimal(12, 3, nullable=False)))
        else:
            out.append(bcolz.carray(arr, chunklen=CL))
    return out


def _write(path, n=537):
    table = _table(n)
    t = bcolz.ctable(_columns(table), names=table.column_names, rootdir=str(path),
                     chunklen=CL, mode="w")
    t.flush()
    return t


def _scan_entry(col, lo, hi):
    """(min, max, nulls) of rows [lo, hi) of a column, read, as meta/stats keeps them."""
    items = col[lo:hi]
    if col.column_type is not None:
        present = [v for v in items.tolist() if v is not None]
        nulls = len(items) - len(present)
        ints = [int(v.scaleb(col.column_type.scale)) for v in present]
        return (min(ints), max(ints), nulls) if ints else (None, None, nulls)
    mask = np.ma.getmaskarray(items)
    data = np.asarray(items.data)[~mask]
    missing = np.isnan(data) if data.dtype.kind in "fMm" else np.zeros(len(data), bool)
    nulls = int(mask.sum() + missing.sum())
    data = data[~missing]
    if not len(data):
        return None, None, nulls
    if data.dtype.kind == "M":
        return int(data.min().astype(np.int64)), int(data.max().astype(np.int64)), nulls
    return data.min().item(), data.max().item(), nulls


def _check_files(path, t):
    """Each column's meta/stats (version 2) is that of its present items."""
    for name in COLS:
        body = json.loads((path / name / "meta" / "stats").read_text())
        assert body["stats"] == 2, name
        assert body["kind"] == {"ni": "nullable:<i8", "nf": "nullable:<f8",
                                "nt": "nullable:<M8[ns]", "d": "decimal:3",
                                "nd": "nullable:decimal:3"}[name]
        col = t.cols[name]
        assert body["length"] == len(col)
        for n, entry in enumerate(body["chunks"]):
            want = _scan_entry(col, n * CL, min((n + 1) * CL, len(col)))
            assert tuple(entry) == want, (name, n, entry, want)


def test_statistics_are_those_of_the_present_items(tmp_path):
    _write(tmp_path / "t")
    t = bcolz.open(str(tmp_path / "t"), mode="r")
    _check_files(tmp_path / "t", t)
    stats = chunk_stats(t.cols["ni"])
    assert stats.known.all()                    # a reader knows the leftover's too
    assert stats.nulls[2] == CL                 # rows 100..149: all null, no min/max
    assert (stats.maxs[stats.nulls < CL] < 10 ** 9).all()       # the fill never counts
    dec = chunk_stats(t.cols["d"])
    assert dec.mins[0] == Decimal("-13.995") and isinstance(dec.maxs[0], Decimal)


def test_planned_answers_are_scanned_ones_and_skip_chunks(tmp_path, plan_everything):
    _write(tmp_path / "t")
    for mode in ("r", "a"):
        t = bcolz.open(str(tmp_path / "t"), mode=mode)
        plans = _planned_is_scanned(t)
        for cond in ("ni > 500", "nf < -400", "nt > t1", "d > dc", "nd < -10", "~(nd > dc)",
                     "notnull(ni)", "notnull(nd)"):
            assert plans[cond].strategy == "statistics", (cond, plans[cond].reason)
            assert plans[cond].chunks_skipped > 0, cond
        assert "skipped" in str(plans["d > dc"])
        for cond in ("isnull(ni)", "isnull(nd)"):      # the all-null chunk, taken unread
            assert plans[cond].chunks_all == 1 and plans[cond].starts[
                plans[cond].states == ctable_plan.ALL].tolist() == [100], cond
        # the all-null chunk is skipped by a comparison, taken whole by isnull
        plan = plans["ni > 500"]
        assert not any(s == 100 for s in plan.starts[plan.states == ctable_plan.SOME])
        plan = plans["ni > 10000000000"]     # (a writer's leftover is read)
        assert plan.chunks_skipped == plan.chunks - (mode == "a")


def test_appends_setitem_trim_and_reopen(tmp_path, plan_everything):
    path = tmp_path / "t"
    _write(path, 237)
    t = bcolz.open(str(path), mode="a")
    more = _table(300, start=237, seed=1)
    t.append(more)
    t.flush()
    _check_files(path, bcolz.open(str(path), mode="r"))
    _planned_is_scanned(bcolz.open(str(path), mode="r"))

    t = bcolz.open(str(path), mode="a")
    ni, nd, nf = t.cols["ni"], t.cols["nd"], t.cols["nf"]
    ni[5] = 10 ** 6                 # a new max in chunk 0
    ni[60:70] = np.ma.masked_array(np.zeros(10, np.int64), mask=[True] * 10)
    ni[110] = -10 ** 6              # a present item in the all-null chunk
    nd[7] = Decimal("99999.999")
    nd[8] = None
    nf[230:240] = np.ma.masked_array(np.full(10, 5e9), mask=[False, True] * 5)
    t.cols["d"][3] = Decimal("-99999.999")
    _planned_is_scanned(t, ["ni > 900000", "ni < -900000", "nd > 99999", "d < -99990",
                            "nf > 1e9", "isnull(ni)", "notnull(nd)"])
    t.flush()
    r = bcolz.open(str(path), mode="r")
    _check_files(path, r)
    plans = _planned_is_scanned(r, CONDITIONS + ["ni > 900000", "ni < -900000", "nd > 99999",
                                                 "d < -99990", "nf > 1e9"])
    assert [r_.i for r_ in r.where("ni > 900000", outcols=["i"])] == [5]
    assert [r_.i for r_ in r.where("ni < -900000", outcols=["i"])] == [110]
    assert plans["ni < -900000"].chunks_skipped == plans["ni < -900000"].chunks - 1

    t = bcolz.open(str(path), mode="a")
    t.trim(80)                      # the last 80 rows go: a new leftover
    t.flush()
    r = bcolz.open(str(path), mode="r")
    assert len(r) == 537 - 80
    _check_files(path, r)
    _planned_is_scanned(r)


def test_a_dataset_written_without_them_keeps_querying(tmp_path, plan_everything):
    path = tmp_path / "t"
    _write(path)
    for name in COLS:               # as written before: no statistics for these columns
        (path / name / "meta" / "stats").unlink()
    t = bcolz.open(str(path), mode="r")
    assert not chunk_stats(t.cols["ni"]).known.any()
    plans = _planned_is_scanned(t)
    assert plans["ni > 500"].chunks_skipped == 0
    t = bcolz.open(str(path), mode="a")     # the next write computes them all
    t.append(_table(10, start=537, seed=2))
    t.flush()
    r = bcolz.open(str(path), mode="r")
    _check_files(path, r)
    assert _planned_is_scanned(r)["ni > 500"].chunks_skipped > 0


def _sealed(version, kind, chunk) -> bytes:
    """A statistics file of one chunk of 4 items, its md5 right."""
    body = {"md5": "", "stats": version, "kind": kind, "chunklen": 4, "length": 4,
            "chunks": [chunk]}
    text = (json.dumps(body, ensure_ascii=True) + "\n").encode("ascii")
    body["md5"] = hashlib.md5(text).hexdigest()
    return (json.dumps(body, ensure_ascii=True) + "\n").encode("ascii")


def test_the_format_of_version_2():
    data = dump_stats("nullable:decimal:2", 4, 6, [[-2 ** 100, 2 ** 120, 1], [None, None, 2]])
    assert json.loads(data)["stats"] == 2
    assert load_stats(data, "x")["chunks"] == [(-2 ** 100, 2 ** 120, 1), (None, None, 2)]
    assert json.loads(dump_stats("<i8", 4, 4, [[1, 2, 0]]))["stats"] == 1    # unchanged
    assert load_stats(_sealed(2, "nullable:<M8[ns]", [1, 2, 3]), "x")["chunks"][0][2] == 3
    assert load_stats(_sealed(1, "<i8", [1, 2, 0]), "x")["chunks"] == [(1, 2, 0)]
    for version, kind, chunk in [(1, "nullable:<i8", [1, 2, 0]),     # a new kind needs 2
                                 (2, "<i8", [1, 2, 0]),              # an old one 1
                                 (3, "nullable:<i8", [1, 2, 0]),
                                 (2, "decimal:2", [1.5, 2, 0]),      # not an integer
                                 (2, "decimal:2", [0, 2 ** 127, 0]),  # over 128 bits
                                 (2, "decimal:2", [3, 2, 0]),        # min > max
                                 (2, "nullable:vlen:str", ["a", "b", 0]),
                                 (2, "decimal:x", [1, 2, 0])]:
        with pytest.raises(FormatError):
            load_stats(_sealed(version, kind, chunk), "x")


def test_decimal_and_nullable_carrays_cannot_be_indexed(tmp_path):
    t = _write(tmp_path / "t")
    for name in ("d", "nd", "ni"):
        with pytest.raises(TypeError):
            t.create_index(name)
