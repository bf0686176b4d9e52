"""Conditions as predicate trees, and what chunk statistics prove about them.

A condition (``'(price > 10) & startswith(name, "A")'``) is read into a tree
(:func:`parse_condition`) whose leaves are predicates on one column with a
constant -- comparisons (either order), ``isin``, ``startswith``,
``isnull``/``notnull``, a boolean column -- and whose inner nodes are ``&``,
``|``, ``^`` and ``~``.  Any other boolean part (arithmetic on columns, a
column against a column, other functions) is an :class:`Opaque` leaf: it may
match anywhere.  What the engines cannot evaluate, or could evaluate
differently from block to block (reductions, Python's ``and``/``or``/``not``,
arrays that are not columns), raises :class:`Unplannable`: such a condition
is evaluated by a plain scan, which raises the same errors as always.

Against a column's chunk statistics (a
:class:`~bcolz_store.chunks.stats.ColumnStats`), a leaf gives each chunk one
of three states (:func:`leaf_states`): ``NONE`` (no row matches), ``ALL``
(every row matches) or ``SOME`` (the rows must be read); unknown statistics
give ``SOME``.  The tree combines them as Kleene's logic does (``&`` the
least, ``|`` the greatest, ``~`` swaps ``NONE`` and ``ALL``), so a state is
a proof about every row of the chunk and the planner may skip a ``NONE``
chunk and take an ``ALL`` one unread.

The leaves follow the engines' semantics exactly:

- comparisons are numpy's, evaluated on the chunks' least and greatest items
  converted as numpy converts the column's items (a comparison is monotone in
  the item, so the extremes decide); float32 and float16 columns are also
  compared in float64, numexpr's way, and a state holds only when both agree;
- a missing item (NaN, NaT; None in a vlen or categorical column) matches a
  comparison as numpy's does for one missing item: never, except NaN and NaT
  for ``!=``;
- ``isin``, ``startswith`` and ``isnull`` are those of
  :mod:`bcolz_store.query.strings`; a categorical column's leaf is evaluated
  on its categories, once, giving the codes that match, which the statistics
  of the codes then bound.

A constant of a type the column's engine might refuse only for some items (a
str compared with bytes items, a bytes prefix for str items) makes the
condition unplannable, so that the scan raises, or not, as it always has.
"""

from __future__ import annotations

import ast
import bisect
import decimal as _dec
import operator
import warnings
from typing import NamedTuple

import numpy as np

from .strings import STRING_FUNCTIONS, as_operand, fixed_bytes_operand

__all__ = ["ALL", "Both", "ColumnInfo", "ELEMENTWISE", "Leaf", "NONE", "Not", "Opaque", "SOME",
           "Unplannable", "category_matches", "combine_states", "leaf_states", "parse_condition"]

NONE, SOME, ALL = 0, 1, 2

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_APPLY = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
          "==": operator.eq, "!=": operator.ne}

#: Functions evaluated item by item (a row's result depends on that row only):
#: the only calls a planned condition may hold.  Reductions (``sum``,
#: ``min``...) and Python's conversions are not: their result would depend on
#: the rows evaluated together.
ELEMENTWISE = frozenset({
    "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "ceil",
    "conj", "copy", "copysign", "cos", "cosh", "exp", "expm1", "floor", "fmod", "hypot", "imag",
    "isfinite", "isinf", "isnan", "log", "log10", "log1p", "log2", "maximum", "minimum",
    "nextafter", "ones_like", "real", "round", "sign", "signbit", "sin", "sinh", "sqrt", "tan",
    "tanh", "trunc", "where"}) | frozenset(STRING_FUNCTIONS)

# Elementwise functions whose result is boolean (they may stand as a condition).
_BOOLEAN_FUNCTIONS = frozenset({"isfinite", "isinf", "isnan", "signbit"}) | \
    frozenset(STRING_FUNCTIONS)


class Unplannable(Exception):
    """The condition is not planned (the message says why): a scan evaluates it."""


