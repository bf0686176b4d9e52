"""The condition oracle: random conditions over tables of every column kind a
condition accepts, answered planned (chunk statistics, indexes) and scanned,
against a plain evaluation, row by row, of the documented semantics
(docs/nulls.md, docs/query-planning.md):

- comparisons are numpy's for fixed dtypes (a ``S`` item compares byte-wise,
  unsigned, trailing NULs stripped); NaN and NaT match none but ``!=``;
- a null of a nullable column (a fixed dtype or a decimal) makes its leaf
  null, and a null leaf makes the whole condition false (numpy.ma carries it
  through ``&``, ``|``, ``^`` and ``~``); ``isnull``/``notnull`` test it;
- None in a vlen or categorical column matches no comparison, ``isin`` or
  ``startswith`` (the leaf is false, and its negation true);
- list and struct columns are tested by ``isnull``/``notnull`` only.

The tables have small chunks (many chunks and a leftover) and were appended
to, trimmed, assigned and reopened.  ``BCOLZ_STORE_ORACLE_EXAMPLES`` sets the
number of tables (default: a CI budget); each is asked
:data:`CONDITIONS_PER_TABLE` conditions, each planned and scanned; the
conditions asked are counted in :data:`ASKED` and printed at the end of a
run (``-s``).
"""

from __future__ import annotations

import atexit
import collections
import math
import operator
import os
import shutil
import tempfile
import warnings
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import bcolz_store as bcolz
from bcolz_store import ctable_plan

pytestmark = pytest.mark.filterwarnings("ignore")

DEFAULT_EXAMPLES = 50
CONDITIONS_PER_TABLE = 12
NULL = "NULL"               # a leaf (or condition) on a null: false, and so is its negation
ASKED = collections.Counter()


def _examples() -> int:
    text = os.environ.get("BCOLZ_STORE_ORACLE_EXAMPLES", "")
    try:
        return max(int(text), 1) if text else DEFAULT_EXAMPLES
    except ValueError:
        raise ValueError(f"BCOLZ_STORE_ORACLE_EXAMPLES must be a whole number, not {text!r}")


#: ``BCOLZ_STORE_ORACLE_SHRINK=0`` reports a failure as found (long runs).
PHASES = tuple(p for p in Phase if p is not Phase.shrink or
               os.environ.get("BCOLZ_STORE_ORACLE_SHRINK", "1") != "0")


def _report():
    if ASKED:
        kinds = sorted(k for k in ASKED if k.startswith("kind:"))
        print(f"\ncondition oracle: {ASKED['conditions']} conditions over "
              f"{ASKED['tables']} tables ({ASKED['planned']} planned by statistics, "
              f"{ASKED['indexed']} by an index), each also scanned; "
              f"{len(kinds)} kinds (conditions naming each): " +
              ", ".join(f"{k[5:]} {ASKED['named:' + k[5:]]}" for k in kinds))


atexit.register(_report)

NS = np.datetime64("2021-01-01T00:00:00", "ns")
_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}


class Kind:
    """A column kind: ``values`` its items (None: a null/missing one),
    ``consts`` the constants its conditions use (as source text: name ->
    value), how the column is made, and which leaves it takes."""

    def __init__(self, name, values, consts, dtype=None, make=None, fixed=True,
                 nullable=False, leaves=("cmp", "isin"), prefixes=()):
        self.name, self.values, self.consts = name, values, consts
        self.dtype, self.make, self.fixed, self.nullable = dtype, make, fixed, nullable
        self.leaves, self.prefixes = leaves, prefixes

    def column(self, items, chunklen):
        if self.make is not None:
            return self.make(items, chunklen)
        if self.nullable:
            return bcolz.carray(list(items), dtype=self.dtype, nullable=True, chunklen=chunklen)
        return bcolz.carray(np.array(items, dtype=self.dtype), chunklen=chunklen)


def _num_consts(*values):
    return {repr(v) if not (isinstance(v, float) and math.isnan(v)) else "nan": v
            for v in values}


_BYTES = [b"", b"a", b"ab", b"b", b"\x80", b"\xff\x01", b"a\x80"]
_BYTE_CONSTS = {repr(v): v for v in _BYTES + [b"a\x00", b"\x7f", b"\x00", b"ab\x00"]}
_STRS = ["", "a", "ab", "b", "\u00e9", "zz"]
_STR_CONSTS = {repr(v): v for v in _STRS + ["aa", "\u00ff", "a\x00"]}
_DAYS = [NS, NS + np.timedelta64(1, "D"), NS + np.timedelta64(3600, "s"),
         NS - np.timedelta64(1, "ns"), np.datetime64("NaT", "ns")]
