"""The conversion hub: round trips through every format, formats from paths,
refusing to overwrite, staging, options, progress, and ``bcolz-store convert``."""

from __future__ import annotations

import argparse
import importlib
import os
import stat
import sys
import warnings

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.cli.convert import add_convert_parser
from bcolz_store.errors import DatasetExistsError, DatasetNotFoundError
from bcolz_store.converters import hub
from bcolz_store.converters import Converted, convert, detect_format
from tests.conftest import bcolz_files

from .samples import KINDS, LENGTHS, TABLE_ATTRS, assert_same, make



def importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


HERE = {name: importable(name) for name in ("pyarrow", "zarr", "tables", "msgpack", "tqdm")}
NEEDS = {"parquet": "pyarrow", "arrow": "pyarrow", "zarr": "zarr", "hdf5": "tables",
         "datadings": "msgpack", "npz": None}
SUFFIX = {"parquet": ".parquet", "arrow": ".feather", "zarr": ".zarr", "npz": ".npz",
          "hdf5": ".h5", "datadings": ".msgpack"}


def need(fmt):
    module = NEEDS[fmt]
    if module and not HERE[module]:
        pytest.skip(f"{module} is not installed")


@pytest.fixture(autouse=True)
def _quiet_zarr_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        yield


def round_trip(tmp_path, fmt, obj_kind, n, **options):
    src = tmp_path / "src.bcolz"
    orig = make(obj_kind, n, rootdir=src)
    dst = tmp_path / f"out{SUFFIX[fmt]}"
    done = convert(src, dst, **options)
    assert done.dst_format == fmt and done.length == n
    convert(dst, tmp_path / "back.bcolz", **({"key_column": None} if fmt == "datadings" else {}))
    return orig, bcolz.open(str(tmp_path / "back.bcolz"), mode="r")


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fmt", ["parquet", "arrow", "zarr", "npz"])
def test_round_trip_keeps_kind_dtypes_values_and_attrs(tmp_path, fmt, kind, n):
    need(fmt)
    orig, back = round_trip(tmp_path, fmt, kind, n)
    assert_same(back, orig)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_hdf5_round_trip_keeps_what_pytables_holds(tmp_path, kind, n):
    need("hdf5")
    src = tmp_path / "src.bcolz"
    orig = make(kind, n, rootdir=src, columns=["i", "x", "b", "s"])
    convert(src, tmp_path / "t.h5")
    convert(tmp_path / "t.h5", tmp_path / "back.bcolz")
    assert_same(bcolz.open(str(tmp_path / "back.bcolz")), orig)


@pytest.mark.parametrize("column", ["t", "w"])
def test_hdf5_refuses_datetime_and_unicode_columns(tmp_path, column):
    need("hdf5")
    make("ctable", 3, rootdir=tmp_path / "src", columns=["i", column])
    with pytest.raises(TypeError, match=repr(column)):
        convert(tmp_path / "src", tmp_path / "t.h5")
    assert sorted(os.listdir(tmp_path)) == ["src"]


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("kind", KINDS)
def test_datadings_round_trip_keeps_values_as_a_table(tmp_path, kind, n):
    need("datadings")
    orig, back = round_trip(tmp_path, "datadings", kind, n, drop_attrs=True)
    assert isinstance(back, bcolz.ctable) and back.attrs.getall() == {}
    expect = {"data": orig} if kind != "ctable" else {k: orig.cols[k] for k in orig.names}
    if n == 0:      # no sample tells the fields: an empty table
        assert back.names == [] and len(back) == 0
        return
    assert back.names == list(expect)
    for name, col in expect.items():
        values = back.cols[name][:]
        if col.dtype.kind in "SU":      # datadings keeps no width: the longest value's
            assert values.dtype.kind == col.dtype.kind
            assert values.dtype.itemsize <= col.dtype.itemsize
        else:
            assert values.dtype == col.dtype
        np.testing.assert_array_equal(values, col[:].reshape(values.shape), err_msg=name)


def test_datadings_refuses_attrs_unless_dropped(tmp_path):
    need("datadings")
    make("ctable", 3, rootdir=tmp_path / "src")
    with pytest.raises(ValueError, match="drop_attrs"):
        convert(tmp_path / "src", tmp_path / "d.msgpack")
    assert sorted(os.listdir(tmp_path)) == ["src"]


