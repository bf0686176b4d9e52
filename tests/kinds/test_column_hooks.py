"""``column_kind``: the ColumnKind class whose hooks a carray calls (kinds/base.py).

Every carray is held by at most one registered kind (ColumnKind itself for
bcolz's dtypes), also where the kind's codec takes no Arrow rows of it (a
nullable carray of a sub-array dtype, a list of lists), and a carray finds
its kinds once per metadata object.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.kinds.base import ColumnKind, column_kind, kind_of, registered

CASES = [
    ("plain", lambda: bcolz.carray(np.arange(5)), "ColumnKind"),
    ("object", lambda: bcolz.carray(np.array([1, "a"], dtype=object)), "ColumnKind"),
    ("vlen", lambda: bcolz.carray(["a", None], dtype=bcolz.vlen(str)), "VlenKind"),
    ("category", lambda: bcolz.carray(["a", "b"], dtype=bcolz.category(["a", "b"])),
     "CategoryKind"),
    ("nullable", lambda: bcolz.carray([1.0, None], nullable=True), "NullableKind"),
    ("nullable 2-d", lambda: bcolz.carray(np.zeros((3, 2)), nullable=True), "NullableKind"),
    ("decimal", lambda: bcolz.carray([1, None], dtype=bcolz.decimal(5, 2)), "DecimalKind"),
    ("struct", lambda: bcolz.carray([{"a": 1}, None],
                                    dtype=bcolz.struct([("a", "i8")], nullable=True)),
     "StructKind"),
    ("list", lambda: bcolz.carray([[1], None], dtype=bcolz.list_(np.int64)), "ListKind"),
    ("list of lists", lambda: bcolz.carray([[[1]], None],
                                           dtype=bcolz.list_(bcolz.list_(np.int64))),
     "ListKind"),
    ("fixed binary", lambda: bcolz.carray(np.zeros(2, "V4")), "FixedBinaryKind"),
    ("nullable fixed binary", lambda: bcolz.carray([b"abcd", None], dtype="V4", nullable=True),
     "NullableKind"),
]


@pytest.mark.parametrize("make, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_one_kind_holds_each_carray(make, expected):
    c = make()
    meta = c._meta
    holding = [cls.__name__ for cls in registered().values() if cls.holds(meta)]
    assert len(holding) <= 1, holding
    assert column_kind(meta).__name__ == expected
    kind = kind_of(meta)
    if kind is not None and expected != "NullableKind":     # (a V atom's codec: fixed_binary)
        assert column_kind(meta) is type(kind)


def test_plain_hooks_are_bcolz_behaviour():
    c = bcolz.carray(np.arange(4, dtype="i4"))
    assert column_kind(c._meta) is ColumnKind
    assert not c.nullable and c.vlen is None and c.listtype is None and c.category is None
    assert c.isnull().tolist() == [False] * 4
    with pytest.raises(TypeError):
        c.codes


def test_kinds_found_once_per_meta(monkeypatch):
    c = bcolz.carray(["a", "b"], dtype=bcolz.vlen(str))
    first = c.kind
    calls = []
    module = importlib.import_module("bcolz_store.carray")
    monkeypatch.setattr(module, "kind_of", lambda meta: calls.append(meta) or first)
    for _ in range(3):
        assert c.kind == first and c.vlen is not None
    assert calls == []
    c.append(["c"])
    assert calls == []
