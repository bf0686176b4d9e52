"""Query planning: what the chunk statistics (and indexes) let a query skip,
and that a planned query answers exactly what a scan answers.

Every query is run twice, with ``defaults.query_planning`` on and off, and
the answers (or the errors) must be the same, for every column kind, sorted
and shuffled data, readers and writers, and after writes.  The cost rule's
thresholds are set to 0 here (the ``plan_everything`` fixture) so that
small tables are planned whenever a statistic decides anything.
"""

from __future__ import annotations

import doctest
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcolz_store as bcolz
from bcolz_store import ctable_plan
from bcolz_store.ctable_select import Selection

pytestmark = pytest.mark.filterwarnings("ignore:numexpr cannot evaluate")

CHUNKLEN = 64
N = CHUNKLEN * 20 + 17          # 20 chunks and a leftover
WORDS = ["apple", "apricot", "banana", "blueberry", "cherry", "date", "fig", "grape", "kiwi",
         "lemon", "lime", "mango"]


@pytest.fixture
def plan_everything(monkeypatch):
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_ROWS", 0)
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_FRACTION", 0)


def _columns(n: int, shuffled: bool, seed: int = 7) -> dict:
    """One column of every kind with statistics, sorted (missing items
    sprinkled) or shuffled."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(n) if shuffled else np.arange(n)
    ramp = np.arange(n)
    out = {}
    for dtype in ("i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"):
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        out[dtype] = np.array([lo + (hi - lo) * i // max(n - 1, 1) for i in range(n)],
                              dtype=dtype)[order]
    for dtype in ("f4", "f8"):
        values = (ramp / 7.0 - 50).astype(dtype)
        values[ramp % 37 == 5] = np.nan
        out[dtype] = values[order]
    out["b"] = (ramp >= n // 3)[order]
    ts = np.datetime64("2021-03-01T00:00:00", "s") + ramp * 3600
    ts[ramp % 41 == 3] = np.datetime64("NaT")
    out["ts"] = ts[order]
    td = (ramp * 250).astype("m8[ms]")
    td[ramp % 43 == 2] = np.timedelta64("NaT")
    out["td"] = td[order]
    out["S"] = np.array([b"k%05d" % i for i in ramp], dtype="S6")[order]
    out["U"] = np.array(["u%05d" % i for i in ramp], dtype="U6")[order]
    words = [WORDS[i * len(WORDS) // n] + "%04d" % i for i in ramp]
    out["vs"] = [None if i % 29 == 4 else words[i] for i in order]
    out["vb"] = [None if i % 31 == 6 else words[i].encode() for i in order]
    out["cat"] = [None if i % 23 == 7 else WORDS[i * len(WORDS) // n] for i in order]
    return out


def make_table(root, n=N, shuffled=False, seed=7, chunklen=CHUNKLEN):
    cols = _columns(n, shuffled, seed)
    data = []
    for name, values in cols.items():
        if name in ("vs", "vb"):
            data.append(bcolz.carray(values, dtype="vlen-str" if name == "vs" else "vlen-bytes",
                                     chunklen=chunklen))
        elif name == "cat":
            data.append(bcolz.carray(values, dtype="category", chunklen=chunklen))
        else:
            data.append(values)
    names = [f"c_{name}" for name in cols]
    return bcolz.ctable(data, names=names, rootdir=str(root), mode="w", chunklen=chunklen)


# conditions over the table of make_table (the names are its columns)
CONDITIONS = [
    # integers, in and out of range, either order, chained, between, isin
    "c_i1 < -100", "c_i1 >= 127", "-1 < c_i2", "c_i4 == 0", "c_i8 != 5", "c_u1 > 300",
    "c_u1 <= -1", "c_u2 == 65535", "c_u4 >= 2147483648", "c_u8 > 2**63", "c_i8 < 2.5e18",
    "c_i4 > 10.5", "c_i2 < 1e10", "between(c_i2, -1000, 1000)", "-50 <= c_i1 < 50",
    "isin(c_i4, [0, -2147483648, 5])", "isin(c_u1, [0, 255, 'x', None])", "isin(c_i8, [])",
    "isin(c_u8, [18446744073709551615, 3.0])", "isin(c_i1, [1.5])",
    # floats with NaN; NaN and inf constants
    "c_f8 < 0", "c_f8 > 100", "c_f8 != 3.0", "c_f8 == c_f8", "c_f8 != nan",
    "c_f8 == nan", "c_f4 < inf", "c_f4 >= -inf", "c_f4 == 0.1", "c_f4 < 0.1", "c_f4 > -10",
    "~(c_f8 < 0)", "~(c_f8 != 5)", "isnull(c_f8)", "notnull(c_f4)", "isin(c_f8, [-50.0, 1])",
    "between(c_f4, -40, -30)",
    # booleans
    "c_b", "~c_b", "c_b == True", "c_b & (c_i4 > 0)", "c_b > 0.5",
    # datetimes and timedeltas with NaT, constants of other units
    "c_ts < ts0", "c_ts >= ts_hour", "c_ts != ts0", "c_ts == nat", "c_ts != nat",
    "~(c_ts > ts_day)", "c_td > td0", "c_td <= 1000", "c_td != td0",
    # fixed-width text
    "c_S < b'k00100'", "c_S == b'k00010'", "c_U > 'u01000'", "startswith(c_U, 'u002')",
    "startswith(c_S, b'k001')", "isin(c_U, ['u00001', 'zzz'])", "c_S == 'k00010'",
    "c_U < 5",
    # vlen text with None
    "c_vs < 'b'", "c_vs == 'cherry0500'", "c_vs != 'x'", "startswith(c_vs, 'apr')",
    "isnull(c_vs)", "notnull(c_vs)", "~isnull(c_vs)", "isin(c_vs, ['fig0700', 'zz'])",
    "c_vb > b'lime'", "startswith(c_vb, b'ma')", "isnull(c_vb)", "c_vb == 'apple0001'",
    "isin(c_vb, [b'apple0001', 'apple0002'])",
    # categorical with missing
    "c_cat == 'fig'", "c_cat != 'fig'", "c_cat < 'c'", "isin(c_cat, ['kiwi', 'nope'])",
    "startswith(c_cat, 'ap')", "isnull(c_cat)", "notnull(c_cat)", "c_cat == 'nope'",
    # several columns, |, ~, ^, opaque parts
    "(c_i4 < 0) & (c_f8 > -40)", "(c_i4 < -2000000000) | (c_f8 > 130)",
    "~((c_i2 > 0) | (c_f4 < -45))", "(c_u2 > 60000) ^ (c_i1 < 0)",
    "(c_i8 + 1 > 0) & (c_i4 < 0)", "(c_i4 < 0) & (c_f8 < c_f4)", "sqrt(abs(c_f8)) < 2",
    "(c_ts < ts_day) & isnull(c_vs)", "(c_cat == 'date') | (c_U < 'u00050')",
    "(c_i4 > k) & startswith(c_vs, 'b')",
    # not plannable (the scan answers, or raises, as always)
    "c_i4 > max(c_i4)", "(c_i4 > 0) and (c_i1 < 0)",
    "not (c_i4 > 0)", "c_i4 + 1", "c_ts > 5", "c_vs < b'a'", "startswith(c_vs, b'a')",
    "startswith(c_i4, 'a')", "c_i4 > unknown_name", "c_i4 >",
]

VARIABLES = {"nan": np.nan, "inf": np.inf, "ts0": np.datetime64("2021-03-10", "D"),
             "ts_hour": np.datetime64("2021-03-05T07", "h"),
             "ts_day": np.datetime64("2021-03-20"), "nat": np.datetime64("NaT"),
             "td0": np.timedelta64(30, "s"), "k": -1000}


def _outcome(fn):
    """``('ok', answer)`` or ``('error', type, message)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ("ok", fn())
    except Exception as err:        # the same error either way
        return ("error", type(err).__name__, str(err))


