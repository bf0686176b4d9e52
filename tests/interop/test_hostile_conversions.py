"""Conversions of hostile input: never run code, never crash the interpreter,
never allocate what the input asks for, never raise a foreign error.

Each test names the defect it guards against; the inputs are built here, small.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
import time
import zipfile

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.cli import main
from bcolz_store.errors import BcolzStoreError, FormatError, LimitError
from bcolz_store.converters import convert

# --- HDF5 attributes that PyTables would unpickle ---------------------------------


class _WritesMarker:
    """Unpickling this opens (creates) the file named by ``path``."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _evil_h5(path, marker, where="table", name="evil", nrows=3):
    tables = pytest.importorskip("tables")
    payload = pickle.dumps(_WritesMarker(str(marker)), protocol=0)
    assert payload.endswith(b".")
    with tables.open_file(str(path), "w") as h5:
        t = h5.create_table("/", "ctable", np.zeros(nrows, dtype=[("a", "i4")]))
        node = h5.root if where == "root" else t
        node._v_attrs[name] = np.bytes_(payload)
    assert not marker.exists()
    return path


@pytest.mark.parametrize("where,name", [("table", "evil"), ("root", "evil"),
                                        ("table", "TITLE"), ("table", "bcolz_store_kind"),
                                        ("table", "bcolz_store_utf8"),
                                        ("table", "bcolz_store_byteorder")])
def test_hdf5_pickled_attribute_never_runs_code(tmp_path, where, name):
    marker = tmp_path / "marker"
    src = _evil_h5(tmp_path / "evil.h5", marker, where, name)
    try:
        convert(src, tmp_path / "out.bcolz")
    except FormatError as err:
        assert "evil.h5" in str(err) and name in str(err)
    assert not marker.exists()
    if name == "TITLE" or where == "root":
        bcolz.ctable.fromhdf5(str(src))     # PyTables' own attribute, not read as attrs
    else:
        with pytest.raises(FormatError, match=rf"evil\.h5.*{name}"):
            bcolz.ctable.fromhdf5(str(src))
    if name.startswith("bcolz_store_") and name != "bcolz_store_kind":
        with pytest.raises(FormatError, match=name):
            bcolz.ctable.fromhdf5(str(src), drop_attrs=True)
    assert not marker.exists()


def test_hdf5_pickled_user_attribute_is_refused_by_name_or_dropped(tmp_path):
    marker = tmp_path / "marker"
    src = _evil_h5(tmp_path / "evil.h5", marker)
    with pytest.raises(FormatError, match=r"evil\.h5.*'evil'.*pickle"):
        convert(src, tmp_path / "out.bcolz")
    done = convert(src, tmp_path / "out.bcolz", drop_attrs=True)
    assert done.length == 3
    assert not marker.exists()


def test_hdf5_pickled_attribute_through_the_cli(tmp_path, capsys):
    marker = tmp_path / "marker"
    src = _evil_h5(tmp_path / "evil.h5", marker, "root")
    status = main(["convert", str(src), str(tmp_path / "out.bcolz")])
    err = capsys.readouterr().err
    assert not marker.exists()
    assert status in (0, 1) and "unexpected" not in err


def test_pytables_unpickles_again_after_a_conversion(tmp_path):
    """The refusal holds during our reads only; PyTables itself is left as it was."""
    tables = pytest.importorskip("tables")
    marker = tmp_path / "marker"
    src = _evil_h5(tmp_path / "evil.h5", marker)
    convert(src, tmp_path / "out.bcolz", drop_attrs=True)
    assert not marker.exists()
    with tables.open_file(str(src)) as h5:
        h5.get_node("/ctable").attrs["evil"]
    assert marker.exists()


# --- Arrow IPC and Parquet files with flipped bytes -------------------------------

_FLIP_CHILD = textwrap.dedent("""
    import os, sys, tempfile
    from bcolz_store.converters import convert
    from bcolz_store.errors import BcolzStoreError
    src, suffix, offsets = sys.argv[1], sys.argv[2], [int(o) for o in sys.argv[3:]]
    data = open(src, "rb").read()
    tmp = tempfile.mkdtemp()
    for n, offset in enumerate(offsets):
        bad = bytearray(data)
        bad[offset] ^= 0xFF
        path = os.path.join(tmp, f"bad{n}{suffix}")
        with open(path, "wb") as f:
            f.write(bad)
        try:
            convert(path, os.path.join(tmp, f"out{n}.bcolz"))
        except BcolzStoreError:
            pass
        except (ValueError, TypeError, KeyError, OSError) as err:
            print("foreign", offset, type(err).__module__, type(err).__name__, err)
    print("survived", len(offsets))
""")