@pytest.mark.parametrize("name, reading, fmt", [
    ("a.parquet", False, "parquet"), ("a.PQ", False, "parquet"), ("a.feather", False, "arrow"),
    ("a.arrow", False, "arrow"), ("a.zarr", False, "zarr"), ("a.npz", False, "npz"),
    ("a.h5", False, "hdf5"), ("a.hdf5", False, "hdf5"), ("a.msgpack", False, "datadings"),
    ("a.bcolz", False, "bcolz"), ("plain", False, "bcolz"),
    ("s3://bucket/x/a.parquet", True, "parquet"), ("gs://b/a.zarr/", True, "zarr"),
])
def test_formats_come_from_names(tmp_path, name, reading, fmt):
    location = name if "://" in name else tmp_path / name
    assert detect_format(location, reading=reading) == fmt


def test_a_source_folder_is_recognised_by_its_content(tmp_path):
    make("carray", 3, rootdir=tmp_path / "no_suffix")
    assert detect_format(tmp_path / "no_suffix") == "bcolz"
    assert detect_format(f"file://{tmp_path / 'no_suffix'}") == "bcolz"
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="neither a bcolz dataset nor a zarr store"):
        detect_format(tmp_path / "empty")
    with pytest.raises(DatasetNotFoundError):
        detect_format(tmp_path / "missing.parquet")
    with pytest.raises(ValueError, match="pass to=FORMAT"):
        detect_format(tmp_path / "out.csv", reading=False)


def test_to_overrides_the_suffix(tmp_path):
    make("ctable", 5, rootdir=tmp_path / "src")
    done = convert(tmp_path / "src", tmp_path / "table.data", to="npz")
    assert done.dst_format == "npz"
    assert sorted(np.load(tmp_path / "table.data").files)[0] == "b"


@pytest.mark.parametrize("name, to", [("t.parquet", "npz"), ("t.npz", "zarr"),
                                      ("t.bcolz", "npz"), ("T.NPZ", "bcolz")])
def test_to_that_contradicts_the_destination_suffix_is_refused(tmp_path, name, to):
    make("ctable", 5, rootdir=tmp_path / "src")
    (tmp_path / name).write_bytes(b"precious")
    named = hub.registry.for_suffix(os.path.splitext(name)[1]).name
    with pytest.raises(hub.UnknownFormatError, match=rf"{name}.*names {named}.*{to}"):
        convert(tmp_path / "src", tmp_path / name, to=to, overwrite=True)
    assert (tmp_path / name).read_bytes() == b"precious"
    assert sorted(os.listdir(tmp_path)) == sorted([name, "src"])
    done = convert(tmp_path / "src", tmp_path / "ok.npz", to="npz")    # agreeing: fine
    assert done.dst_format == "npz"


@pytest.mark.parametrize("stored", [True, False], ids=["stored", "in-memory"])
@pytest.mark.parametrize("kind", ["ctable", "carray"])
def test_an_open_carray_or_ctable_is_a_source(tmp_path, kind, stored):
    orig = make(kind, 7, rootdir=tmp_path / "src" if stored else None)
    done = convert(orig, tmp_path / "x.npz")
    assert (done.src_format, done.dst_format, done.kind, done.length) == ("bcolz", "npz", kind, 7)
    assert done.src == (str(tmp_path / "src") if stored else f"(an in-memory {kind})")
    convert(tmp_path / "x.npz", tmp_path / "back")
    assert_same(bcolz.open(str(tmp_path / "back")), orig)
    convert(orig, tmp_path / "copy.bcolz")                       # bcolz to bcolz
    assert_same(bcolz.open(str(tmp_path / "copy.bcolz")), orig)
    if stored:
        with pytest.raises(ValueError, match="overlap"):
            convert(orig, tmp_path / "src" / "inside.npz")
        assert_same(bcolz.open(str(tmp_path / "src")), orig)
    with pytest.raises(TypeError, match="a path, a URL, or an open carray or ctable"):
        convert(object(), tmp_path / "y.npz")


def test_refuses_to_overwrite_and_leaves_the_destination_alone(tmp_path):
    make("ctable", 5, rootdir=tmp_path / "src")
    (tmp_path / "out.npz").write_bytes(b"precious")
    with pytest.raises(DatasetExistsError, match="overwrite"):
        convert(tmp_path / "src", tmp_path / "out.npz")
    assert (tmp_path / "out.npz").read_bytes() == b"precious"
    assert sorted(os.listdir(tmp_path)) == ["out.npz", "src"]
    convert(tmp_path / "src", tmp_path / "out.npz", overwrite=True)
    assert len(np.load(tmp_path / "out.npz")["i"]) == 5