class ColumnInfo(NamedTuple):
    """What a leaf needs to know of its column.

    Attributes
    ----------
    name : str
    dtype : numpy.dtype
        The dtype of the items read (StringDType or object for vlen and
        categorical columns).
    ndim : int
        1 for columns of scalars.
    text : str or None
        'str' or 'bytes' for vlen and categorical columns, else None.
    stats : ColumnStats or None
        The chunk statistics (None: none kept).
    categories : numpy.ndarray or None
        A categorical column's categories, as items of ``dtype``.
    nullable : bool
        A nullable column (its nulls match no comparison; a condition that
        compares it is false on them).
    decimal : int or None
        A decimal column's scale (its items are ``decimal.Decimal``), else None.
    """

    name: str
    dtype: np.dtype
    ndim: int
    text: str | None
    stats: object
    categories: np.ndarray | None
    nullable: bool = False
    decimal: int | None = None


class Leaf(NamedTuple):
    """A predicate on one column: ``kind`` 'cmp' (``column op value``),
    'isin' (``value``: a tuple), 'startswith', 'isnull' or 'truth' (a
    boolean column as the condition)."""

    kind: str
    column: str
    op: str | None
    value: object
    text: str


class Opaque(NamedTuple):
    """A boolean part the statistics say nothing about (it may match anywhere)."""

    text: str


class Not(NamedTuple):
    """``~child``."""

    child: object


class Both(NamedTuple):
    """``left & right`` ('and'), ``left | right`` ('or'), ``left ^ right`` ('xor')."""

    op: str
    left: object
    right: object


# ------------------------------------------------------------------- reading

