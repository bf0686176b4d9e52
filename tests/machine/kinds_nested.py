"""Decimal and struct column kinds for the operation machines (models: object
arrays of ``decimal.Decimal`` or of dicts)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np

import bcolz_store
from tests.machine.kinds import _TEXT, Kind, _random_str


class Itemwise(Kind):
    """Items compared as Python objects: type and value (and a Decimal's text)."""

    itemwise = True
    where_ok = False
    frame_ok = False

    def as_input(self, values, rng):
        return values.tolist() if rng.random() < 0.5 else values

    def as_carray(self, values, rng):
        return bcolz_store.carray(values, **self.create_kwargs())

    def check(self, got, expected, what):
        got_items = list(np.asarray(got, dtype=object).ravel()) if not isinstance(got, list) \
            else got
        assert len(got_items) == len(expected), \
            f"{what}: {len(got_items)} items != {len(expected)}"
        for i, (g, w) in enumerate(zip(got_items, expected)):
            self.check_item(g, w, f"{what}[{i}]")

    def check_item(self, got, expected, what):
        if not _same(got, expected):
            raise AssertionError(f"{what}: {got!r} != {expected!r}")


def _same(got, expected) -> bool:
    if type(got) is not type(expected):
        return False
    if isinstance(got, Decimal):
        return str(got) == str(expected)
    if isinstance(got, dict):
        return list(got) == list(expected) and all(_same(got[k], expected[k]) for k in got)
    return got == expected


class DecimalKind(Itemwise):
    """``decimal(12, 2)`` items."""

    label = "decimal(12, 2)"

    def __init__(self, dflt=None):
        self.dflt = dflt

    def create_kwargs(self):
        out = {"dtype": bcolz_store.decimal(12, 2)}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def item(self, rng):
        return Decimal(int(rng.integers(-10 ** 12 + 1, 10 ** 12))).scaleb(-2)

    def values(self, rng, n):
        return np.fromiter((self.item(rng) for _ in range(n)), dtype=object, count=n)

    def filler(self, n):
        fill = self.dflt if self.dflt is not None else Decimal("0.00")
        return np.fromiter([fill] * n, dtype=object, count=n)

    def bad_values(self, n):
        return ["0.001"] * n if n else None


class StructKind(Itemwise):
    """``struct([('a', 'int32'), ('b', 'str')])`` items (text fields may be missing)."""

    label = "struct(a int32, b str)"
    dflt = None

    def create_kwargs(self):
        return {"dtype": bcolz_store.struct([("a", "int32"), ("b", "str")])}

    def item(self, rng):
        text = None if rng.random() < 0.1 else _random_str(rng, _TEXT, 8)
        return {"a": int(rng.integers(-2 ** 31, 2 ** 31)), "b": text}

    def values(self, rng, n):
        return np.fromiter((self.item(rng) for _ in range(n)), dtype=object, count=n)

    def filler(self, n):
        return np.fromiter(({"a": 0, "b": ""} for _ in range(n)), dtype=object, count=n)

    def bad_values(self, n):
        return [{"a": "x", "b": "y"}] * n if n else None


def draw_nested(rng, family: str) -> Kind:
    """A decimal or struct kind."""
    if family == "decimal":
        dflt = Decimal("1.25") if rng.random() < 0.3 else None
        return DecimalKind(dflt)
    return StructKind()