_DEC = [Decimal("1.50"), Decimal("-2.00"), Decimal("0.00"), Decimal("3.25"), Decimal("9.99")]


def _decimal(nullable):
    def make(items, chunklen):
        return bcolz.carray(list(items), dtype=bcolz.decimal(6, 2, nullable=nullable),
                            chunklen=chunklen)
    return make


def _vlen(dtype):
    return lambda items, chunklen: bcolz.carray(list(items), dtype=dtype, chunklen=chunklen)


KINDS = [
    Kind("i1", [-128, -1, 0, 1, 5, 127], _num_consts(-129, -128, -1, 0, 1, 0.5, 5, 127, 300,
                                                     -0.0, float("nan")), "i1"),
    Kind("i8", [-(2 ** 40), -3, 0, 3, 7, 2 ** 40],
         _num_consts(-(2 ** 40), -3, 0, 3, 3.5, 7, 2 ** 40, 2 ** 62, float("nan")), "i8"),
    Kind("u2", [0, 1, 9, 65535], _num_consts(-1, 0, 1, 9, 65535, 65536, 1.5), "u2"),
    Kind("f8", [float("nan"), -0.0, 0.0, 1.5, -2.25, float("inf")],
         _num_consts(-0.0, 0.0, 1.5, -2.25, float("nan"), float("inf"), 0.1, -1), "f8"),
    Kind("f4", [float("nan"), -0.0, 0.1, 1.5, -2.25],
         _num_consts(-0.0, 0.1, 1.5, -2.25, float("nan"), 3), "f4"),
    Kind("b", [True, False], _num_consts(True, False, 0, 1, 0.5), "?", leaves=("cmp", "truth")),
    Kind("M", _DAYS, {"t0": NS, "t1": NS + np.timedelta64(1, "D"),
                      "tlate": NS + np.timedelta64(7200, "s"), "tnat": np.datetime64("NaT"),
                      "tday": np.datetime64("2021-01-01", "D")}, "M8[ns]"),
    Kind("m", [np.timedelta64(v, "ms") for v in (0, -5, 250, 30000)] +
         [np.timedelta64("NaT", "ms")],
         {"dt0": np.timedelta64(30, "s"), "dtms": np.timedelta64(250, "ms"), "250": 250,
          "dtnat": np.timedelta64("NaT"), "-5": -5}, "m8[ms]"),
    Kind("S", _BYTES, _BYTE_CONSTS, "S3", leaves=("cmp", "isin", "startswith"),
         prefixes=[b"", b"a", b"\x80", b"ab"]),
    Kind("U", _STRS, _STR_CONSTS, "U2", leaves=("cmp", "isin", "startswith"),
         prefixes=["", "a", "\u00e9"]),
    Kind("vs", _STRS + [None], _STR_CONSTS, make=_vlen("vlen-str"), fixed=False,
         leaves=("cmp", "isin", "startswith", "null"), prefixes=["", "a", "zz"]),
    Kind("vb", _BYTES + [b"ab\x00", b"\x00", None], _BYTE_CONSTS, make=_vlen("vlen-bytes"),
         fixed=False, leaves=("cmp", "isin", "startswith", "null"),
         prefixes=[b"", b"a", b"ab\x00", b"\x80"]),
    Kind("cat", ["a", "ab", "b", "zz", None], _STR_CONSTS,
         make=_vlen(bcolz.category(["zz", "a", "b", "ab"])),
         fixed=False, leaves=("cmp", "isin", "startswith", "null"), prefixes=["a", ""]),
    Kind("ni", [-3, 0, 5, 7, None], _num_consts(-3, 0, 5, 6.5, 7, float("nan")), "i4",
         nullable=True, leaves=("cmp", "isin", "null")),
    Kind("nf", [float("nan"), -0.0, 1.5, None], _num_consts(0.0, -0.0, 1.5, float("nan")),
         "f8", nullable=True, leaves=("cmp", "isin", "null")),
    Kind("nb", [True, False, None], _num_consts(True, False, 0, 1), "?", nullable=True,
         leaves=("cmp", "null", "truth")),
    Kind("nS", _BYTES[:5] + [None], _BYTE_CONSTS, "S3", nullable=True,
         leaves=("cmp", "isin", "startswith", "null"), prefixes=[b"", b"a"]),
    Kind("nU", _STRS[:4] + [None], _STR_CONSTS, "U2", nullable=True,
         leaves=("cmp", "isin", "startswith", "null"), prefixes=["", "a"]),
    Kind("nM", _DAYS[:4] + [None], {"t0": NS, "t1": NS + np.timedelta64(1, "D"),
                                    "tnat": np.datetime64("NaT")}, "M8[ns]", nullable=True,
         leaves=("cmp", "isin", "null")),
    Kind("dec", _DEC, {"0": 0, "2": 2, "d15": Decimal("1.5"), "dneg": Decimal("-2")},
         make=_decimal(False), fixed=False, leaves=("cmp", "isin")),
    Kind("ndec", _DEC[:4] + [None], {"0": 0, "d15": Decimal("1.5"), "d325": Decimal("3.25")},
         make=_decimal(True), fixed=False, nullable=True, leaves=("cmp", "isin", "null")),
    Kind("lst", [[1], [2, 3], [], None], {}, fixed=False, leaves=("null",),
         make=lambda items, chunklen: bcolz.carray(list(items), dtype=bcolz.list_("int32"),
                                                   chunklen=chunklen)),
    Kind("stc", [{"a": 1}, {"a": 2}, None], {}, fixed=False, leaves=("null",),
         make=lambda items, chunklen: bcolz.carray(
             list(items), dtype=bcolz.struct([("a", "int32")], nullable=True),
             chunklen=chunklen)),
]
BY_NAME = {k.name: k for k in KINDS}


