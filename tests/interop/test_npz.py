"""``.npz`` archives: numpy reads them, foreign archives, hostile members."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError, FormatError, UnsafeDataError
from bcolz_store.interop import npz

from .samples import TABLE_ATTRS, assert_same, make


def test_numpy_load_reads_every_column_and_the_metadata(tmp_path):
    t = make("ctable", 40)
    t.cols["x"].attrs["unit"] = "m"
    npz.to_npz(t, tmp_path / "t.npz")
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert z.files == t.names + ["bcolz_store.json"]
        for name in t.names:
            assert z[name].dtype == t.cols[name].dtype
            assert_array_equal(z[name], t.cols[name][:])
        meta = json.loads(str(z["bcolz_store.json"]))
    assert meta == {"version": 1, "kind": "ctable", "names": t.names, "attrs": TABLE_ATTRS,
                    "column_attrs": {"x": {"unit": "m"}}}
    assert npz.from_npz(tmp_path / "t.npz").cols["x"].attrs.getall() == {"unit": "m"}


@pytest.mark.parametrize("compressed", [False, True])
def test_a_carray_is_one_array_data(tmp_path, compressed):
    ca = bcolz.carray(np.arange(24, dtype=">u2").reshape(4, 2, 3))
    npz.to_npz(ca, tmp_path / "a.npz", compressed=compressed)
    with zipfile.ZipFile(tmp_path / "a.npz") as zf:
        method = zf.getinfo("data.npy").compress_type
    assert method == (zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED)
    assert_array_equal(np.load(tmp_path / "a.npz")["data"], ca[:])
    assert_same(npz.from_npz(tmp_path / "a.npz"), ca)


def test_archives_written_by_numpy(tmp_path):
    np.savez(tmp_path / "one.npz", values=np.arange(5.0))
    one = npz.from_npz(tmp_path / "one.npz")
    assert isinstance(one, bcolz.carray) and one[:].tolist() == [0, 1, 2, 3, 4]
    np.savez(tmp_path / "two.npz", b=np.arange(3), a=np.array(["x", "yy", "z"]))
    two = npz.from_npz(tmp_path / "two.npz", rootdir=tmp_path / "two")
    assert two.names == ["b", "a"] and two.cols["a"].dtype == np.dtype("U2")
    assert npz.from_npz(tmp_path / "two.npz", columns=["a"]).names == ["a"]
    np.savez(tmp_path / "bad.npz", a=np.arange(3), b=np.arange(4))
    with pytest.raises(ValueError, match="different lengths"):
        npz.from_npz(tmp_path / "bad.npz")


def test_object_members_are_refused_without_unpickling(tmp_path):
    np.savez(tmp_path / "o.npz", o=np.array([1, "a"], dtype=object))
    with pytest.raises(UnsafeDataError, match="o.npy"):
        npz.from_npz(tmp_path / "o.npz")
    with pytest.raises(TypeError, match="object"):
        npz.to_npz(bcolz.carray(np.array([1, "a"], dtype=object)), tmp_path / "p.npz")
    assert not (tmp_path / "p.npz").exists()


def test_truncated_and_malformed_members_are_format_errors(tmp_path):
    header = b"\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (100,), }"
    header += b" " * (128 - len(header) - 1) + b"\n"
    with zipfile.ZipFile(tmp_path / "cut.npz", "w") as zf:
        zf.writestr("a.npy", header + b"\x00" * 80)          # 100 int64 promised, 10 given
    with pytest.raises(FormatError, match="cut.npz: member a.npy"):
        npz.from_npz(tmp_path / "cut.npz")
    with zipfile.ZipFile(tmp_path / "junk.npz", "w") as zf:
        zf.writestr("a.npy", b"not an array")
    with pytest.raises(FormatError, match="junk.npz"):
        npz.from_npz(tmp_path / "junk.npz")
    (tmp_path / "nozip.npz").write_bytes(b"plain bytes")
    with pytest.raises(FormatError, match="nozip.npz"):
        npz.from_npz(tmp_path / "nozip.npz")
    npz.to_npz(make("ctable", 3, columns=["i"]), tmp_path / "meta.npz")
    with zipfile.ZipFile(tmp_path / "meta.npz", "a") as zf:
        zf.writestr("extra.npy", header[:10])
    with pytest.raises(FormatError, match="does not describe"):
        npz.from_npz(tmp_path / "meta.npz")


def test_refuses_to_overwrite(tmp_path):
    (tmp_path / "a.npz").write_bytes(b"x")
    with pytest.raises(DatasetExistsError):
        npz.to_npz(make("carray", 3), tmp_path / "a.npz")
    assert (tmp_path / "a.npz").read_bytes() == b"x"