def _same(fn):
    """fn() with and without planning give the same answer (or error)."""
    planned = _outcome(fn)
    with bcolz.defaults_ctx(query_planning=False):
        scanned = _outcome(fn)
    assert planned[0] == scanned[0], (planned, scanned)
    if planned[0] == "error":
        assert planned == scanned
        return None
    return planned[1], scanned[1]


def _text(rows) -> str:
    return repr(rows.tolist() if isinstance(rows, np.ndarray) else list(rows))


def check_queries(t, cond, user_dict=VARIABLES, dask=False, every=True):
    """The query APIs (``every``: all of them), with and without planning:
    the same answers."""
    answers = [
        lambda: _text(t.where(cond, user_dict=user_dict)),
        lambda: _text(t.where(cond, outcols="nrow__, c_i4, c_vs", limit=7, skip=3,
                              user_dict=user_dict, out_flavor=tuple)),
        lambda: _text(t.fetchwhere(cond, out_flavor="numpy", user_dict=user_dict)),
        lambda: t.eval(cond, user_dict=user_dict, out_flavor="numpy").tolist()]
    if every:
        answers += [
            lambda: _text(np.concatenate(list(t.whereblocks(cond, blen=50, user_dict=user_dict))
                                         or [np.zeros(0)])),
            lambda: [len(b) for b in t.whereblocks(cond, blen=50, skip=1, limit=101,
                                                   user_dict=user_dict)],
            lambda: _text(t.fetchwhere(cond, outcols=["c_f8", "c_cat"], user_dict=user_dict)[:]),
            lambda: t.eval(cond, user_dict=user_dict)[:].tolist()]
    for answer in answers:
        found = _same(answer)
        if found is not None:
            assert found[0] == found[1], cond
    # t[cond] and todataframe(where=) see the caller's variables
    scope = dict(VARIABLES)
    found = _same(lambda: _text(_getitem(t, cond, scope)))
    if found is not None:
        assert found[0] == found[1], cond
    if not every:
        return
    found = _same(lambda: _frame(t, cond, scope, dask))
    if found is not None:
        planned, scanned = found
        for a, b in zip(planned, scanned):
            assert a.equals(b) and list(a.index) == list(b.index), cond


