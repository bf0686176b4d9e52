"""The variables of an expression as :func:`bcolz_store.query.eval.evaluate`
reads them: row operands (carrays, numpy arrays), sliced block by block, and
the rest (scalars, functions).

A block of a nullable column stays a masked array, so that its nulls satisfy
no comparison (docs/nulls.md); a nullable column of objects (decimals,
structs: None for a null) becomes one too.  A block of a vlen column is an
operand whose missing items compare false (:func:`.strings.as_operand`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ..errors import QueryError
from .strings import as_operand, fixed_bytes_operand, is_vlen_operand

__all__ = ["BLOCK_BYTES", "Operands"]

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

    def block(self, start: int, stop: int) -> dict:
        out = dict(self.variables)
        for name, value in self.rows.items():
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


