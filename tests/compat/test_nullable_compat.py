"""What the real bcolz 1.13 does with a nullable carray: it reads the values
(null slots hold the fill), ignores ``valid/`` and the ``nullable`` key of
``meta/storage``; rows it appends are present, rows it trims are cut from
the validity too (docs/format.md, "Nullable columns (bcolz_store only)")."""

import numpy as np
import pytest

import bcolz_store

real_bcolz = pytest.importorskip("bcolz")


def _nullable(root, n=20):
    data = np.ma.MaskedArray(np.arange(n, dtype="f8"), mask=np.arange(n) % 3 == 0)
    return bcolz_store.carray(data, chunklen=8, rootdir=str(root), mode="w")


def test_real_bcolz_reads_the_values_of_a_nullable_carray(tmp_path):
    _nullable(tmp_path / "c")
    got = real_bcolz.open(str(tmp_path / "c"))[:]
    assert np.isnan(got[::3]).all() and got[1] == 1.0 and len(got) == 20
    t = bcolz_store.ctable([bcolz_store.carray([1, None, 3], dtype="i4"), np.arange(3)],
                           names=["x", "y"], rootdir=str(tmp_path / "t"), mode="w")
    t.flush()
    assert real_bcolz.open(str(tmp_path / "t"))["x"][:].tolist() == [1, 0, 3]


def test_rows_real_bcolz_appends_are_present(tmp_path):
    _nullable(tmp_path / "c")
    r = real_bcolz.open(str(tmp_path / "c"), mode="a")
    r.append(np.array([100.0, 101.0]))
    r.flush()
    c = bcolz_store.open(str(tmp_path / "c"), mode="a")
    got = c[:]
    assert len(got) == 22 and got.mask.tolist()[-3:] == [False, False, False]
    assert got.mask[:20].tolist() == (np.arange(20) % 3 == 0).tolist()
    c.append([None])
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    assert c[:].mask.tolist()[-4:] == [False, False, False, True]
    assert c._engine.validity.length == 23


def test_rows_real_bcolz_trims_are_cut_from_the_validity(tmp_path):
    _nullable(tmp_path / "c")
    r = real_bcolz.open(str(tmp_path / "c"), mode="a")
    r.trim(7)
    r.flush()
    c = bcolz_store.open(str(tmp_path / "c"), mode="a")
    assert c[:].mask.tolist() == (np.arange(13) % 3 == 0).tolist()
    c.append([5.0])
    c.flush()
    c = bcolz_store.open(str(tmp_path / "c"))
    assert c._engine.validity.length == 14 and not c[:].mask[-1]