def _getitem(t, cond, scope):
    # (the variables are this frame's locals: t[cond] reads them)
    nan, inf, ts0, ts_hour, ts_day, nat, td0, k = (scope[n] for n in (
        "nan", "inf", "ts0", "ts_hour", "ts_day", "nat", "td0", "k"))
    return t[cond]


def _frame(t, cond, scope, dask):
    nan, inf, ts0, ts_hour, ts_day, nat, td0, k = (scope[n] for n in (
        "nan", "inf", "ts0", "ts_hour", "ts_day", "nat", "td0", "k"))
    frames = [t.todataframe(where=cond, columns=["c_i4", "c_f8", "c_vs", "c_cat"])]
    if dask:
        frames.append(t.to_dask(blen=4 * CHUNKLEN, filters=cond, columns=["c_i4", "c_ts", "c_S"])
                      .compute(scheduler="sync"))
    return frames


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("plans")
    for shuffled in (False, True):
        make_table(root / f"t{int(shuffled)}", shuffled=shuffled).flush()
    return root


@pytest.mark.parametrize("shuffled", [False, True], ids=["sorted", "shuffled"])
@pytest.mark.parametrize("mode", ["r", "a"])
def test_every_query_answers_as_a_scan(tables, plan_everything, shuffled, mode):
    t = bcolz.open(str(tables / f"t{int(shuffled)}"), mode=mode)
    planned = 0
    for cond in CONDITIONS:     # (shuffled: the same plans mostly scan; fewer APIs)
        check_queries(t, cond, dask=cond in DASK_CONDITIONS, every=not shuffled)
        plan = _outcome(lambda: t.explain(cond, user_dict=VARIABLES))
        planned += plan[0] == "ok" and plan[1].strategy == "statistics"
    if not shuffled:            # most conditions decide chunks of sorted data
        assert planned > len(CONDITIONS) // 2


DASK_CONDITIONS = ["c_i4 < 0", "(c_f8 > 100) | isnull(c_vs)", "c_cat == 'fig'", "c_i1 > 500",
                   "c_ts >= ts_hour"]
CONDITIONS += [c for c in DASK_CONDITIONS if c not in CONDITIONS]


def test_plans_skip_chunks_of_sorted_data(tables, plan_everything):
    t = bcolz.open(str(tables / "t0"), mode="r")
    plan = t.explain("c_i4 < -2000000000")
    assert plan.strategy == "statistics"
    assert plan.chunks == 21 and plan.chunks_skipped >= 19
    assert plan.rows_to_test + plan.rows_all <= 2 * CHUNKLEN
    assert "skipped: " in str(plan) and "statistics" in str(plan)
    every = t.explain("c_i4 > -2147483648")         # all but the first row
    assert every.chunks_all == 20 and every.chunks_to_test == 1
    none = t.explain("c_u1 > 300", user_dict={})
    assert none.chunks_skipped == 21 and none.estimated_rows == 0
    assert len(t["c_u1 > 300"]) == 0
    # categorical: by the codes of the categories that match
    assert t.explain("c_cat == 'fig'").chunks_skipped >= 15
    # on shuffled data every chunk holds every range
    shuffled = bcolz.open(str(tables / "t1"), mode="r").explain("c_i4 < 0")
    assert shuffled.chunks_skipped <= 1 and shuffled.chunks_all <= 1