# ------------------------------------------------------------------ the model

def _fixed_item(kind, value):
    """An item as the column holds it (a numpy scalar of its dtype)."""
    return np.array([value], dtype=kind.dtype)[0]


def _compare(kind, value, op, const):
    """``value op const`` for one present item."""
    if kind.fixed:
        item = _fixed_item(kind, value)
        if kind.dtype[0] == "S" and isinstance(const, bytes):
            return _OPS[op](bytes(item), const.rstrip(b"\x00"))
        if kind.dtype[0] == "U" and isinstance(const, str):
            return _OPS[op](str(item), const.rstrip("\x00"))
        # as numpy compares a column with a constant: an array against a scalar (NumPy 1.x
        # compares two scalars in float64, an array of float32 in float32, as NumPy 2 does)
        return bool(_OPS[op](np.array([item]), const)[0])
    return bool(_OPS[op](value, const))


def _isin(kind, value, consts):
    if kind.fixed:
        item = _fixed_item(kind, value)
        found = False
        for c in consts:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if kind.dtype[0] == "S" and isinstance(c, bytes):
                    found |= bytes(item) == c.rstrip(b"\x00")
                elif kind.dtype[0] == "U" and isinstance(c, str):
                    found |= str(item) == c.rstrip("\x00")
                elif kind.dtype[0] in "SU" or isinstance(c, (str, bytes)):
                    continue
                else:
                    found |= bool((np.array([item]) == c)[0])
        return found
    return any(type(c) is type(value) and value == c or
               isinstance(value, Decimal) and isinstance(c, (int, Decimal)) and value == c
               for c in consts)


def _startswith(kind, value, prefix):
    if kind.fixed:
        item = _fixed_item(kind, value)
        item = bytes(item) if kind.dtype[0] == "S" else str(item)
        return item.startswith(prefix)
    return value.startswith(prefix)


def leaf_value(leaf, row):
    """A leaf on one row: True, False or NULL."""
    what, name = leaf[0], leaf[1]
    kind, value = BY_NAME[name], row[name]
    if what == "isnull":
        return value is None
    if value is None:
        return NULL if kind.nullable else False
    if what == "cmp":
        return _compare(kind, value, leaf[2], leaf[3])
    if what == "isin":
        return _isin(kind, value, leaf[2])
    if what == "startswith":
        return _startswith(kind, value, leaf[2])
    if what == "truth":
        return bool(value)
    raise AssertionError(leaf)