@pytest.mark.parametrize("what", ["fifo", "link to a fifo"])
def test_overwrite_never_replaces_a_special_file(tmp_path, what):
    make("ctable", 5, rootdir=tmp_path / "src")
    os.mkfifo(tmp_path / "pipe")
    dst = tmp_path / "pipe"
    if what != "fifo":
        os.symlink(tmp_path / "pipe", tmp_path / "link.npz")
        dst = tmp_path / "link.npz"
    with pytest.raises(DatasetExistsError, match="not a npz file; not replacing it"):
        convert(tmp_path / "src", dst, to="npz", overwrite=True)
    assert os.path.islink(dst) == (what != "fifo")
    assert stat.S_ISFIFO(os.stat(tmp_path / "pipe").st_mode)


def test_overwrite_replaces_a_bcolz_dataset(tmp_path):
    make("ctable", 5, rootdir=tmp_path / "src")
    make("carray", 9, rootdir=tmp_path / "dst")
    with pytest.raises(DatasetExistsError):
        convert(tmp_path / "src", tmp_path / "dst")
    assert len(bcolz.open(str(tmp_path / "dst"))) == 9
    convert(tmp_path / "src", tmp_path / "dst", overwrite=True)
    assert bcolz.open(str(tmp_path / "dst")).names == list("ixbthsw")
    assert sorted(os.listdir(tmp_path)) == ["dst", "src"]


@pytest.mark.parametrize("dst, what", [("folder.npz", "dir"), ("other", "dir"),
                                       ("file.zarr", "file")])
def test_overwrite_never_replaces_something_of_another_kind(tmp_path, dst, what):
    make("ctable", 5, rootdir=tmp_path / "src")
    target = tmp_path / dst
    if what == "dir":
        target.mkdir()
        (target / "keep.txt").write_text("mine")
    else:
        target.write_text("mine")
    with pytest.raises(DatasetExistsError, match="not replacing"):
        convert(tmp_path / "src", target, overwrite=True)
    assert (target / "keep.txt" if what == "dir" else target).read_text() == "mine"


def test_a_failed_conversion_leaves_nothing(tmp_path):
    t = bcolz.ctable(columns=[np.arange(3), np.array([1, "a", None], dtype=object)],
                     names=["i", "o"], rootdir=str(tmp_path / "src"), mode="w")
    t.flush()
    with pytest.raises(TypeError, match="'o'"):
        convert(tmp_path / "src", tmp_path / "out.npz")
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_a_bcolz_source_is_opened_read_only_and_not_changed(tmp_path, monkeypatch):
    make("ctable", 40, rootdir=tmp_path / "src")
    before = bcolz_files(tmp_path / "src")
    modes = []
    real_open = bcolz.open
    monkeypatch.setattr(bcolz, "open", lambda path, mode="a", **kw:
                        modes.append(mode) or real_open(path, mode=mode, **kw))
    convert(tmp_path / "src", tmp_path / "out.npz")
    assert modes == ["r"]
    assert bcolz_files(tmp_path / "src") == before


def test_bcolz_to_bcolz_copies_with_attrs_and_takes_constructor_options(tmp_path):
    orig = make("ctable", 40, rootdir=tmp_path / "src")
    orig.cols["x"].attrs["unit"] = "m"
    convert(tmp_path / "src", tmp_path / "copy.bcolz", cparams={"clevel": 9, "cname": "zlib"})
    copy = bcolz.open(str(tmp_path / "copy.bcolz"))
    assert_same(copy, orig)
    assert copy.cols["x"].attrs.getall() == {"unit": "m"}
    assert copy.cols["i"].cparams.cname == "zlib"


def test_between_two_other_formats_through_a_temporary_dataset(tmp_path):
    need("parquet")
    orig = make("ctable", 40, rootdir=tmp_path / "src")
    convert(tmp_path / "src", tmp_path / "a.npz")
    done = convert(tmp_path / "a.npz", f"file://{tmp_path / 'b.parquet'}")
    assert done.src_format == "npz" and done.dst_format == "parquet"
    convert(tmp_path / "b.parquet", tmp_path / "back")
    assert_same(bcolz.open(str(tmp_path / "back")), orig)
    assert sorted(os.listdir(tmp_path)) == ["a.npz", "b.parquet", "back", "src"]


