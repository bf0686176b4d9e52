"""KindTests fails on a deliberately broken kind: a contract test that cannot fail
would prove nothing.

Each case breaks one promise of a working kind (fixed-size binary, the
smallest) for the length of one test, then runs the inherited test that
guards that promise and expects it to fail.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bcolz_store.kinds import base
from bcolz_store.kinds.fixed_binary.kind import FixedBinaryKind
from bcolz_store.testing.kinds import KindTests

pa = pytest.importorskip("pyarrow")


def _array(n: int = 640):
    raw = np.arange(n * 4, dtype=np.uint32).view(np.uint8).reshape(n, 16)
    return pa.array([None if i % 9 == 2 else bytes(r) for i, r in enumerate(raw)], pa.binary(16))


class _Contract(KindTests):
    """The contract run by hand (``kind_class`` and ``arrow_array`` passed in)."""


def _run(name, tmp_path, kind_class=FixedBinaryKind, **extra):
    test = getattr(_Contract(), name)
    args = {"kind_class": kind_class, "arrow_array": _array(), "tmp_path": tmp_path, **extra}
    wanted = test.__code__.co_varnames[1:test.__code__.co_argcount]
    test(**{k: args[k] for k in wanted})


def test_the_contract_passes_on_the_working_kind(tmp_path):
    for name in ("test_buffers_give_the_array_back_after_reopening",
                 "test_missing_rows_are_the_arrays_nulls",
                 "test_the_kind_is_registered_under_its_key"):
        _run(name, tmp_path / name)


def test_a_decode_that_drops_the_nulls_fails(monkeypatch, tmp_path):
    decode = FixedBinaryKind.decode

    def broken(self, engine, start, stop):
        return dataclasses.replace(decode(self, engine, start, stop), validity=None)
    monkeypatch.setattr(FixedBinaryKind, "decode", broken)
    with pytest.raises(AssertionError):
        _run("test_buffers_give_the_array_back_after_reopening", tmp_path)


def test_a_decode_off_by_one_row_fails(monkeypatch, tmp_path):
    decode = FixedBinaryKind.decode
    monkeypatch.setattr(FixedBinaryKind, "decode", lambda self, engine, start, stop:
                        decode(self, engine, min(start + 1, stop), stop))
    with pytest.raises(AssertionError):
        _run("test_slices_across_chunks_decode_to_the_array_slices", tmp_path, where=(37, 301))


def test_a_missing_that_sees_no_nulls_fails(monkeypatch, tmp_path):
    monkeypatch.setattr(FixedBinaryKind, "missing",
                        lambda self, buffers: np.zeros(buffers.length, dtype=bool))
    with pytest.raises(AssertionError):
        _run("test_missing_rows_are_the_arrays_nulls", tmp_path)


def test_an_unregistered_kind_fails(tmp_path):
    class Stray(FixedBinaryKind):
        key = "stray"
    assert "stray" not in base.registered()
    with pytest.raises((AssertionError, KeyError)):
        _run("test_the_kind_is_registered_under_its_key", tmp_path, kind_class=Stray)