def model(node, row):
    """The condition on one row (NULL poisons everything above it)."""
    if node[0] == "not":
        v = model(node[1], row)
        return NULL if v is NULL else not v
    if node[0] in ("and", "or", "xor"):
        a, b = model(node[1], row), model(node[2], row)
        if a is NULL or b is NULL:
            return NULL
        return {"and": a and b, "or": a or b, "xor": a != b}[node[0]]
    return leaf_value(node, row)


# -------------------------------------------------------------- conditions

@st.composite
def leaves(draw, names):
    name = draw(st.sampled_from(names))
    kind = BY_NAME[name]
    what = draw(st.sampled_from(kind.leaves))
    consts = list(kind.consts.items())
    if what == "cmp":
        text, const = draw(st.sampled_from(consts))
        op = draw(st.sampled_from(list(_OPS)))
        form = draw(st.sampled_from(["plain", "flipped", "chained", "between"]))
        if form == "flipped":
            flip = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
            return ("cmp", name, op, const), f"({text} {flip[op]} {name})"
        if form in ("chained", "between"):
            text2, const2 = draw(st.sampled_from(consts))
            node = ("and", ("cmp", name, ">=", const), ("cmp", name, "<=", const2))
            if form == "chained":
                return node, f"({text} <= {name} <= {text2})"
            return node, f"between({name}, {text}, {text2})"
        return ("cmp", name, op, const), f"({name} {op} {text})"
    if what == "isin":
        if kind.fixed and kind.dtype[0] in "iuf":      # values no item equals
            consts += [("None", None), ("'x'", "x"), ("b'x'", b"x")]
        chosen = draw(st.lists(st.sampled_from(consts), max_size=3))
        return (("isin", name, tuple(c for _, c in chosen)),
                f"isin({name}, [{', '.join(t for t, _ in chosen)}])")
    if what == "startswith":
        prefix = draw(st.sampled_from(kind.prefixes))
        return ("startswith", name, prefix), f"startswith({name}, {prefix!r})"
    if what == "truth":
        return ("truth", name), name
    null = draw(st.sampled_from(["isnull", "notnull"]))
    node = ("isnull", name)
    return (node, f"isnull({name})") if null == "isnull" else (("not", node),
                                                                 f"notnull({name})")


@st.composite
def conditions(draw, names, depth=2):
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        return draw(leaves(names))
    how = draw(st.sampled_from(["and", "or", "xor", "not", "and"]))
    if how == "not":
        node, text = draw(conditions(names, depth - 1))
        return ("not", node), f"~({text})"
    left, ltext = draw(conditions(names, depth - 1))
    right, rtext = draw(conditions(names, depth - 1))
    sign = {"and": "&", "or": "|", "xor": "^"}[how]
    return (how, left, right), f"({ltext} {sign} {rtext})"


def _user_dict():
    out = {"nan": float("nan"), "inf": float("inf")}
    for kind in KINDS:
        for text, value in kind.consts.items():
            if text.isidentifier() and text not in ("nan", "inf", "True", "False"):
                out[text] = value
    return out


USER_DICT = _user_dict()


# ------------------------------------------------------------------ the tables

def _column_names(kinds):
    return [k.name for k in kinds]


@st.composite
def rows(draw, kinds, min_size=0, max_size=40):
    n = draw(st.integers(min_size, max_size))
    return [{k.name: draw(st.sampled_from(k.values)) for k in kinds} for _ in range(n)]


def _build(root, kinds, model_rows, chunklen):
    cols = [k.column([r[k.name] for r in model_rows], chunklen) for k in kinds]
    return bcolz.ctable(cols, names=_column_names(kinds), rootdir=root, mode="w",
                        chunklen=chunklen)


def _append(t, kinds, new):
    t.append([tuple(r[k.name] for k in kinds) for r in new])


def _indexes(t, kinds):
    made = []
    for k in kinds:
        try:
            t.create_index(k.name)
            made.append(k.name)
        except (TypeError, ValueError):
            pass
    return made


def _answers(t, text):
    """``(positions by where, count by t[cond], count by whereblocks, eval mask)``."""
    found = [r[0] for r in t.where(text, outcols=["nrow__"], user_dict=USER_DICT)]
    blocks = sum(len(b) for b in t.whereblocks(text, blen=7, user_dict=USER_DICT))
    mask = t.eval(text, user_dict=USER_DICT, out_flavor="numpy")
    # (t[cond] reads the caller's variables: those of this evaluation)
    count = eval("len(t[text])", {}, {**USER_DICT, "t": t, "text": f"({text})"})
    return found, count, blocks, np.flatnonzero(mask).tolist()