def test_cost_rule_scans_small_tables_and_undecided_ones(tables):
    t = bcolz.open(str(tables / "t0"), mode="r")
    plan = t.explain("c_i4 < 0")        # half of 1,297 rows decided: below MIN_SKIP_ROWS
    assert plan.strategy == "scan" and plan.rows_skipped > 500
    assert "decide" in plan.reason
    shuffled = bcolz.open(str(tables / "t1"), mode="r").explain("c_i4 < 0")
    assert shuffled.strategy == "scan" and "scan" in str(shuffled)


def test_planning_off_and_unplannable(tables, plan_everything):
    t = bcolz.open(str(tables / "t0"), mode="r")
    with bcolz.defaults_ctx(query_planning=False):
        assert t.explain("c_i4 < 0").strategy == "scan"
        assert bcolz.defaults.query_planning is False
    assert bcolz.defaults.query_planning is True
    for cond, why in [("c_i4 > max(c_i4)", "row by row"), ("(c_i4 > 0) and (c_i1 < 0)", ""),
                      ("c_ts > 5", "int constant"), ("c_i4 > nope", "NameError"),
                      ("c_i4 > arr", "neither a column")]:
        plan = t.explain(cond, user_dict={"arr": np.arange(N)})
        assert plan.strategy == "scan" and why in plan.reason, (cond, plan.reason)
    assert t.explain("c_i4 < 0", vm="dask").strategy == "scan"
    with pytest.raises(TypeError):
        bcolz.defaults.query_planning = "yes"
    with pytest.raises(TypeError):
        t.explain(np.ones(N, dtype=bool))


def test_large_sorted_table_with_default_rule(tmp_path):
    n = 200_000
    writer = bcolz.ctable([np.arange(n), np.arange(n) % 10], names=["i", "m"],
                          rootdir=str(tmp_path / "big"), chunklen=4096)
    plan = writer.explain("i < 1000")       # a writer's leftover (3,392 rows) is tested
    assert plan.strategy == "statistics" and plan.rows_to_test == 4096 + 3392
    t = bcolz.open(str(tmp_path / "big"), mode="r")
    plan = t.explain("i < 1000")
    assert plan.strategy == "statistics" and plan.rows_to_test == 4096
    got = t.fetchwhere("(i < 1000) & (m == 3)", outcols="i", out_flavor="numpy")["i"]
    assert got.tolist() == list(range(3, 1000, 10))
    assert isinstance(_matching(t, "i >= 150000"), Selection)
    assert t.explain("m == 3").strategy == "scan"


def _matching(t, cond):
    from bcolz_store.ctable_query import matching
    return matching(t.cols, len(t), None, cond)


def test_writers_stay_exact_after_changes(tmp_path, plan_everything):
    t = make_table(tmp_path / "w")
    conds = ["c_i4 > 2000000000", "c_i4 < -2147000000", "c_f8 > 130", "c_vs == 'zzz'",
             "c_cat == 'mango'", "isnull(c_vs)", "c_i1 == 0"]

    def check():
        for cond in conds:
            check_queries(t, cond)
    check()
    more = make_table(tmp_path / "more", n=150)[:]
    more["c_i4"][:5] = 2147483647
    t.append(more)
    check()
    t.cols["c_i4"][3] = 2147483600          # a chunk whose statistics said no row > 2e9
    t.cols["c_f8"][CHUNKLEN * 2 + 1] = 1e9
    t.cols["c_vs"][100] = "zzz"
    t.cols["c_cat"][5] = "mango"
    t.cols["c_i1"][N + 10] = 0              # in the leftover
    assert 3 in [r.nrow__ for r in t.where("c_i4 > 2000000000", outcols="nrow__")]
    check()
    t.trim(200)
    check()
    t.flush()
    check()
    reader = bcolz.open(str(tmp_path / "w"), mode="r")
    for cond in conds:
        check_queries(reader, cond)
    assert [r.nrow__ for r in reader.where("c_vs == 'zzz'", outcols="nrow__")] == [100]


