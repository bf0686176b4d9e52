"""zarr v3: chunks, attributes, fill values, groups written by zarr itself."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError, DatasetNotFoundError, FormatError

from .samples import CHUNKLEN, TABLE_ATTRS, assert_same, make

zarr = pytest.importorskip("zarr")
zarr_io = pytest.importorskip("bcolz_store.converters.zarr_io")
try:
    import pyarrow  # noqa: F401
    HAVE_ARROW = True
except ImportError:
    HAVE_ARROW = False

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")


def test_a_carray_becomes_an_array_chunked_by_chunklen(tmp_path):
    ca = bcolz.carray(np.arange(70, dtype="i2").reshape(35, 2), chunklen=CHUNKLEN, dflt=7)
    ca.attrs["unit"] = "m"
    zarr_io.to_zarr(ca, tmp_path / "a.zarr")
    z = zarr.open_array(tmp_path / "a.zarr", mode="r")
    assert z.metadata.zarr_format == 3
    assert z.chunks == (CHUNKLEN, 2) and z.dtype == np.dtype("i2") and z.fill_value == 7
    assert dict(z.attrs) == {"unit": "m"}
    assert_array_equal(z[:], ca[:])
    back = zarr_io.from_zarr(tmp_path / "a.zarr")
    assert back.chunklen == CHUNKLEN and back.dflt == 7
    assert_same(back, ca)


def test_a_ctable_becomes_a_group_with_column_order_and_attrs(tmp_path):
    t = make("ctable", 40)
    t.cols["x"].attrs["unit"] = "m"
    zarr_io.to_zarr(t, tmp_path / "t.zarr")
    g = zarr.open_group(tmp_path / "t.zarr", mode="r")
    assert dict(g.attrs) == {**TABLE_ATTRS, "bcolz_store": {"version": 1, "kind": "ctable",
                                                            "names": t.names}}
    assert sorted(g.array_keys()) == sorted(t.names)
    assert dict(g["x"].attrs) == {"unit": "m"}
    assert_array_equal(g["t"][:], t["t"][:])           # NaT included
    assert g["w"][:].tolist()[:2] == ["\u00fc0", "\u00fc1"]
    back = zarr_io.from_zarr(tmp_path / "t.zarr", rootdir=tmp_path / "b")
    assert_same(back, t)
    assert back.cols["x"].attrs.getall() == {"unit": "m"}


def test_a_group_attribute_named_like_the_recorded_types_is_kept(tmp_path):
    g = zarr.open_group(tmp_path / "g.zarr", mode="w")
    g.attrs["bcolz_store.vlen"] = "a value of the user's"
    g.create_array("a", shape=(2,), dtype="i4")[:] = [1, 2]
    t = zarr_io.from_zarr(tmp_path / "g.zarr")
    assert t.attrs.getall() == {"bcolz_store.vlen": "a value of the user's"}


def test_a_group_written_by_zarr_reads_in_name_order(tmp_path):
    g = zarr.open_group(tmp_path / "g.zarr", mode="w")
    g.attrs["title"] = "mine"
    g.create_array("z", shape=(3,), dtype="f4")[:] = [1.5, 2.5, 3.5]
    g.create_array("a", shape=(3,), dtype=str)[:] = np.array(["x", "yyyy", ""], dtype=object)
    g.create_array("m", shape=(3, 2), dtype="u1", chunks=(2, 2))[:] = np.ones((3, 2))
    t = zarr_io.from_zarr(tmp_path / "g.zarr")
    assert t.names == ["a", "m", "z"] and t.attrs.getall() == {"title": "mine"}
    assert t.cols["a"].dtype == np.dtype("U4") and t["a"][:].tolist() == ["x", "yyyy", ""]
    assert t.cols["m"].shape == (3, 2)
    assert zarr_io.from_zarr(tmp_path / "g.zarr", columns=["z"]).names == ["z"]


def test_groups_that_are_not_tables_are_refused(tmp_path):
    g = zarr.open_group(tmp_path / "g.zarr", mode="w")
    g.create_array("a", shape=(3,), dtype="i4")
    g.create_array("b", shape=(4,), dtype="i4")
    with pytest.raises(ValueError, match="different lengths"):
        zarr_io.from_zarr(tmp_path / "g.zarr")
    g.create_group("sub")
    with pytest.raises(ValueError, match="groups"):
        zarr_io.from_zarr(tmp_path / "g.zarr")


def test_a_column_list_that_does_not_match_the_arrays_is_a_format_error(tmp_path):
    zarr_io.to_zarr(make("ctable", 3, columns=["i", "x"]), tmp_path / "t.zarr")
    g = zarr.open_group(tmp_path / "t.zarr", mode="a")
    g.attrs["bcolz_store"] = {"version": 1, "kind": "ctable", "names": ["i", "y"]}
    with pytest.raises(FormatError, match="t.zarr"):
        zarr_io.from_zarr(tmp_path / "t.zarr")


def test_refusals(tmp_path):
    with pytest.raises(TypeError, match="object"):
        zarr_io.to_zarr(bcolz.carray(np.array([1, "a"], dtype=object)), tmp_path / "o.zarr")
    t = make("ctable", 3, columns=["i"])
    t.attrs["bcolz_store"] = 1
    with pytest.raises(ValueError, match="reserved"):
        zarr_io.to_zarr(t, tmp_path / "r.zarr")
    zarr_io.to_zarr(make("carray", 3), tmp_path / "a.zarr")
    with pytest.raises(DatasetExistsError):
        zarr_io.to_zarr(make("carray", 5), tmp_path / "a.zarr")
    zarr_io.to_zarr(make("carray", 5), tmp_path / "a.zarr", overwrite=True)
    assert zarr.open_array(tmp_path / "a.zarr", mode="r").shape == (5,)
    (tmp_path / "plain").mkdir()
    with pytest.raises(DatasetExistsError, match="not a zarr store"):
        zarr_io.to_zarr(make("carray", 5), tmp_path / "plain", overwrite=True)
    with pytest.raises(DatasetNotFoundError):
        zarr_io.from_zarr(tmp_path / "missing.zarr")


def test_byte_order_is_not_kept_but_values_are(tmp_path):
    """zarr v3 data types have no byte order (it is the bytes codec's)."""
    ca = bcolz.carray(np.arange(5, dtype=">i4"))
    zarr_io.to_zarr(ca, tmp_path / "a.zarr")
    back = zarr_io.from_zarr(tmp_path / "a.zarr")
    assert back.dtype == np.dtype("<i4")
    assert_array_equal(back[:], ca[:])


def test_zarrs_unstable_specification_warning_does_not_reach_the_user(tmp_path, capsys):
    from bcolz_store import cli
    from bcolz_store.converters import convert
    t = bcolz.ctable([np.array(["a", "bb"]), np.array([b"x", b"yz"]), np.arange(2)],
                     names=["u", "s", "i"], rootdir=str(tmp_path / "t"), mode="w")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        zarr_io.to_zarr(t, tmp_path / "t.zarr")
        zarr_io.to_zarr(t.cols["u"], tmp_path / "u.zarr")
        back = zarr_io.from_zarr(tmp_path / "t.zarr")
        convert(tmp_path / "u.zarr", tmp_path / "u")
        convert(tmp_path / "t", tmp_path / "c.zarr")
        convert(tmp_path / "c.zarr", tmp_path / "c.parquet") if HAVE_ARROW else None
    assert [str(w.message)[:80] for w in caught] == []
    assert_same(back, t)
    assert bcolz.open(str(tmp_path / "u")).dtype == np.dtype("<U2")
    with warnings.catch_warnings():
        warnings.simplefilter("always")         # as python -W always shows every warning
        assert cli.main(["convert", str(tmp_path / "t"), str(tmp_path / "d.zarr")]) == 0
    assert capsys.readouterr().err == ""
    with warnings.catch_warnings(record=True) as caught:      # zarr itself still warns
        warnings.simplefilter("always")
        zarr.open_group(tmp_path / "t.zarr", mode="r")["u"][:]
        zarr.create_array(store={}, shape=(1,), dtype="U1", chunks=(1,), zarr_format=3)
    assert any("Zarr V3 specification" in str(w.message) for w in caught)