def _named(node) -> set:
    """The columns a condition's tree names."""
    if node[0] == "not":
        return _named(node[1])
    if node[0] in ("and", "or", "xor"):
        return _named(node[1]) | _named(node[2])
    return {node[1]}


def _same_item(kind, got, want) -> bool:
    """A row's item as where() gives it against the model's item: a null is
    numpy.ma.masked in a nullable fixed column, None in a column of objects."""
    if want is None:
        return got is (np.ma.masked if kind.fixed else None)
    if kind.name in ("lst",):
        return list(got) == want
    if kind.fixed:
        want = _fixed_item(kind, want)
        if kind.dtype[0] in "fMm" and np.isnan(want):
            return bool(np.isnan(got))
    return bool(got == want)


def _check_rows(t, kinds, model_rows, text, expected):
    """The items of the rows where() gives (the first few)."""
    names = _column_names(kinds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = list(t.where(text, outcols=["nrow__"] + names, limit=5, user_dict=USER_DICT))
    assert [r[0] for r in rows] == expected[:5], text
    for row in rows:
        for k, got in zip(kinds, row[1:]):
            assert _same_item(k, got, model_rows[row[0]][k.name]), (text, k.name, row)


def _check(t, kinds, model_rows, node, text):
    expected = [i for i, r in enumerate(model_rows) if model(node, r) is True]
    plan = t.explain(text, user_dict=USER_DICT)
    ASKED["conditions"] += 1
    for name in {n for n in _column_names(kinds) if n in _named(node)}:
        ASKED["named:" + name] += 1
    ASKED["planned" if plan.strategy == "statistics" else
          "indexed" if plan.strategy == "index" else "scans"] += 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        planned = _answers(t, text)
        with bcolz.defaults_ctx(query_planning=False):
            scanned = _answers(t, text)
    want = (expected, len(expected), len(expected), expected)
    assert scanned == want, f"scanned {text} ({plan.strategy})"
    assert planned == want, f"planned ({plan.strategy}) {text}"
    _check_rows(t, kinds, model_rows, text, expected)


@settings(max_examples=_examples(), deadline=None, phases=PHASES,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_conditions_answer_as_the_model(data, monkeypatch):
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_ROWS", 0)
    monkeypatch.setattr(ctable_plan, "MIN_SKIP_FRACTION", 0)
    monkeypatch.setattr(ctable_plan, "INDEX_MAX_FRACTION", 1.0)
    monkeypatch.setattr(ctable_plan, "INDEX_ROW_COST", 0)
    kinds = data.draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=5,
                               unique_by=lambda k: k.name), label="kinds")
    chunklen = data.draw(st.sampled_from([3, 4, 8]), label="chunklen")
    model_rows = data.draw(rows(kinds), label="rows")
    root = tempfile.mkdtemp(prefix="oracle")
    try:
        t = _build(root + "/t", kinds, model_rows, chunklen)
        if data.draw(st.booleans(), label="indexes first"):
            _indexes(t, kinds)
        for _ in range(data.draw(st.integers(0, 4), label="changes")):
            change = data.draw(st.sampled_from(["append", "trim", "set", "reopen"]))
            if change == "append":
                new = data.draw(rows(kinds, 1, 12))
                _append(t, kinds, new)
                model_rows += new
            elif change == "trim" and model_rows:
                k = data.draw(st.integers(1, min(len(model_rows), 6)))
                t.trim(k)
                del model_rows[len(model_rows) - k:]
            elif change == "set" and model_rows:
                i = data.draw(st.integers(0, len(model_rows) - 1))
                new = data.draw(rows(kinds, 1, 1))[0]
                t[i] = tuple(new[k.name] for k in kinds)
                model_rows[i] = new
            elif change == "reopen":
                t.flush()
                t = bcolz.open(root + "/t", mode="a")
        t.flush()
        if data.draw(st.booleans(), label="indexes last"):
            _indexes(t, kinds)
        ASKED["tables"] += 1
        for k in kinds:
            ASKED["kind:" + k.name] += 1
        names = _column_names(kinds)
        for _ in range(CONDITIONS_PER_TABLE):
            node, text = data.draw(conditions(names), label="condition")
            _check(t, kinds, model_rows, node, text)
    finally:
        shutil.rmtree(root, ignore_errors=True)