class FakeIndex:
    """An index answering from the data itself; ``extra`` rows are added to
    every answer (a lying index), ``none`` makes it unable to answer."""

    def __init__(self, values, extra=(), none=False, fail=False):
        self.values, self.extra, self.none, self.fail = values, extra, none, fail
        self.asked = []

    def _rows(self, op, value):
        v = self.values
        if op == "isin":
            found = np.flatnonzero(np.isin(v, list(value)))
        else:
            found = np.flatnonzero({"==": v == value, "<": v < value, "<=": v <= value,
                                    ">": v > value, ">=": v >= value}[op])
        return np.union1d(found, np.asarray(self.extra, dtype=np.int64))

    def estimate(self, op, value):
        if self.fail:
            raise RuntimeError("broken")
        self.asked.append((op, value))
        return len(self._rows(op, value))

    def lookup(self, op, value):
        return None if self.none else self._rows(op, value)


def test_index_hook(tables, monkeypatch, plan_everything):
    t = bcolz.open(str(tables / "t1"), mode="r")        # shuffled: the statistics skip nothing
    values = t["c_i4"][:]
    index = FakeIndex(values, extra=[0, 1, 2, 500])     # it lies: four rows more
    monkeypatch.setattr(t, "_query_indexes", lambda: {"c_i4": index})
    cond = "(c_i4 > 2140000000) & (c_f8 > -1000)"
    plan = t.explain(cond)
    assert plan.strategy == "index" and plan.index == "c_i4" and plan.index_rows < 20
    assert "index: 'c_i4'" in str(plan)
    assert index.asked[-1] == (">", 2140000000)
    check_queries(t, cond)
    expected = np.flatnonzero(values > 2140000000).tolist()
    assert [r.nrow__ for r in t.where(cond, outcols="nrow__")] == expected
    # an index naming too many rows, one that cannot answer, one that fails: not used
    assert t.explain("c_i4 > 0").strategy != "index"
    index.none = True
    assert t.explain(cond).strategy != "index"
    index.none, index.fail = False, True
    assert t.explain(cond).strategy != "index"
    check_queries(t, cond)
    # a categorical's index is of its codes, asked for the codes that match
    codes = t.cols["c_cat"].codes[:]
    cats = t.cols["c_cat"].category.categories
    cat_index = FakeIndex(codes)
    monkeypatch.setattr(t, "_query_indexes", lambda: {"c_cat": cat_index})
    monkeypatch.setattr(ctable_plan, "INDEX_MAX_FRACTION", 0.5)
    plan = t.explain("c_cat == 'fig'")
    assert plan.strategy == "index"
    assert cat_index.asked[-1] == ("isin", (cats.index("fig"),))
    check_queries(t, "c_cat == 'fig'")
    assert t.explain("isnull(c_cat)").strategy != "index"     # missing items: not indexed


def test_conditions_with_caller_variables_and_user_dict(tables, plan_everything):
    t = bcolz.open(str(tables / "t0"), mode="r")
    lo, hi = -100, 100
    rows = [r.nrow__ for r in t.where("lo <= c_i1 < hi", outcols="nrow__")]
    expected = np.flatnonzero((t["c_i1"][:] >= lo) & (t["c_i1"][:] < hi)).tolist()
    assert rows == expected
    assert t.explain("lo <= c_i1 < hi").strategy == "statistics"
    # user_dict wins over columns: c_i1 is then a scalar, and the query a scan
    assert t.explain("c_i1 > 5", user_dict={"c_i1": 10}).strategy == "scan"
    assert _same(lambda: list(t.where("c_i1 > 5", user_dict={"c_i1": 10}))) is None


def test_between_and_chained_comparisons_evaluate_without_the_planner():
    x = bcolz.carray(np.arange(10))
    for vm in ("python", "numexpr"):
        got = bcolz.eval("between(x, 2, 5)", vm=vm, out_flavor="numpy")
        assert np.flatnonzero(got).tolist() == [2, 3, 4, 5]
        got = bcolz.eval("2 < x <= 7", vm=vm, out_flavor="numpy")
        assert np.flatnonzero(got).tolist() == [3, 4, 5, 6, 7]
    f = np.array([np.nan, 1.0, 2.0])
    assert bcolz.eval("between(f, 0, 5)", out_flavor="numpy").tolist() == [False, True, True]
    assert bool(bcolz.eval("1 < 2 < 3")) and not bool(bcolz.eval("3 < 2 < 5"))


