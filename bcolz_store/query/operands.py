"""The variables of an expression as :func:`bcolz_store.query.eval.evaluate`
reads them: row operands (carrays, numpy arrays), sliced block by block, and
the rest (scalars, functions).

A block of a nullable column stays a masked array, so that its nulls satisfy
no comparison (docs/nulls.md); a nullable column of objects (decimals,
structs: None for a null) becomes one too.  A block of a vlen column is an
operand whose missing items compare false (:func:`.strings.as_operand`).
"""

from __future__ import annotations

import ast
import math
import operator
import re

import numpy as np

from ..errors import QueryError
from .strings import as_operand, fixed_bytes_operand, is_vlen_operand

__all__ = ["BLOCK_BYTES", "NULLS", "Operands"]

#: The key of a block's variables under which :meth:`Operands.block` puts the
#: rows where a nullable operand is null, when its nulls are split off (not a
#: Python name: no expression can name it).
NULLS = " nulls"

# Bytes of operand rows evaluated in one go, per engine.  Blocks of about 2 MB
# stay in the CPU's caches between decoding and evaluating, and are the unit
# the thread pool evaluates in parallel (measured: a 5-million-row query
# condition over two columns takes 8% less time than with bcolz's 8 MB
# blocks on one thread).  dask keeps bcolz's figure.
BLOCK_BYTES = {"numexpr": 2 ** 21, "python": 2 ** 21, "dask": 2 ** 25}


def _is_chunked(value) -> bool:
    """True for a carray (or anything read as one: chunklen, dtype, shape)."""
    return all(hasattr(value, name) for name in ("chunklen", "dtype", "shape")) and \
        not isinstance(value, np.ndarray)


def _is_sequence(value) -> bool:
    if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
        return False
    return not (isinstance(value, np.ndarray) and value.ndim == 0)


def _only_null_tests(expression: str, name: str) -> None:
    """Refuse a list column ``name`` used in ``expression`` other than as
    ``isnull(name)`` or ``notnull(name)`` (lists are not comparable).

    Raises
    ------
    QueryError
        Naming the column.
    """
    word = re.escape(name)
    rest = re.sub(rf"\b(?:isnull|notnull)\s*\(\s*{word}\s*\)", "", expression)
    if re.search(rf"(?<![\w.]){word}(?!\w)", rest):
        raise QueryError(f"{name!r} in {expression!r} holds lists (or maps), which are not "
                         f"comparable; only isnull({name}) and notnull({name}) test it")