def test_options_go_to_the_side_that_names_them(tmp_path):
    need("parquet")
    make("ctable", 40, rootdir=tmp_path / "src")
    convert(tmp_path / "src", tmp_path / "a.parquet", compression="zstd", row_group_size=16)
    import pyarrow.parquet as pq
    meta = pq.ParquetFile(tmp_path / "a.parquet").metadata
    assert meta.num_row_groups == 3 and meta.row_group(0).column(0).compression == "ZSTD"
    done = convert(tmp_path / "a.parquet", tmp_path / "b", chunklen=8, columns=["x", "i"])
    assert bcolz.open(str(tmp_path / "b")).names == ["x", "i"] and done.length == 40
    with pytest.raises(TypeError, match="unexpected option 'bogus'"):
        convert(tmp_path / "src", tmp_path / "c.npz", bogus=1)


def test_overlapping_source_and_destination_are_refused(tmp_path):
    make("ctable", 3, rootdir=tmp_path / "src")
    with pytest.raises(ValueError, match="overlap"):
        convert(tmp_path / "src", tmp_path / "src", to="npz", overwrite=True)
    with pytest.raises(ValueError, match="overlap"):
        convert(tmp_path / "src", tmp_path / "src" / "inner.npz")


def test_remote_destinations_only_for_formats_that_reach_them(tmp_path):
    make("ctable", 3, rootdir=tmp_path / "src")
    with pytest.raises(ValueError, match="local paths only"):
        convert(tmp_path / "src", "s3://bucket/out.npz")


@pytest.mark.parametrize("module, extra, fmt", [
    ("pyarrow", "arrow", "parquet"), ("pyarrow", "arrow", "arrow"), ("zarr", "zarr", "zarr"),
    ("tables", "hdf5", "hdf5"), ("msgpack", "datadings", "datadings")])
def test_a_missing_library_names_the_extra(tmp_path, monkeypatch, module, extra, fmt):
    make("ctable", 3, rootdir=tmp_path / "src", columns=["i", "x"])
    monkeypatch.setitem(sys.modules, module, None)      # import now raises ImportError
    with pytest.raises(ImportError, match=rf"pip install 'bcolz_store\[{extra}\]'"):
        convert(tmp_path / "src", tmp_path / f"out{SUFFIX[fmt]}", drop_attrs=True)
    assert sorted(os.listdir(tmp_path)) == ["src"]


def test_progress_shows_only_when_asked_or_on_a_terminal(tmp_path, capsys):
    if not HERE["tqdm"]:
        pytest.skip("tqdm is not installed")
    make("ctable", 40, rootdir=tmp_path / "src")
    convert(tmp_path / "src", tmp_path / "a.npz")              # stderr is not a terminal
    assert capsys.readouterr().err == ""
    convert(tmp_path / "src", tmp_path / "b.npz", progress=True)
    assert "to npz" in capsys.readouterr().err
    convert(tmp_path / "src", tmp_path / "c.npz", progress=False)
    assert capsys.readouterr().err == ""