# --------------------------------------------------------------- properties

_OPS = ["<", "<=", ">", ">=", "==", "!="]
_TEXTS = ["", "a", "ab", "b", "ba", "m", "q", "zz"]


@st.composite
def _leaves(draw):
    kind = draw(st.sampled_from(["a", "x", "x", "s", "c"]))
    op = draw(st.sampled_from(_OPS))
    if kind in ("a", "x"):
        value = draw(st.one_of(st.integers(-30, 130), st.sampled_from(
            ["nan", "1e30", "-1e30", "2.5", "-0.5", "2**70"])))
        form = draw(st.integers(0, 3))
        if form == 0:
            return f"({value} {op} {kind})"
        if form == 1:
            return f"between({kind}, {value}, {draw(st.integers(-30, 130))})"
        return f"({kind} {op} {value})"
    text = repr(draw(st.sampled_from(_TEXTS)))
    form = draw(st.integers(0, 4))
    if form == 0:
        return f"startswith({kind}, {text})"
    if form == 1:
        return f"{draw(st.sampled_from(['isnull', 'notnull']))}({kind})"
    if form == 2:
        return f"isin({kind}, [{text}, {repr(draw(st.sampled_from(_TEXTS)))}])"
    return f"({kind} {op} {text})"


@st.composite
def _conditions(draw, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(_leaves())
    left = draw(_conditions(depth - 1))
    right = draw(_conditions(depth - 1))
    joined = draw(st.sampled_from(["&", "|", "^"]))
    out = f"({left} {joined} {right})"
    return f"~{out}" if draw(st.booleans()) else out


def _words(rng, n, sort):
    words = [None if rng.random() < 0.1 else "".join(rng.choice(list("abmqz"), rng.integers(0, 3)))
             for _ in range(n)]
    if sort:
        words = sorted(w for w in words if w is not None) + [w for w in words if w is None]
    return words


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=st.integers(1, 300), chunklen=st.sampled_from([8, 16, 50]),
       sort=st.booleans(), reader=st.booleans())
def test_random_conditions_on_random_tables(data, n, chunklen, sort, reader):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    a = rng.integers(-20, 120, n).astype(data.draw(st.sampled_from(["i1", "i8", "u2"])))
    x = rng.normal(50, 40, n).astype(data.draw(st.sampled_from(["f4", "f8"])))
    x[rng.random(n) < 0.1] = np.nan
    if sort:
        a, x = np.sort(a), np.sort(x)
    s, c = _words(rng, n, sort), _words(rng, n, sort)
    cond = data.draw(_conditions())
    variables = {"a": a, "x": x, "s": bcolz.carray(s, dtype="vlen-str"),
                 "c": bcolz.carray(c, dtype="category"), "nan": np.nan}
    ctable_plan.MIN_SKIP_ROWS, ctable_plan.MIN_SKIP_FRACTION = 0, 0
    try:
        with tempfile.TemporaryDirectory() as root:
            t = bcolz.ctable([a, x, bcolz.carray(s, dtype="vlen-str", chunklen=chunklen),
                              bcolz.carray(c, dtype="category", chunklen=chunklen)],
                             names=["a", "x", "s", "c"], rootdir=root + "/t", chunklen=chunklen)
            if reader:
                t = bcolz.open(root + "/t", mode="r")
            expected = _outcome(lambda: np.flatnonzero(_evaluated(cond, variables)).tolist())
            found = _same(lambda: [r.nrow__ for r in t.where(cond, outcols="nrow__",
                                                             user_dict={"nan": np.nan})])
            if expected[0] == "ok":
                assert found is not None and found[0] == found[1] == expected[1], cond
            found = _same(lambda: t.eval(cond, out_flavor="numpy", user_dict={"nan": np.nan})
                          .tolist())
            assert found is None or found[0] == found[1], cond
    finally:
        ctable_plan.MIN_SKIP_ROWS, ctable_plan.MIN_SKIP_FRACTION = 1 << 15, 1 / 16


def _evaluated(cond, variables):
    with bcolz.defaults_ctx(query_planning=False), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return bcolz.eval(cond, user_dict=variables, out_flavor="numpy")


def test_guide_examples_run():
    guide = Path(__file__).resolve().parents[1] / "docs" / "query-planning.md"
    result = doctest.testfile(str(guide), module_relative=False,
                              optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.attempted > 5 and result.failed == 0