class Operands:
    """The expression's variables, split in row operands (sliced per block) and the rest."""

    def __init__(self, expression: str, variables: dict):
        self.variables = variables
        self.vlen = set()       # columns of variable-length items: 'python' engine only
        self.coded = {}         # categorical columns compared by their codes: name -> table
        self.split_nulls = False    # nullable blocks as their values + NULLS (see block)
        self.nullable = set()   # nullable columns: masked blocks, 'python' engine only
        self.rows = {}
        self.nrows = None
        self.chunklen = 0
        self.rowbytes = 0
        for name, value in variables.items():
            if not _is_sequence(value):
                continue
            if isinstance(value, np.ndarray):
                if value.dtype.kind == "O":
                    raise QueryError(
                        f"variable {name!r} of {expression!r} is an object array; only "
                        "numeric, bool, string and datetime arrays can be evaluated")
                rowbytes = value.dtype.itemsize * math.prod(value.shape[1:])
            elif _is_chunked(value):
                if getattr(value, "listtype", None) is not None:
                    _only_null_tests(expression, name)
                    self.vlen.add(name)
                rowbytes = value.dtype.itemsize * math.prod(value.shape[1:])
                self.chunklen = max(self.chunklen, value.chunklen)
                if is_vlen_operand(value):
                    self.vlen.add(name)
                if getattr(value, "nullable", False) is True:
                    self.nullable.add(name)
            elif not hasattr(value, "dtype"):
                raise QueryError(
                    f"variable {name!r} of {expression!r} is a {type(value).__name__}: only "
                    "numpy/carray sequences supported")
            else:
                raise QueryError(
                    f"variable {name!r} of {expression!r} is a {type(value).__name__}: only "
                    "numpy/carray objects supported")
            if self.nrows is not None and len(value) != self.nrows:
                raise QueryError(
                    f"arrays must have the same length: {name!r} has {len(value)} rows, "
                    f"others have {self.nrows} (evaluating {expression!r})")
            self.nrows = len(value)
            self.rows[name] = value
            self.rowbytes += max(int(rowbytes), 1)
        for name in _compared_only(expression, set(self.rows) - self.nullable):
            table = _category_table(self.rows[name])
            if table is not None:
                self.coded[name] = table

    def has_bytes(self) -> bool:
        """Whether a variable holds fixed bytes (``S``) items or is a bytes constant."""
        return any(isinstance(v, (bytes, np.bytes_)) or
                   getattr(getattr(v, "dtype", None), "kind", None) == "S"
                   for v in self.variables.values())

    def has_small_floats(self) -> bool:
        """Whether a row operand holds float16 or float32 items."""
        return any(getattr(v, "dtype", np.dtype("f8")).kind == "f" and
                   getattr(v, "dtype", np.dtype("f8")).itemsize < 8
                   for v in self.rows.values())

    def uses_uint64(self) -> bool:
        return any(getattr(v, "dtype", None) == np.uint64 for v in self.variables.values())

    def default_blen(self, vm: str) -> int:
        blen = max(BLOCK_BYTES[vm] // max(self.rowbytes, 1), 1)
        if self.chunklen:
            # Whole chunks per block: every chunk is decompressed once.
            blen = max(blen // self.chunklen, 1) * self.chunklen
        return blen

    def can_split_nulls(self) -> bool:
        """Whether every nullable row operand is a column of numbers or
        booleans (its blocks can be split in values and nulls)."""
        return bool(self.nullable) and not (self.nullable & (self.vlen | set(self.coded))) \
            and all(np.dtype(self.rows[n].dtype).kind in "biuf" for n in self.nullable)

    def block(self, start: int, stop: int) -> dict:
        """The variables over rows ``start:stop``.  With ``split_nulls``, the
        blocks of nullable columns are their plain values (nulls holding
        whatever they hold) and ``out[NULLS]`` is the boolean array of the
        rows where any of them is null (None when none is)."""
        out = dict(self.variables)
        if self.split_nulls:
            nulls = None
            for name in self.nullable:
                block = self.rows[name][start:stop]
                mask = np.ma.getmaskarray(block)
                if mask.ndim > 1:
                    mask = mask.reshape(len(mask), -1).any(axis=1)
                nulls = mask if nulls is None else nulls | mask
                out[name] = np.ma.getdata(block)
            out[NULLS] = nulls if nulls is not None and nulls.any() else None
        for name, value in self.rows.items():
            if self.split_nulls and name in self.nullable:
                continue
            if name in self.coded:
                out[name] = CodedItems(np.asarray(value.codes[start:stop]), self.coded[name])
                continue
            block = value[start:stop]
            # a nullable column's block stays masked: its nulls satisfy no comparison
            out[name] = block if name in self.nullable else np.asarray(block)
            if name in self.nullable and name not in self.vlen:
                out[name] = _masked_objects(out[name])
            if name in self.vlen:
                out[name] = as_operand(out[name])
            else:
                out[name] = fixed_bytes_operand(out[name])
        return out


def _masked_objects(block):
    """A nullable column's block of objects (decimals, structs: None for a
    null) as a masked array whose nulls hold a present item, so that they
    compare (and are then false) as a nullable fixed column's nulls."""
    if isinstance(block, np.ma.MaskedArray) or not isinstance(block, np.ndarray) or \
            block.dtype.kind != "O" or block.ndim != 1:
        return block
    mask = np.fromiter((v is None for v in block.tolist()), dtype=bool, count=len(block))
    if not mask.any():
        return block
    data = block.copy()
    present = np.flatnonzero(~mask)
    data[mask] = data[present[0]] if len(present) else 0
    return np.ma.masked_array(data, mask=mask)




# ------------------------------------------------------ categorical columns

def _category_table(value):
    """A categorical carray's categories followed by a missing item, as a
    block of the column is evaluated (:func:`.strings.as_operand`), or None
    for any other column."""
    category = getattr(value, "category", None)
    if category is None or not hasattr(value, "codes"):
        return None
    table = np.empty(len(category.categories or ()) + 1, dtype=value.dtype)
    table[:-1] = list(category.categories or ())
    table[-1] = None
    return as_operand(table)


_TEXT = (str, bytes)


def _compared_only(expression: str, names: set) -> set:
    """The ``names`` that ``expression`` uses only in single comparisons
    with a str or bytes constant (``sym == 'AAPL'``, ``'M' < sym``)."""
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        return set()
    allowed, seen = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in names:
            seen.add(id(node))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            left, right = node.left, node.comparators[0]
            for one, other in ((left, right), (right, left)):
                if isinstance(one, ast.Name) and isinstance(other, ast.Constant) and \
                        isinstance(other.value, _TEXT):
                    allowed.add(id(one))
    found = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in names}
    return {name for name in found
            if all(id(n) in allowed for n in ast.walk(tree)
                   if isinstance(n, ast.Name) and n.id == name)}


class CodedItems:
    """A block of a categorical column as its codes: a comparison is made
    once per category (on the table of categories plus a missing item, as
    the decoded items would be compared) and then taken by the codes, so the
    block's items are never built.  The result is the decoded block's, item
    for item."""

    def __init__(self, codes: np.ndarray, table: np.ndarray):
        self.codes = codes
        self.table = table

    def __len__(self) -> int:
        return len(self.codes)

    def _compare(self, other, op):
        found = np.asarray(op(self.table, other), dtype=bool)
        n = len(self.table) - 1
        return found[np.where(self.codes < 0, n, self.codes)]

    def __eq__(self, other):
        return self._compare(other, operator.eq)

    def __ne__(self, other):
        return self._compare(other, operator.ne)

    def __lt__(self, other):
        return self._compare(other, operator.lt)

    def __le__(self, other):
        return self._compare(other, operator.le)

    def __gt__(self, other):
        return self._compare(other, operator.gt)

    def __ge__(self, other):
        return self._compare(other, operator.ge)

    __hash__ = None
