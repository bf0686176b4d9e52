"""``.npz`` archives: numpy reads them, foreign archives, hostile members."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError, FormatError, UnsafeDataError
from bcolz_store.converters import npz

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


# --- vlen and categorical columns: fixed-width items and a mask, never pickles -------

VLEN_TEXT = ["alice", None, "", "b\u00e9\x00b", "\U0001f600" * 3, None, "z"]
VLEN_BYTES = [b"\x00\x01", b"", None, b"abc", b"\xff" * 9, b"q", None]


def _vlen_table(rootdir=None, **types):
    where = {} if rootdir is None else {"rootdir": str(rootdir), "mode": "w"}
    return bcolz.ctable(
        [np.arange(7), bcolz.carray(VLEN_TEXT, dtype=types.get("text", "vlen-str")),
         bcolz.carray(VLEN_BYTES, dtype="vlen-bytes"),
         bcolz.carray(["r", "g", None, "r", "b", "g", "r"],
                      dtype=bcolz.category(["r", "g", "b"], ordered=True))],
        names=["i", "text", "raw", "color"], chunklen=3, **where)


@pytest.mark.parametrize("compressed", [False, True])
def test_vlen_and_categorical_columns_round_trip_without_pickles(tmp_path, compressed):
    t = _vlen_table(tmp_path / "t")
    npz.to_npz(t, tmp_path / "t.npz", compressed=compressed)
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert z["text"].dtype == np.dtype("<U5") and z["raw"].dtype == np.dtype("S9")
        assert z["text"].tolist() == ["" if v is None else v for v in VLEN_TEXT]
        assert z["text.missing"].tolist() == [v is None for v in VLEN_TEXT]
        assert z["raw.missing"].tolist() == [v is None for v in VLEN_BYTES]
        assert z["color"].tolist() == ["r", "g", "", "r", "b", "g", "r"]
        meta = json.loads(str(z["bcolz_store.json"]))
    assert meta["vlen"]["color"] == {"category": {"kind": "str", "categories": ["r", "g", "b"],
                                                  "ordered": True}}
    assert meta["missing"] == {"text": "text.missing", "raw": "raw.missing",
                               "color": "color.missing"}
    back = npz.from_npz(tmp_path / "t.npz", rootdir=tmp_path / "back")
    assert back["text"][:].tolist() == VLEN_TEXT
    assert back["raw"][:].tolist() == VLEN_BYTES
    assert back["color"][:].tolist() == ["r", "g", None, "r", "b", "g", "r"]
    assert back.cols["color"].category == t.cols["color"].category
    assert back.cols["text"].vlen == t.cols["text"].vlen
    assert back["i"][:].tolist() == list(range(7))
    some = npz.from_npz(tmp_path / "t.npz", columns=["raw"])
    assert some["raw"][:].tolist() == VLEN_BYTES


def test_a_vlen_column_that_refuses_none_has_no_mask(tmp_path):
    c = bcolz.carray(["a", "bb", ""], dtype=bcolz.vlen(nullable=False))
    npz.to_npz(c, tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz", allow_pickle=False) as z:
        assert sorted(z.files) == ["bcolz_store.json", "data"]
    back = npz.from_npz(tmp_path / "c.npz")
    assert isinstance(back, bcolz.carray) and back.vlen.nullable is False
    assert back[:].tolist() == ["a", "bb", ""]
    empty = bcolz.carray([], dtype="vlen-bytes")
    npz.to_npz(empty, tmp_path / "e.npz")
    assert npz.from_npz(tmp_path / "e.npz").vlen == empty.vlen


@pytest.mark.parametrize("items, dtype", [(["ok", "ends\x00"], "vlen-str"),
                                          ([b"ok", b"\x00"], "vlen-bytes")])
def test_vlen_items_ending_in_nul_are_refused_by_column(tmp_path, items, dtype):
    t = bcolz.ctable([np.arange(2), bcolz.carray(items, dtype=dtype)], names=["i", "v"])
    with pytest.raises(ValueError, match="column 'v': item 1 ends in NUL"):
        npz.to_npz(t, tmp_path / "t.npz")
    assert not (tmp_path / "t.npz").exists()


def test_a_mask_member_that_does_not_fit_is_a_format_error(tmp_path):
    t = _vlen_table()
    npz.to_npz(t, tmp_path / "t.npz")
    with zipfile.ZipFile(tmp_path / "t.npz") as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    with zipfile.ZipFile(tmp_path / "bad.npz", "w") as zf:
        for name, data in members.items():
            if name != "text.missing.npy":
                zf.writestr(name, data)
    with pytest.raises(FormatError, match="does not describe"):
        npz.from_npz(tmp_path / "bad.npz")
