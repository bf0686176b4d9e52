"""convert (library and command) with URLs and packs: a bcolz dataset at a URL or
in a ``.zip`` pack as the source, a URL as the destination, for every format
whose library reaches URLs (bcolz, Parquet, Arrow, zarr).

S3 is a moto server on 127.0.0.1 (the ``s3_bucket`` fixture); nothing else is
reached.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import bcolz_store as bcolz
from bcolz_store.cli import main
from bcolz_store.errors import DatasetExistsError
from bcolz_store.converters import convert, detect_format
from bcolz_store.storage.packs import pack

from .samples import TABLE_ATTRS, assert_same, make
from .test_convert import need


@pytest.fixture(autouse=True)
def _quiet_zarr_warnings():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*does not have a Zarr V3 specification.*")
        yield


def test_a_pack_is_a_source_for_every_format(tmp_path):
    orig = make("ctable", 40, rootdir=tmp_path / "src")
    pack(str(tmp_path / "src"), str(tmp_path / "p.zip"))
    assert detect_format(str(tmp_path / "p.zip")) == "bcolz"
    done = convert(tmp_path / "p.zip", tmp_path / "copy")
    assert (done.src_format, done.kind, done.length) == ("bcolz", "ctable", 40)
    assert_same(bcolz.open(str(tmp_path / "copy")), orig)
    convert(tmp_path / "p.zip", tmp_path / "t.npz")
    convert(tmp_path / "t.npz", tmp_path / "back")
    assert_same(bcolz.open(str(tmp_path / "back")), orig)
    with pytest.raises(ValueError, match="bcolz-store pack"):
        convert(tmp_path / "src", tmp_path / "out.zip")


def test_storage_options_without_a_url_are_refused(tmp_path):
    make("ctable", 3, rootdir=tmp_path / "src")
    with pytest.raises(ValueError, match="storage_options are for URLs"):
        convert(tmp_path / "src", tmp_path / "t.npz", storage_options={"key": "k"})


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_bcolz_to_a_url_and_back(tmp_path, s3_bucket, kind):
    root, options = s3_bucket
    orig = make(kind, 40, rootdir=tmp_path / "src")
    done = convert(tmp_path / "src", f"{root}/copy.bcolz", storage_options=options)
    assert (done.dst_format, done.kind, done.paths) == ("bcolz", kind, (f"{root}/copy.bcolz",))
    remote = bcolz.open(f"{root}/copy.bcolz", mode="r", storage_options=options)
    assert_same(remote, orig)
    convert(f"{root}/copy.bcolz", tmp_path / "back", storage_options=options)
    assert_same(bcolz.open(str(tmp_path / "back")), orig)


def test_a_url_destination_is_replaced_only_when_asked_and_only_a_dataset(tmp_path, s3_bucket):
    import s3fs
    root, options = s3_bucket
    make("ctable", 5, rootdir=tmp_path / "small")
    make("ctable", 40, rootdir=tmp_path / "big")
    convert(tmp_path / "small", f"{root}/t", storage_options=options)
    with pytest.raises(DatasetExistsError, match="overwrite"):
        convert(tmp_path / "big", f"{root}/t", storage_options=options)
    assert len(bcolz.open(f"{root}/t", storage_options=options)) == 5
    convert(tmp_path / "big", f"{root}/t", storage_options=options, overwrite=True)
    assert len(bcolz.open(f"{root}/t", storage_options=options)) == 40
    fs = s3fs.S3FileSystem(**options)
    fs.pipe(f"{root[5:]}/other/notes.txt", b"not a dataset")
    with pytest.raises(DatasetExistsError, match="not a bcolz dataset"):
        convert(tmp_path / "big", f"{root}/other", storage_options=options, overwrite=True)
    assert fs.cat(f"{root[5:]}/other/notes.txt") == b"not a dataset"


@pytest.mark.parametrize("fmt, suffix", [("parquet", "parquet"), ("arrow", "feather"),
                                         ("zarr", "zarr")])
def test_formats_that_reach_urls_both_ways(tmp_path, s3_bucket, fmt, suffix):
    need(fmt)
    root, options = s3_bucket
    orig = make("ctable", 40, rootdir=tmp_path / "src")
    convert(tmp_path / "src", f"{root}/src.bcolz", storage_options=options)
    done = convert(f"{root}/src.bcolz", f"{root}/t.{suffix}", storage_options=options)
    assert done.dst_format == fmt
    convert(f"{root}/t.{suffix}", f"{root}/back.bcolz", storage_options=options)
    assert_same(bcolz.open(f"{root}/back.bcolz", storage_options=options), orig)
    convert(f"{root}/t.{suffix}", tmp_path / "local", storage_options=options)
    assert_same(bcolz.open(str(tmp_path / "local")), orig)
    with pytest.raises(DatasetExistsError):
        convert(tmp_path / "src", f"{root}/t.{suffix}", storage_options=options)


def test_a_url_without_a_suffix_is_told_by_its_content(tmp_path, s3_bucket):
    need("zarr")
    root, options = s3_bucket
    orig = make("ctable", 10, rootdir=tmp_path / "src")
    convert(tmp_path / "src", f"{root}/data", storage_options=options)
    convert(tmp_path / "src", f"{root}/z", to="zarr", storage_options=options)
    assert detect_format(f"{root}/data", storage_options=options) == "bcolz"
    assert detect_format(f"{root}/z", storage_options=options) == "zarr"
    convert(f"{root}/z", tmp_path / "back", storage_options=options)
    assert_same(bcolz.open(str(tmp_path / "back")), orig)


def test_the_command_takes_urls_packs_and_storage_options(tmp_path, s3_bucket, capsys):
    root, options = s3_bucket
    make("ctable", 40, rootdir=tmp_path / "src")
    text = json.dumps(options)
    assert main(["convert", str(tmp_path / "src"), f"{root}/a.bcolz", "--storage-options",
                 text, "--no-progress"]) == 0
    assert f"{root}/a.bcolz: bcolz, ctable of 40 rows" in capsys.readouterr().out
    assert main(["convert", f"{root}/a.bcolz", str(tmp_path / "a.npz"), "--storage-options",
                 text, "--no-progress"]) == 0
    pack(str(tmp_path / "src"), str(tmp_path / "p.zip"))
    assert main(["convert", str(tmp_path / "p.zip"), f"{root}/from-pack", "--storage-options",
                 text, "--no-progress"]) == 0
    assert bcolz.open(f"{root}/from-pack", storage_options=options).attrs.getall() == \
        TABLE_ATTRS
    capsys.readouterr()
    assert main(["convert", str(tmp_path / "src"), f"{root}/x", "--storage-options", "[1]"]) == 2
    assert "must be a JSON object" in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(str(tmp_path / "a.npz"))["i"],
                                  bcolz.open(str(tmp_path / "src"))["i"][:])


def test_from_parquet_and_from_feather_reach_a_url_rootdir_with_the_storage_options(
        tmp_path, s3_bucket):
    from bcolz_store.converters.arrow import from_feather, from_parquet, to_feather, to_parquet
    root, options = s3_bucket
    orig = make("ctable", 20)
    to_parquet(orig, str(tmp_path / "t.parquet"))
    to_feather(orig, f"{root}/t.arrow", storage_options=options)
    from_parquet(str(tmp_path / "t.parquet"), rootdir=f"{root}/a.bcolz", storage_options=options)
    from_feather(f"{root}/t.arrow", rootdir=f"{root}/b.bcolz", storage_options=options)
    for name in ("a", "b"):
        assert_same(bcolz.open(f"{root}/{name}.bcolz", storage_options=options), orig)