def _flip_cases(tmp_path, fmt):
    pa = pytest.importorskip("pyarrow")
    table = bcolz.ctable(columns=[np.arange(300, dtype="i8"),
                                  np.array(["x%d" % i for i in range(300)]),
                                  np.linspace(0, 1, 300)], names=["i", "s", "f"])
    src = tmp_path / ("good.feather" if fmt == "arrow" else "good.parquet")
    convert(table.copy(rootdir=str(tmp_path / "t.bcolz")) and str(tmp_path / "t.bcolz"), src)
    size = src.stat().st_size
    assert pa is not None
    return src, list(range(0, size, max(1, size // 200)))


@pytest.mark.parametrize("fmt", ["arrow", "parquet"])
def test_byte_flipped_arrow_files_never_kill_the_interpreter(tmp_path, fmt):
    src, offsets = _flip_cases(tmp_path, fmt)
    proc = subprocess.run([sys.executable, "-c", _FLIP_CHILD, str(src), src.suffix,
                           *map(str, offsets)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert f"survived {len(offsets)}" in proc.stdout
    assert "foreign" not in proc.stdout, proc.stdout


# --- memory: sizes taken from the input -------------------------------------------

def test_zarr_chunk_of_2_to_the_40_is_refused_not_allocated(tmp_path):
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "a.zarr"
    arr = zarr.create_array(store=str(store), shape=(10,), chunks=(10,), dtype="f8")
    arr[:] = np.arange(10.0)
    meta = json.loads((store / "zarr.json").read_text())
    meta["chunk_grid"]["configuration"]["chunk_shape"] = [2**40]
    (store / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(LimitError, match=r"a\.zarr.*chunk"):
        convert(store, tmp_path / "out.bcolz")
    assert not (tmp_path / "out.bcolz").exists()


def test_zarr_chunk_length_is_not_copied_when_it_is_huge(tmp_path):
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "b.zarr"
    arr = zarr.create_array(store=str(store), shape=(1000,), chunks=(1 << 26,), dtype="i1")
    arr[:] = np.arange(1000) % 100
    out = bcolz_from(convert(store, tmp_path / "out.bcolz"))
    assert out.chunklen < 1 << 26
    assert np.array_equal(out[:], np.arange(1000) % 100)


def bcolz_from(done):
    return bcolz.open(done.paths[0], mode="r")


def test_one_huge_string_is_refused_with_a_hint_to_vlen(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = 200_000
    values = ["a"] * rows
    values[rows // 2] = "x" * (10 << 20)
    src = tmp_path / "big.parquet"
    pq.write_table(pa.table({"s": values}), str(src))
    t0 = time.perf_counter()
    with pytest.raises(LimitError, match=r"'s'.*strings='vlen'"):
        convert(src, tmp_path / "out.bcolz")
    assert time.perf_counter() - t0 < 60
    assert not (tmp_path / "out.bcolz").exists()
    done = convert(src, tmp_path / "vlen.bcolz", strings="vlen")
    back = bcolz.open(done.paths[0], mode="r")
    assert len(back) == rows and len(back["s"][rows // 2]) == 10 << 20


def test_one_huge_string_in_zarr_is_refused_with_a_hint_to_vlen(tmp_path):
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "s.zarr"
    values = np.array(["a"] * 200_000, dtype=object)
    values[5] = "x" * (10 << 20)
    group = zarr.open_group(str(store), mode="w")
    arr = group.create_array("s", shape=values.shape, dtype=str, chunks=(50_000,))
    arr[:] = values
    with pytest.raises(LimitError, match=r"'s'.*strings='vlen'"):
        convert(store, tmp_path / "out.bcolz")


# --- foreign error types -----------------------------------------------------------

def _deep_json(depth=200_000):
    return "[" * depth + "]" * depth


def test_deep_json_in_parquet_metadata_is_a_format_error(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    deep = '{"version": 1, "attrs": {"x": ' + _deep_json() + "}}"
    table = pa.table({"a": [1, 2]}).replace_schema_metadata({b"bcolz_store": deep.encode()})
    pq.write_table(table, str(tmp_path / "deep.parquet"))
    with pytest.raises(FormatError, match="deep.parquet"):
        convert(tmp_path / "deep.parquet", tmp_path / "out.bcolz")


def test_deep_json_in_npz_metadata_is_a_format_error(tmp_path):
    path = tmp_path / "deep.npz"
    np.savez(str(path), a=np.arange(3), **{"bcolz_store.json": np.array(_deep_json())})
    with pytest.raises(FormatError, match="deep.npz"):
        convert(path, tmp_path / "out.bcolz")


def test_deep_json_in_hdf5_marker_attribute_is_a_format_error(tmp_path):
    tables = pytest.importorskip("tables")
    path = tmp_path / "deep.h5"
    with tables.open_file(str(path), "w") as h5:
        t = h5.create_table("/", "ctable", np.zeros(3, dtype=[("a", "S2")]))
        t.attrs["bcolz_store_utf8"] = _deep_json(20_000)
    with pytest.raises(FormatError, match="deep.h5"):
        convert(path, tmp_path / "out.bcolz")


def test_deep_json_in_zarr_json_is_a_format_error(tmp_path):
    zarr = pytest.importorskip("zarr")
    store = tmp_path / "deep.zarr"
    zarr.create_array(store=str(store), shape=(3,), dtype="i4")[:] = [1, 2, 3]
    meta = json.loads((store / "zarr.json").read_text())
    text = json.dumps(meta)[:-1] + ', "attributes": {"x": ' + _deep_json() + "}}"
    (store / "zarr.json").write_text(text)
    with pytest.raises(FormatError, match="deep.zarr"):
        convert(store, tmp_path / "out.bcolz")


def test_an_empty_npz_is_a_format_error(tmp_path):
    path = tmp_path / "empty.npz"
    with zipfile.ZipFile(path, "w"):
        pass
    with pytest.raises(FormatError, match="empty.npz.*no arrays"):
        convert(path, tmp_path / "out.bcolz")


def test_a_damaged_hdf5_file_is_a_format_error(tmp_path):
    tables = pytest.importorskip("tables")
    path = tmp_path / "t.h5"
    with tables.open_file(str(path), "w") as h5:
        h5.create_table("/", "ctable", np.zeros(1000, dtype=[("a", "i8")]))
    data = bytearray(path.read_bytes())
    del data[len(data) // 2:]
    path.write_bytes(bytes(data))
    with pytest.raises(BcolzStoreError, match="t.h5"):
        convert(path, tmp_path / "out.bcolz")


@pytest.mark.parametrize("isolate", [True, False])
def test_a_node_whose_class_names_another_kind_is_a_format_error(tmp_path, isolate):
    """A damaged CLASS attribute (a group saying it is a TABLE) makes PyTables
    itself raise TypeError while loading the node: the file is damaged, a
    FormatError naming it, not PyTables' TypeError."""
    tables = pytest.importorskip("tables")
    from bcolz_store.converters.hdf5_io import read_hdf5
    path = tmp_path / "cls.h5"
    with tables.open_file(str(path), "w") as h5:
        group = h5.create_group("/", "ctable")
        h5.create_table(group, "x", np.zeros(3, dtype=[("a", "i4")]))
        group._f_setattr("CLASS", np.bytes_(b"TABLE"))
    with pytest.raises(FormatError, match="cls.h5.*damaged.*TypeError"):
        read_hdf5(path, nodepath="/ctable", isolate=isolate)
    with pytest.raises(FormatError, match="cls.h5"):
        bcolz.ctable.fromhdf5(str(path), nodepath="/ctable")
    # the errors the converters document keep their types
    with pytest.raises(tables.NoSuchNodeError):
        bcolz.ctable.fromhdf5(str(path), nodepath="/nothing")
    with pytest.raises(TypeError, match="Group"):
        good = tmp_path / "good.h5"
        with tables.open_file(str(good), "w") as h5:
            h5.create_group("/", "ctable")
        read_hdf5(good, nodepath="/ctable")


def test_a_non_hdf5_file_is_a_format_error_and_the_cli_says_so(tmp_path, capsys):
    pytest.importorskip("tables")
    path = tmp_path / "junk.h5"
    path.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\x00" * 500)
    with pytest.raises(FormatError, match="junk.h5"):
        convert(path, tmp_path / "out.bcolz")
    assert main(["convert", str(path), str(tmp_path / "out.bcolz")]) == 1
    err = capsys.readouterr().err
    assert "unexpected" not in err and "junk.h5" in err and len(err.strip().splitlines()) == 1


def test_the_cli_reports_deep_json_in_one_line_not_as_unexpected(tmp_path, capsys):
    path = tmp_path / "deep.npz"
    np.savez(str(path), a=np.arange(3), **{"bcolz_store.json": np.array(_deep_json())})
    assert main(["convert", str(path), str(tmp_path / "out.bcolz")]) == 1
    err = capsys.readouterr().err
    assert "unexpected" not in err and "deep.npz" in err


def test_a_truncated_feather_file_is_a_format_error(tmp_path):
    pytest.importorskip("pyarrow")
    t = bcolz.ctable(columns=[np.arange(1000)], names=["a"], rootdir=str(tmp_path / "t"))
    t.flush()
    convert(tmp_path / "t", tmp_path / "t.feather")
    data = (tmp_path / "t.feather").read_bytes()
    (tmp_path / "cut.feather").write_bytes(data[: len(data) - 20])
    with pytest.raises(FormatError, match="cut.feather"):
        convert(tmp_path / "cut.feather", tmp_path / "out.bcolz")


# --- datadings: too many dimensions ------------------------------------------------

def test_datadings_nested_lists_deeper_than_the_limit_are_refused(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    value = 1
    for _ in range(33):
        value = [value]
    path = tmp_path / "deep.msgpack"
    with open(path, "wb") as f:
        for i in range(2):
            f.write(msgpack.packb({"key": f"k{i}", "v": value}))
    with pytest.raises(LimitError, match=r"deep\.msgpack.*'v'.*dimensions"):
        convert(path, tmp_path / "out.bcolz")
    assert not (tmp_path / "out.bcolz").exists()


def test_datadings_nested_lists_within_the_limit_still_convert(tmp_path):
    msgpack = pytest.importorskip("msgpack")
    value = 1
    for _ in range(3):
        value = [value, value]
    path = tmp_path / "ok.msgpack"
    with open(path, "wb") as f:
        for i in range(2):
            f.write(msgpack.packb({"key": f"k{i}", "v": value}))
    back = bcolz.open(convert(path, tmp_path / "out.bcolz").paths[0], mode="r")
    assert back["v"].shape == (2, 2, 2, 2)


# --- HDF5: many attributes commit once ---------------------------------------------

def test_two_thousand_hdf5_attributes_convert_quickly(tmp_path):
    tables = pytest.importorskip("tables")
    path = tmp_path / "many.h5"
    with tables.open_file(str(path), "w") as h5:
        t = h5.create_table("/", "ctable", np.zeros(3, dtype=[("a", "i4")]))
        for i in range(2000):
            t.attrs[f"a{i}"] = i
    t0 = time.perf_counter()
    done = convert(path, tmp_path / "out.bcolz")
    elapsed = time.perf_counter() - t0
    back = bcolz.open(done.paths[0], mode="r")
    assert len(back.attrs) == 2000 and back.attrs["a1999"] == 1999
    assert elapsed < 5, elapsed


def test_zarr_pickle_codec_is_refused_before_reading(tmp_path):
    zarr = pytest.importorskip("zarr")
    numcodecs = pytest.importorskip("numcodecs")
    store = tmp_path / "p.zarr"
    meta = {"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "order": "C",
            "compressor": None, "fill_value": None, "filters": [{"id": "pickle"}]}
    store.mkdir()
    (store / ".zarray").write_text(json.dumps(meta))
    (store / "0").write_bytes(numcodecs.Pickle().encode(np.array(["a", "b"], dtype=object)))
    assert zarr is not None
    with pytest.raises((bcolz.errors.UnsafeDataError, FormatError), match="pickle"):
        convert(store, tmp_path / "out.bcolz")


def test_an_hdf5_read_that_crashes_the_library_is_a_format_error(tmp_path, monkeypatch):
    """The node is read first in a child process; a child killed by a signal
    (as libhdf5 kills it on some damaged files) is a FormatError here."""
    tables = pytest.importorskip("tables")
    from bcolz_store.converters import hdf5_io
    path = tmp_path / "crash.h5"
    with tables.open_file(str(path), "w") as h5:
        h5.create_table("/", "ctable", np.zeros(3, dtype=[("a", "i4")]))
    monkeypatch.setattr(hdf5_io, "_PROBE", "import os, signal; os.kill(os.getpid(), "
                                           "signal.SIGSEGV)")
    with pytest.raises(FormatError, match=r"crash\.h5.*crashed the HDF5 library"):
        convert(path, tmp_path / "out.bcolz")
    assert not (tmp_path / "out.bcolz").exists()
    assert convert(path, tmp_path / "out.bcolz", isolate=False).length == 3
