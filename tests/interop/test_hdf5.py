"""ctable.tohdf5 / ctable.fromhdf5 against PyTables: text columns.

PyTables is the independent reader here: what ``tohdf5`` stores is read with
``tables`` itself, and what ``fromhdf5`` returns is compared with the
original exactly (dtype and values).
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import FormatError
from bcolz_store.interop.hdf5 import UTF8_ATTR

tables = pytest.importorskip("tables")

TEXT = ["hello", "h\u00e9llo", "\u03a3\u65e5\u672c", "", "a\x00b", "\U0001f600x", "\ud800"]
BYTES = [b"ab", b"x\x00y", b"", b"\xff\xfe", b"abc", b"\x00z", b"q"]


def text_table(n: int = len(TEXT), **kwargs) -> bcolz.ctable:
    """A ctable with int, unicode (ASCII, non-ASCII, astral, NUL inside, a
    lone surrogate), bytes and 2x2 unicode-row columns."""
    reps = -(-n // len(TEXT)) if n else 0
    text = np.array((TEXT * reps)[:n], dtype="U5")
    grid = np.array([[["\u00e9%d" % i, "b"], ["", "\u65e5\u672c"]] for i in range(n)],
                    dtype="U3").reshape(n, 2, 2)
    return bcolz.ctable(columns=[np.arange(n, dtype="i4"), text,
                                 np.array((BYTES * reps)[:n], dtype="S3"), grid],
                        names=["i", "u", "s", "grid"], **kwargs)


def read_raw(path, nodepath="/ctable"):
    with tables.open_file(str(path), mode="r") as h5:
        node = h5.get_node(nodepath)
        attrs = {key: node.attrs[key] for key in node.attrs._f_list()}
        return node.read(), attrs


@pytest.mark.parametrize("n", [0, 1, 7, 1000])
def test_unicode_and_bytes_columns_round_trip_exactly(tmp_path, n):
    t = text_table(n, chunklen=64)
    t.attrs["title"] = "text"
    path = str(tmp_path / "t.h5")
    t.tohdf5(path)
    back = bcolz.ctable.fromhdf5(path)
    assert back.dtype == t.dtype
    assert back.names == t.names
    for name in t.names:
        assert back.cols[name].dtype == t.cols[name].dtype, name
        assert_array_equal(back.cols[name][:], t.cols[name][:], err_msg=name)
    assert back.attrs.getall() == {"title": "text"}


def test_pytables_sees_unicode_columns_as_utf8_bytes(tmp_path):
    t = text_table()
    path = tmp_path / "t.h5"
    t.tohdf5(str(path))
    rows, attrs = read_raw(path)
    assert rows.dtype["u"].kind == "S" and rows.dtype["s"] == np.dtype("S3")
    assert [v.decode("utf-8", "surrogatepass") for v in rows["u"]] == TEXT
    assert rows["s"].tolist() == [b"ab", b"x\x00y", b"", b"\xff\xfe", b"abc", b"\x00z", b"q"]
    assert rows["grid"][0, 1, 1].decode("utf-8") == "\u65e5\u672c"
    assert json.loads(attrs[UTF8_ATTR]) == {"u": "<U5", "grid": "<U3"}


def test_ascii_text_is_not_scrambled_for_other_readers(tmp_path):
    t = bcolz.ctable(columns=[np.array(["hello", "abc"], dtype="U5")], names=["u"])
    t.tohdf5(str(tmp_path / "t.h5"))
    rows, _ = read_raw(tmp_path / "t.h5")
    assert rows["u"].tolist() == [b"hello", b"abc"]


def test_big_endian_unicode_keeps_its_dtype(tmp_path):
    t = bcolz.ctable(columns=[np.array(["\u00fcber", "x"], dtype=">U4")], names=["u"])
    t.tohdf5(str(tmp_path / "t.h5"))
    back = bcolz.ctable.fromhdf5(str(tmp_path / "t.h5"))
    assert back.cols["u"].dtype == np.dtype(">U4")
    assert back["u"][:].tolist() == ["\u00fcber", "x"]


def test_names_pick_unicode_columns_and_the_marker_is_no_user_attr(tmp_path):
    t = text_table()
    t.tohdf5(str(tmp_path / "t.h5"), nodepath="/g/t", mode="a")
    back = bcolz.ctable.fromhdf5(str(tmp_path / "t.h5"), "/g/t", names=["grid", "u"])
    assert back.names == ["grid", "u"]
    assert back.cols["u"].dtype == np.dtype("U5")
    assert_array_equal(back["u"][:], t["u"][:])
    assert_array_equal(back["grid"][:], t["grid"][:])
    assert UTF8_ATTR not in back.attrs.getall()


def test_tables_without_the_marker_keep_their_bytes(tmp_path):
    path = str(tmp_path / "plain.h5")
    rows = np.array([(1, b"\xc3\xa9")], dtype=[("i", "i4"), ("s", "S2")])
    with tables.open_file(path, mode="w") as h5:
        h5.create_table("/", "ctable", rows)
    back = bcolz.ctable.fromhdf5(path)
    assert back.dtype == rows.dtype
    assert back["s"][:].tolist() == [b"\xc3\xa9"]


def test_a_reserved_attr_name_is_refused(tmp_path):
    t = text_table()
    t.attrs[UTF8_ATTR] = "mine"
    with pytest.raises(ValueError, match=UTF8_ATTR):
        t.tohdf5(str(tmp_path / "t.h5"))
    assert not (tmp_path / "t.h5").exists()


def test_code_points_beyond_unicode_are_refused_and_nothing_is_left(tmp_path):
    bad = np.array([0x41, 0x110000], dtype="u4").view("U1")
    t = bcolz.ctable(columns=[np.arange(2), bad], names=["i", "u"])
    with pytest.raises(ValueError, match="U\\+10FFFF"):
        t.tohdf5(str(tmp_path / "t.h5"))
    assert not (tmp_path / "t.h5").exists()
    text_table().tohdf5(str(tmp_path / "kept.h5"))
    with pytest.raises(ValueError, match="U\\+10FFFF"):
        t.tohdf5(str(tmp_path / "kept.h5"), nodepath="/bad", mode="a")
    with tables.open_file(str(tmp_path / "kept.h5"), mode="r") as h5:
        assert "/bad" not in h5 and "/ctable" in h5


def _write_marked(path, rows, marker):
    with tables.open_file(str(path), mode="w") as h5:
        node = h5.create_table("/", "ctable", rows)
        node.attrs[UTF8_ATTR] = marker


@pytest.mark.parametrize("marker", [
    "not json", "[1]", json.dumps({"u": 5}), json.dumps({"u": "<i4"}),
    json.dumps({"nope": "<U2"}), json.dumps({"i": "<U2"}), json.dumps({"u": "<U1"})])
def test_a_bad_marker_is_a_format_error(tmp_path, marker):
    rows = np.array([(1, "\u00e9\u00e9".encode())], dtype=[("i", "i4"), ("u", "S8")])
    _write_marked(tmp_path / "bad.h5", rows, marker)
    with pytest.raises(FormatError, match="bad.h5"):
        bcolz.ctable.fromhdf5(str(tmp_path / "bad.h5"))


def test_bytes_that_are_not_utf8_are_a_format_error(tmp_path):
    rows = np.array([(1, b"\xff")], dtype=[("i", "i4"), ("u", "S8")])
    _write_marked(tmp_path / "bad.h5", rows, json.dumps({"u": "<U2"}))
    with pytest.raises(FormatError, match="'u'.*UTF-8"):
        bcolz.ctable.fromhdf5(str(tmp_path / "bad.h5"))


# --- HDF5 files written by others: array nodes, attributes, the node to read -------------

def _arrays_file(path):
    """A file with an Array, a CArray, an EArray and a Table, each with attributes."""
    with tables.open_file(str(path), mode="w") as h5:
        h5.create_array("/", "plain", np.arange(10, dtype=">i4").reshape(5, 2))
        grid = h5.create_carray("/g", "grid", tables.Float64Atom(), shape=(300, 3),
                                chunkshape=(64, 3), createparents=True)
        grid[:] = np.arange(900, dtype="f8").reshape(300, 3) / 7
        grid.attrs["unit"] = "m"
        grid.attrs["scale"] = np.float32(0.5)
        log = h5.create_earray("/", "log", tables.StringAtom(3), shape=(0,))
        log.append(np.array([b"\x01\x00\x02", b"ab", b""], dtype="S3"))
        table = h5.create_table("/", "ctable", np.array([(1, 2.0)], dtype="i4,f8"))
        table.attrs["title"] = "t"


@pytest.mark.parametrize("node, expected", [
    ("/plain", np.arange(10, dtype=">i4").reshape(5, 2)),
    ("/g/grid", np.arange(900, dtype="f8").reshape(300, 3) / 7),
    ("/log", np.array([b"\x01\x00\x02", b"ab", b""], dtype="S3")),
])
def test_array_carray_and_earray_nodes_are_read_as_carrays(tmp_path, node, expected):
    from bcolz_store.converters import convert
    _arrays_file(tmp_path / "a.h5")
    done = convert(tmp_path / "a.h5", tmp_path / "out", nodepath=node)
    assert done.kind == "carray" and done.length == len(expected)
    back = bcolz.open(str(tmp_path / "out"), mode="r")
    assert isinstance(back, bcolz.carray)
    assert back.dtype == expected.dtype and back.shape == expected.shape
    assert back[:].tobytes() == expected.tobytes()
    if node == "/g/grid":
        assert back.attrs.getall() == {"unit": "m", "scale": 0.5}


def test_a_node_that_is_not_there_or_a_group_is_a_clear_error(tmp_path):
    from bcolz_store.errors import DatasetNotFoundError, NodeKindError
    from bcolz_store.converters.hdf5_io import read_hdf5
    _arrays_file(tmp_path / "a.h5")
    with pytest.raises(DatasetNotFoundError, match="no node '/nope'.*/g/grid"):
        read_hdf5(tmp_path / "a.h5", nodepath="/nope")
    with pytest.raises(NodeKindError, match="'/g' is a Group"):
        read_hdf5(tmp_path / "a.h5", nodepath="/g")
    with pytest.raises(TypeError, match="CArray, not a Table"):
        bcolz.ctable.fromhdf5(str(tmp_path / "a.h5"), "/g/grid")


@pytest.mark.parametrize("node, kind", [("/plain", "an Array"), ("/g/grid", "a CArray"),
                                        ("/log", "an EArray"), ("/g", "a Group"),
                                        ("/", "a RootGroup")])
def test_fromhdf5_of_a_node_that_is_not_a_table_is_a_library_error(tmp_path, node, kind):
    from bcolz_store.errors import BcolzStoreError, NodeKindError
    _arrays_file(tmp_path / "a.h5")
    with pytest.raises(NodeKindError) as info:
        bcolz.ctable.fromhdf5(str(tmp_path / "a.h5"), node)
    assert isinstance(info.value, BcolzStoreError) and isinstance(info.value, TypeError)
    message = str(info.value)
    assert f"node '{node}' is {kind}, not a Table" in message and "a.h5" in message
    assert "/ctable" in message                 # the Table the file holds
    if kind != "a Group" and kind != "a RootGroup":
        assert "convert" in message             # how to read an array: as a carray
    assert sorted(os.listdir(tmp_path)) == ["a.h5"]


def test_a_bytes_attribute_is_refused_by_name_or_dropped(tmp_path):
    from bcolz_store.converters import convert
    from bcolz_store.converters.hdf5_io import read_hdf5
    with tables.open_file(str(tmp_path / "b.h5"), mode="w") as h5:
        node = h5.create_table("/", "ctable", np.array([(1, b"x")], dtype="i4,S1"))
        node.attrs["title"] = "kept"
        node.attrs["blob"] = b"\x00\xffraw"
    with pytest.raises(ValueError, match="attribute 'blob' holds bytes"):
        bcolz.ctable.fromhdf5(str(tmp_path / "b.h5"))
    with pytest.raises(ValueError, match="'blob'.*drop_attrs"):
        convert(tmp_path / "b.h5", tmp_path / "out")
    assert not (tmp_path / "out").exists()
    back = read_hdf5(tmp_path / "b.h5", drop_attrs=True)
    assert back[:].tolist() == [(1, b"x")] and back.attrs.getall() == {}
    convert(tmp_path / "b.h5", tmp_path / "out", drop_attrs=True)
    assert bcolz.open(str(tmp_path / "out")).attrs.getall() == {}


def test_the_command_reads_and_writes_the_node_it_is_given(tmp_path, capsys):
    from bcolz_store.cli import main
    _arrays_file(tmp_path / "a.h5")
    assert main(["convert", str(tmp_path / "a.h5"), str(tmp_path / "grid"), "--node",
                 "/g/grid", "--no-progress"]) == 0
    assert "carray of 300 rows" in capsys.readouterr().out
    assert bcolz.open(str(tmp_path / "grid")).shape == (300, 3)
    assert main(["convert", str(tmp_path / "grid"), str(tmp_path / "b.h5"), "--node",
                 "/deep/inside", "--no-progress"]) == 0
    with tables.open_file(str(tmp_path / "b.h5")) as h5:
        assert "/deep/inside" in h5
    assert main(["convert", str(tmp_path / "a.h5"), str(tmp_path / "x"), "--node",
                 "/nope", "--no-progress"]) == 1
    assert "no node '/nope'" in capsys.readouterr().err
    assert main(["convert", str(tmp_path / "grid"), str(tmp_path / "g.npz"), "--node",
                 "/x", "--no-progress"]) == 1
    assert "--node names a node of an HDF5 file" in capsys.readouterr().err