def test_progress_without_tqdm_is_silent(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    make("ctable", 4, rootdir=tmp_path / "src")
    convert(tmp_path / "src", tmp_path / "a.npz", progress=True)
    assert capsys.readouterr().err == ""


# --- bcolz-store convert -----------------------------------------------------------

def cli(capsys, *argv):
    parser = argparse.ArgumentParser(prog="bcolz-store")
    parser.add_argument("--traceback", action="store_true")
    add_convert_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([str(a) for a in argv])
    status = args.func(args)
    out, err = capsys.readouterr()
    return status, out, err


def test_command_converts_and_prints_one_line(tmp_path, capsys):
    make("ctable", 5, rootdir=tmp_path / "src")
    status, out, err = cli(capsys, "convert", tmp_path / "src", tmp_path / "t.npz")
    assert status == 0 and err == ""
    src, dst = tmp_path / "src", tmp_path / "t.npz"
    assert out.strip() == f"{dst}: npz, ctable of 5 rows (from bcolz {src})"


def test_command_fails_with_one_line_on_stderr(tmp_path, capsys):
    make("ctable", 5, rootdir=tmp_path / "src")
    cli(capsys, "convert", tmp_path / "src", tmp_path / "t.npz")
    status, out, err = cli(capsys, "convert", tmp_path / "src", tmp_path / "t.npz")
    assert status == 1 and out == ""
    assert err.startswith("bcolz-store: error: convert: ") and err.count("\n") == 1
    assert "--overwrite" in err
    status, _, err = cli(capsys, "convert", tmp_path / "missing", tmp_path / "u.npz")
    assert status == 1 and "no such file" in err and err.count("\n") == 1


def test_command_options(tmp_path, capsys):
    need("datadings")
    make("ctable", 5, rootdir=tmp_path / "src", columns=["i", "x"])
    status, _, err = cli(capsys, "convert", tmp_path / "src", tmp_path / "d.msgpack")
    assert status == 1 and "--drop-attrs" in err
    status, _, _ = cli(capsys, "convert", "--drop-attrs", "--no-progress", tmp_path / "src",
                       tmp_path / "d.msgpack")
    assert status == 0
    status, out, _ = cli(capsys, "convert", "--to", "npz", tmp_path / "src", tmp_path / "d.bin")
    assert status == 0 and ": npz, ctable of 5 rows" in out
    status, out, err = cli(capsys, "convert", "--to", "npz", "--overwrite", tmp_path / "src",
                           tmp_path / "d.msgpack")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert "d.msgpack" in err and "datadings" in err and "npz" in err
    assert (tmp_path / "d.msgpack").read_bytes()[:1] != b"PK"      # still the datadings file
    with pytest.raises(SystemExit):
        cli(capsys, "convert", "--to", "csv", tmp_path / "src", tmp_path / "x")


@pytest.mark.parametrize("flags", [["--strings", "vlen"], ["--missing", "?"]])
def test_command_names_the_flag_a_conversion_does_not_take(tmp_path, capsys, flags):
    make("ctable", 5, rootdir=tmp_path / "src")
    status, out, err = cli(capsys, "convert", *flags, tmp_path / "src", tmp_path / "t.npz")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert f"{flags[0]} does not apply to a conversion from bcolz to npz" in err
    assert "convert()" not in err and not (tmp_path / "t.npz").exists()


def test_converted_lists_every_file_written(tmp_path):
    need("datadings")
    make("carray", 5, rootdir=tmp_path / "src")
    done = convert(tmp_path / "src", tmp_path / "d.msgpack", drop_attrs=True)
    assert isinstance(done, Converted) and done.kind == "carray"
    assert [os.path.basename(p) for p in done.paths] == [
        "d.msgpack", "d.msgpack.offsets", "d.msgpack.keys", "d.msgpack.key_hashes",
        "d.msgpack.filter", "d.msgpack.md5"]
    assert TABLE_ATTRS  # the sample's attrs were dropped on request


def test_remote_sources_only_for_formats_that_reach_them(tmp_path):
    with pytest.raises(ValueError, match="local paths only"):
        convert("s3://bucket/data.npz", tmp_path / "out")


def test_a_failed_move_into_place_puts_the_old_destination_back(tmp_path, monkeypatch):
    need("datadings")
    make("ctable", 4, rootdir=tmp_path / "src", columns=["i"])
    convert(tmp_path / "src", tmp_path / "d.msgpack", drop_attrs=True)
    before = {p.name: p.read_bytes() for p in tmp_path.glob("d.msgpack*")}
    real_replace, calls = os.replace, []

    def flaky(a, b):
        calls.append(a)
        if len(calls) == 9:         # six moved aside, two new ones in, then a failure
            raise OSError("disk trouble")
        return real_replace(a, b)

    real_commit = hub._Stage.commit

    def commit_on_a_flaky_disk(stage):
        with monkeypatch.context() as patch:
            patch.setattr(hub.os, "replace", flaky)
            return real_commit(stage)

    monkeypatch.setattr(hub._Stage, "commit", commit_on_a_flaky_disk)
    make("ctable", 7, rootdir=tmp_path / "src2", columns=["i"])
    with pytest.raises(OSError, match="disk trouble"):
        convert(tmp_path / "src2", tmp_path / "d.msgpack", drop_attrs=True, overwrite=True)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in tmp_path.glob("d.msgpack*")} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_hdf5_options_and_column_attrs(tmp_path):
    need("hdf5")
    t = make("ctable", 5, rootdir=tmp_path / "src", columns=["i", "x"])
    t.cols["x"].attrs["unit"] = "m"
    with pytest.raises(ValueError, match="column attrs"):
        convert(tmp_path / "src", tmp_path / "t.h5")
    convert(tmp_path / "src", tmp_path / "t.h5", nodepath="/a/b", drop_attrs=True)
    convert(tmp_path / "t.h5", tmp_path / "back", nodepath="/a/b")
    back = bcolz.open(str(tmp_path / "back"))
    assert back.attrs.getall() == TABLE_ATTRS and back.cols["x"].attrs.getall() == {}