class _Parser:
    """Reads a (desugared) condition; see :func:`parse_condition`."""

    def __init__(self, columns: dict, scalars: dict, functions: set):
        self.columns, self.scalars, self.functions = columns, scalars, functions
        self.read = set()           # columns the condition reads

    def condition(self, node):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr,
                                                                ast.BitXor)):
            op = {ast.BitAnd: "and", ast.BitOr: "or", ast.BitXor: "xor"}[type(node.op)]
            return Both(op, self.condition(node.left), self.condition(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return Not(self.condition(node.operand))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            return self.comparison(node)
        if isinstance(node, ast.Call) and self.function(node) in _BOOLEAN_FUNCTIONS:
            return self.call(node)
        if isinstance(node, ast.Name) and node.id in self.columns:
            info = self.column(node)
            if info.dtype.kind == "b":
                return Leaf("truth", node.id, None, None, node.id)
        raise Unplannable(f"{ast.unparse(node)!r} is not a condition the planner reads")

    def column(self, node) -> ColumnInfo:
        info = self.columns[node.id]
        if info.ndim != 1:
            raise Unplannable(f"column {node.id!r} holds arrays")
        if info.dtype.kind == "O" and info.text is None and info.decimal is None:
            raise Unplannable(f"column {node.id!r} holds objects")   # (compared one by one)
        self.read.add(node.id)
        return info

    def constant(self, node):
        """``(True, value)`` for a constant (a literal, a signed number, a scalar
        variable), else ``(False, None)``."""
        if isinstance(node, ast.Constant) and node.value is not Ellipsis:
            return True, node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and \
                isinstance(node.operand, ast.Constant) and \
                type(node.operand.value) in (int, float):
            value = node.operand.value
            return True, -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Name) and node.id in self.scalars:
            return True, self.scalars[node.id]
        return False, None

    def comparison(self, node):
        left, right = node.left, node.comparators[0]
        op = _OPS[type(node.ops[0])]
        text = ast.unparse(node)
        for col, other, which in ((left, right, op), (right, left, _FLIP[op])):
            if isinstance(col, ast.Name) and col.id in self.columns:
                known, value = self.constant(other)
                if known:
                    self.column(col)
                    return Leaf("cmp", col.id, which, value, text)
        self.value(left)
        self.value(right)
        return Opaque(text)

    def function(self, node):
        func = node.func
        if isinstance(func, ast.Name) and func.id in self.functions and \
                func.id in ELEMENTWISE and not node.keywords and \
                not any(isinstance(a, ast.Starred) for a in node.args):
            return func.id
        return None

    def call(self, node):
        name, args, text = self.function(node), node.args, ast.unparse(node)
        col = args[0] if args and isinstance(args[0], ast.Name) and \
            args[0].id in self.columns else None
        if col is not None and name in ("startswith", "endswith", "contains") and \
                len(args) == 2:
            self.text_argument(self.column(col), args[1], text)
        if col is not None and name in ("isnull", "notnull") and len(args) == 1:
            self.column(col)
            leaf = Leaf("isnull", col.id, None, None, text)
            return leaf if name == "isnull" else Not(leaf)
        if col is not None and name == "startswith" and len(args) == 2:
            known, value = self.constant(args[1])
            if known:
                self.column(col)
                return Leaf("startswith", col.id, None, value, text)
        if col is not None and name == "isin" and len(args) == 2 and \
                isinstance(args[1], (ast.List, ast.Tuple, ast.Set)):
            values = [self.constant(e) for e in args[1].elts]
            if all(known for known, _ in values):
                self.column(col)
                return Leaf("isin", col.id, None, tuple(v for _, v in values), text)
        self.value(node)
        return Opaque(text)

    def text_argument(self, info: ColumnInfo, node, text: str) -> None:
        """A prefix, suffix or part of the column's own text type: the engine
        refuses another only item by item (missing items are not tested)."""
        known, value = self.constant(node)
        kind = info.text or {"U": "str", "S": "bytes"}.get(info.dtype.kind)
        if not known or kind is None or \
                not isinstance(value, {"str": str, "bytes": bytes}[kind]):
            raise Unplannable(f"{text!r}: not a {kind or 'text'} constant for a column of "
                              f"{info.dtype}")

    def value(self, node) -> None:
        """Check that ``node`` is a value every engine evaluates row by row."""
        if isinstance(node, ast.Constant):
            return
        if isinstance(node, ast.Name):
            if node.id in self.columns:
                self.column(node)
            elif node.id not in self.scalars:
                raise Unplannable(f"{node.id!r} is neither a column nor a scalar")
            return
        if isinstance(node, ast.BinOp):
            self.value(node.left)
            self.value(node.right)
            return
        if isinstance(node, ast.UnaryOp) and not isinstance(node.op, ast.Not):
            self.value(node.operand)
            return
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            self.value(node.left)
            self.value(node.comparators[0])
            return
        if isinstance(node, ast.Call) and self.function(node):
            for arg in node.args:
                if isinstance(arg, (ast.List, ast.Tuple, ast.Set)):
                    for item in arg.elts:
                        self.value(item)
                else:
                    self.value(arg)
            return
        raise Unplannable(f"{ast.unparse(node)!r} is not evaluated row by row")


def parse_condition(tree: ast.AST, columns: dict, scalars: dict, functions: set) -> tuple:
    """The predicate tree of a condition, and the columns it reads.

    Parameters
    ----------
    tree : ast.Expression
        The condition, with chained comparisons and ``between`` rewritten
        (:func:`bcolz_store.query.rewrite.desugar`).
    columns : dict
        ``name -> ColumnInfo`` of the table's columns the condition names.
    scalars : dict
        ``name -> value`` of the other variables (scalars) it names.
    functions : set
        The names it calls that are the engine's functions.

    Returns
    -------
    (tree, set of str)

    Raises
    ------
    Unplannable
        When the condition is not one the planner may read.
    """
    parser = _Parser(columns, scalars, functions)
    body = tree.body if isinstance(tree, ast.Expression) else tree
    return parser.condition(body), parser.read


# ------------------------------------------------------------ the statistics

def _compare(values, op: str, constant) -> np.ndarray:
    result = _APPLY[op](fixed_bytes_operand(values), constant)
    if not isinstance(result, np.ndarray) or result.shape != np.shape(values):
        raise Unplannable(f"comparing with {constant!r} does not give one boolean per item")
    return np.asarray(result, dtype=bool)


def _bounds(op: str, lo, hi, constant) -> tuple:
    """``(any, all)``: whether some item in ``[lo, hi]`` may satisfy ``x op
    constant``, and whether every item does (per chunk)."""
    if op in ("<", "<="):
        return _compare(lo, op, constant), _compare(hi, op, constant)
    if op in (">", ">="):
        return _compare(hi, op, constant), _compare(lo, op, constant)
    inside = _compare(lo, "<=", constant) & _compare(hi, ">=", constant)
    same = _compare(lo, "==", constant) & _compare(hi, "==", constant)
    if op == "==":
        return inside, same
    return ~same, ~inside


def _fits(info: ColumnInfo, value) -> bool:
    """Whether ``value`` is a constant the column's items compare with, for
    every item alike."""
    if info.decimal is not None:    # exact comparisons of Decimal with int, float, Decimal
        if isinstance(value, bool) or not isinstance(value, (int, float, _dec.Decimal)):
            return False
        return not (isinstance(value, _dec.Decimal) and value.is_nan() or
                    isinstance(value, float) and value != value)
    if info.text == "str" or info.dtype.kind == "U":
        return isinstance(value, str)
    if info.text == "bytes" or info.dtype.kind == "S":
        return isinstance(value, bytes)
    kind = info.dtype.kind
    if kind in "biuf":
        return isinstance(value, (int, float, np.integer, np.floating, np.bool_))
    if kind == "M":
        return isinstance(value, np.datetime64)
    if kind == "m":
        return isinstance(value, (np.timedelta64, np.integer)) or \
            (isinstance(value, int) and not isinstance(value, bool))
    return False


def _missing_item(info: ColumnInfo):
    """One missing item, as the engine sees it (None: the kind has none)."""
    if info.text is not None:
        return as_operand(np.array([None], dtype=info.dtype))
    if info.dtype.kind == "f":
        return np.array([np.nan], dtype=info.dtype)
    if info.dtype.kind in "Mm":
        return np.array(["NaT"], dtype=info.dtype)
    return None


def _extremes(info: ColumnInfo, present: np.ndarray) -> tuple:
    """The chunks' least and greatest items as arrays the engine compares as
    it compares the column's items (a placeholder where no item is present)."""
    stats = info.stats
    lo, hi = stats.mins, stats.maxs
    if lo.dtype.kind != "O":
        return lo.astype(info.dtype), hi.astype(info.dtype)
    where = np.flatnonzero(present)
    fill = lo[where[0]] if len(where) else (
        _dec.Decimal(0) if info.decimal is not None else
        "" if info.text == "str" or info.dtype.kind == "U" else b"")
    lo, hi = lo.copy(), hi.copy()
    lo[~present] = fill
    hi[~present] = fill
    if info.text is not None:
        return (as_operand(np.array(lo.tolist(), dtype=info.dtype)),
                as_operand(np.array(hi.tolist(), dtype=info.dtype)))
    return np.array(lo.tolist(), dtype=info.dtype), np.array(hi.tolist(), dtype=info.dtype)


def _comparison(leaf: Leaf, info: ColumnInfo, present) -> tuple:
    if not _fits(info, leaf.value):
        raise Unplannable(f"{leaf.text!r}: {type(leaf.value).__name__} constant for a column "
                          f"of {info.dtype}")
    lo, hi = _extremes(info, present)
    missing = _missing_item(info)
    ways = [(lo, hi, leaf.value, missing)]
    if info.dtype.kind == "f" and info.dtype.itemsize < 8:     # numexpr compares in float64
        ways.append((lo.astype(np.float64), hi.astype(np.float64), np.float64(leaf.value),
                     None if missing is None else missing.astype(np.float64)))
    some, every = np.zeros(len(lo), bool), np.ones(len(lo), bool)
    miss_some, miss_every = False, True
    for lo_, hi_, constant, miss in ways:
        may, must = _bounds(leaf.op, lo_, hi_, constant)
        some |= may
        every &= must
        hit = bool(_compare(miss, leaf.op, constant)[0]) if miss is not None else False
        miss_some, miss_every = miss_some or hit, miss_every and hit
    return some, every, miss_some, miss_every


def _isin(leaf: Leaf, info: ColumnInfo, present):
    """Per chunk ``(any, all, missing, missing)``, or None when the values are
    not ones the statistics can bound."""
    kind = info.dtype.kind
    try:
        wanted = set(leaf.value)
    except TypeError as err:
        raise Unplannable(f"{leaf.text!r}: {err}") from None
    if info.text == "str" or kind == "U":
        if info.text == "str" and not all(isinstance(v, str) for v in wanted):
            return None             # numpy turns them into str
        keep = [v for v in wanted if isinstance(v, str)]
        if info.text is None:       # numpy's equality of str items: trailing NULs stripped
            keep = [v.rstrip("\x00") for v in keep]
            wanted = set(keep)
    elif info.text == "bytes":
        keep = [v for v in wanted if isinstance(v, bytes)]
    elif kind == "S":               # numpy's equality: trailing NULs stripped
        keep = [v.rstrip(b"\x00") for v in wanted if isinstance(v, bytes)]
        wanted = set(keep)
    elif kind == "f" and info.dtype.itemsize < 8:
        return None                 # numpy compares a float constant in the column's precision
    elif kind in "biuf":
        keep = []
        for v in wanted:
            if isinstance(v, (str, bytes)) or v is None:
                continue            # never equal to a number
            if isinstance(v, (bool, np.bool_)):
                keep.append(bool(v))
            elif isinstance(v, (int, np.integer)):
                keep.append(int(v))
            elif isinstance(v, float):      # (np.float64 too)
                if v == v:
                    keep.append(float(v))
            else:
                return None
    else:
        return None
    keep.sort()
    lo, hi = info.stats.mins.tolist(), info.stats.maxs.tolist()
    some = np.zeros(len(lo), bool)
    every = np.zeros(len(lo), bool)
    for n in np.flatnonzero(present).tolist():
        i = bisect.bisect_left(keep, lo[n])
        some[n] = i < len(keep) and keep[i] <= hi[n]
        every[n] = lo[n] == hi[n] and lo[n] in wanted
    return some, every, False, False


def _startswith(leaf: Leaf, info: ColumnInfo, present) -> tuple:
    prefix = leaf.value
    text = info.text or {"U": "str", "S": "bytes"}.get(info.dtype.kind)
    if text is None or not isinstance(prefix, {"str": str, "bytes": bytes}[text]):
        raise Unplannable(f"{leaf.text!r}: a {type(prefix).__name__} prefix for a column of "
                          f"{info.dtype}")
    lo, hi = info.stats.mins.tolist(), info.stats.maxs.tolist()
    some = np.zeros(len(lo), bool)
    every = np.zeros(len(lo), bool)
    for n in np.flatnonzero(present).tolist():
        some[n] = not (hi[n] < prefix or (lo[n] > prefix and not lo[n].startswith(prefix)))
        every[n] = lo[n].startswith(prefix) and hi[n].startswith(prefix)
    return some, every, False, False


def _on_items(leaf: Leaf, items):
    """The leaf evaluated on ``items`` (an operand), as the engine does."""
    if leaf.kind == "cmp":
        return _compare(items, leaf.op, leaf.value)
    func = STRING_FUNCTIONS[leaf.kind]
    args = (items,) if leaf.kind == "isnull" else (items, leaf.value)
    result = np.asarray(func(*args))
    if result.dtype != bool or result.shape != items.shape:
        raise Unplannable(f"{leaf.text!r} does not give one boolean per item")
    return result


def category_matches(leaf: Leaf, info: ColumnInfo) -> tuple:
    """``(matches, missing)`` of a leaf on a categorical column: whether each
    category (code) matches, and whether a missing item does.

    Raises
    ------
    Unplannable
        When the engine refuses the leaf on the categories.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            matches = _on_items(leaf, as_operand(info.categories))
            missing = bool(_on_items(leaf, _missing_item(info))[0])
    except Unplannable:
        raise
    except Exception as err:    # the engine refuses it: the scan says how
        raise Unplannable(f"{leaf.text!r}: {type(err).__name__}: {err}") from None
    return matches, missing


def _categorical(leaf: Leaf, info: ColumnInfo, present) -> tuple:
    """A categorical leaf: the codes it matches, bounded by the codes' statistics."""
    matches, missing = category_matches(leaf, info)
    stats = info.stats
    lo, hi = stats.mins.astype(np.int64), stats.maxs.astype(np.int64)
    valid = present & (lo >= 0) & (hi < len(matches)) & (lo <= hi)
    lo, hi = np.where(valid, lo, 0), np.where(valid, hi, -1)
    counts = np.concatenate(([0], np.cumsum(matches, dtype=np.int64)))
    inside = counts[hi + 1] - counts[lo]
    some = np.where(valid, inside > 0, True)
    every = np.where(valid, inside == hi - lo + 1, False)
    return some, every, missing, missing


def leaf_states(leaf: Leaf, info: ColumnInfo):
    """The state (NONE, SOME, ALL) of ``leaf`` in each chunk of its column
    (an int8 array, one per entry of ``info.stats``), or None when nothing is
    known (no statistics).

    Raises
    ------
    Unplannable
        A constant of a type the column's items might refuse.
    """
    stats = info.stats
    if leaf.kind == "isnull" and info.nullable and info.decimal is None and \
            info.dtype.kind not in "biu":
        return None     # its nulls' count holds its present NaN/NaT too
    if leaf.kind == "isnull" and info.text is None and info.dtype.kind not in "OT" and \
            not info.nullable:
        return None if stats is None else np.zeros(len(stats.starts), np.int8)  # never null
    if stats is None:
        return None
    count = stats.stops - stats.starts
    present = stats.known & (count > stats.nulls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if info.categories is not None:
                found = _categorical(leaf, info, present)
            elif leaf.kind == "cmp":
                found = _comparison(leaf, info, present)
            elif leaf.kind == "isin":
                found = _isin(leaf, info, present)
            elif leaf.kind == "startswith":
                found = _startswith(leaf, info, present)
            elif leaf.kind == "isnull":
                found = (np.zeros(len(count), bool), np.zeros(len(count), bool), True, True)
            else:                   # 'truth': a boolean column
                found = _comparison(leaf._replace(op="==", value=True), info, present)
        except Unplannable:
            raise
        except Exception as err:    # the engine refuses it: the scan says how
            raise Unplannable(f"{leaf.text!r}: {type(err).__name__}: {err}") from None
    if found is None:
        return np.full(len(count), SOME, np.int8)
    some, every, miss_some, miss_every = found
    nulls = stats.nulls
    some = (present & some) | ((nulls > 0) & miss_some)
    every = (~present | every) & ((nulls == 0) | miss_every)
    out = np.where(every, ALL, np.where(some, SOME, NONE)).astype(np.int8)
    out[~stats.known] = SOME
    return out


def combine_states(node, states_of) -> np.ndarray:
    """The states of the tree ``node``, given ``states_of(leaf)`` (an int8
    array per interval; Opaque leaves included)."""
    if isinstance(node, Not):
        return (ALL - combine_states(node.child, states_of)).astype(np.int8)
    if isinstance(node, Both):
        a = combine_states(node.left, states_of)
        b = combine_states(node.right, states_of)
        if node.op == "and":
            return np.minimum(a, b)
        if node.op == "or":
            return np.maximum(a, b)
        return np.where((a == SOME) | (b == SOME), SOME,
                        np.where(a == b, NONE, ALL)).astype(np.int8)
    return states_of(node)
