"""kerchunk references of carrays and ctables, read by zarr and xarray in place."""

from __future__ import annotations

import base64
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import CodecError

zarr = pytest.importorskip("zarr")
fsspec = pytest.importorskip("fsspec")
numcodecs = pytest.importorskip("numcodecs")

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification",
                                        "ignore:.*Consolidated metadata",
                                        "ignore:.*zarr_format")

FIXTURES = Path("/work/shared/fixtures/bcolz-1.13")


def open_group(refs, remote_protocol="file", **remote_options):
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol=remote_protocol,
                           **({"remote_options": remote_options} if remote_options else {}))
    return zarr.open_group(store=fs.get_mapper(""), mode="r", zarr_format=2)


def open_dataset(refs, **remote_options):
    xr = pytest.importorskip("xarray")
    options = {"fo": refs, "remote_protocol": "file"}
    return xr.open_dataset("reference://", engine="zarr", consolidated=False,
                           backend_kwargs={"storage_options": options})


def check_chunk_files(refs):
    """Each reference is ``[file URL, 16, ctbytes]`` and the file is exactly 16 + ctbytes."""
    for key, ref in refs["refs"].items():
        if isinstance(ref, list):
            url, offset, length = ref
            path = url[len("file://"):]
            assert url.startswith("file:///") and offset == 16
            assert os.path.getsize(path) == 16 + length, key
            with open(path, "rb") as f:
                head = f.read(32)
            assert head[:16] == bytes.fromhex("626c706b010000000100000000000000")
            assert int.from_bytes(head[28:32], "little") == length


CASES = [
    # (values, chunklen, extra carray kwargs)
    (np.arange(40, dtype="i4"), 8, {}),                                  # an exact multiple
    (np.linspace(0, 1, 5), 16, {}),                                      # leftover only
    (np.array([], dtype="f8"), 16, {}),                                  # empty
    (np.arange(66, dtype="u2").reshape(11, 2, 3), 4, {}),               # multidimensional atom
    (np.arange(30, dtype=">i4"), 7, {}),                                 # big-endian
    (np.arange(25).astype("m8[h]") + np.datetime64("2020-01-01", "ns"), 10, {}),
    (np.arange(25).astype("m8[s]"), 10, {}),
    (np.arange(20) % 3 == 0, 8, {}),
    (np.arange(20) * (1 + 2j), 8, {"dflt": 1 - 1j}),
    (np.array([b"ab", b"", b"xyz"] * 7, dtype="S3"), 5, {"dflt": b"q"}),
    (np.array(["h\u00e9", "", "wxyz"] * 7, dtype="U4"), 5, {"dflt": "z"}),
    (np.random.default_rng(1).random(5000), 1024, {"cparams": bcolz.cparams(shuffle=2, cname="zstd")}),
    (np.random.default_rng(2).random(5000), 1024, {"cparams": bcolz.cparams(quantize=3, cname="zlib")}),
    (np.arange(50, dtype="i8"), 16, {"cparams": bcolz.cparams(clevel=0, cname="blosclz")}),
    (np.full(45, np.nan), 16, {"dflt": np.nan}),
]


@pytest.mark.parametrize("values, chunklen, kwargs", CASES,
                         ids=[f"{c[0].dtype.str}-{c[0].shape}-{c[1]}" for c in CASES])
def test_zarr_reads_the_carray_through_references(tmp_path, values, chunklen, kwargs):
    c = bcolz.carray(values, chunklen=chunklen, rootdir=str(tmp_path / "x"), **kwargs)
    c.attrs["unit"] = "m"
    refs = c.to_kerchunk()
    refs = json.loads(json.dumps(refs))         # what a JSON file holds
    check_chunk_files(refs)
    nfull = len(values) // chunklen
    assert sum(isinstance(r, list) for r in refs["refs"].values()) == nfull
    z = open_group(refs)["x"]
    assert z.shape == values.shape and z.chunks == (chunklen,) + values.shape[1:]
    assert z.dtype.str == values.dtype.str      # '>i4' stays big-endian
    assert json.loads(refs["refs"]["x/.zarray"])["dtype"] == values.dtype.str
    assert dict(z.attrs) == {"unit": "m", "_ARRAY_DIMENSIONS": [f"dim_{k}" for k in
                                                                 range(values.ndim)]}
    assert_array_equal(z[:], c[:])


def test_xarray_opens_a_carray_and_its_multidimensional_atoms(tmp_path):
    values = np.arange(60, dtype="f4").reshape(20, 3)
    c = bcolz.carray(values, chunklen=8, rootdir=str(tmp_path / "grid"))
    c.attrs.update(units="K", scale=0.5)
    ds = open_dataset(c.to_kerchunk())
    assert ds["grid"].dims == ("dim_0", "dim_1")
    assert ds["grid"].attrs == {"units": "K", "scale": 0.5}
    assert_array_equal(ds["grid"].values, values)


def test_a_ctable_is_an_xarray_dataset_sharing_the_row_dimension(tmp_path):
    n = 37
    t = bcolz.ctable([np.arange(n), np.linspace(0, 1, n), np.arange(n).astype("S4"),
                      np.arange(2 * n, dtype="i2").reshape(n, 2)],
                     names=["i", "f", "s", "pair"], chunklen=10, rootdir=str(tmp_path / "t"))
    t.attrs["source"] = "test"
    refs = t.to_kerchunk()
    check_chunk_files(refs)
    ds = open_dataset(refs)
    assert dict(ds.sizes) == {"row": n, "pair_dim_1": 2}
    assert ds.attrs == {"source": "test"}
    for name in t.names:
        assert_array_equal(ds[name].values, t.cols[name][:])
    group = open_group(refs)
    assert sorted(group.array_keys()) == sorted(t.names)


# Column names zarr (v2, through fsspec's reference filesystem) cannot open
# as array names: empty, '.', '..', with a '/' or '\\', starting with '.' (the
# names of zarr's own metadata keys).
UNSAFE_NAMES = ["", ".", "..", "a/b", "a\\b", ".zattrs", ".hidden"]


def test_columns_zarr_cannot_name_get_their_folder_as_array_name(tmp_path):
    names = ["ok", *UNSAFE_NAMES, "__c0_", "a b", "\u00e9", "__x", "c.0"]
    n = 5
    t = bcolz.ctable([np.arange(n) * (k + 1) for k in range(len(names))], names=names,
                     chunklen=2, rootdir=str(tmp_path / "t"))
    refs = t.to_kerchunk()
    group = open_group(refs)
    keys = sorted(group.array_keys())
    assert len(keys) == len(names)                  # none lost, none clobbered
    seen = {}
    for name in names:
        key = name if name not in UNSAFE_NAMES else t.cols.folder(name)
        if name == "__c0_":                         # the folder of '' is "__c0_"
            key = t.cols.folder(name)
        assert key in keys, name
        array = group[key]
        assert_array_equal(array[:], t.cols[name][:], err_msg=repr(name))
        if key != name:
            assert array.attrs["bcolz_store_column"] == name
        else:
            assert "bcolz_store_column" not in array.attrs
        seen[key] = name
    assert len(seen) == len(names)
    ds = open_dataset(refs)
    assert sorted(ds.data_vars) == keys and dict(ds.sizes) == {"row": n}
    for key, name in seen.items():
        assert_array_equal(ds[key].values, t.cols[name][:])


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "a\\b", ".zarray"])
def test_a_carray_name_zarr_cannot_open_is_refused(tmp_path, name):
    c = bcolz.carray(np.arange(4), rootdir=str(tmp_path / "c"))
    with pytest.raises(ValueError, match="zarr array name"):
        c.to_kerchunk(name=name)


def test_url_overrides_the_prefix_and_name_the_array(tmp_path):
    c = bcolz.carray(np.arange(20), chunklen=8, rootdir=str(tmp_path / "a"))
    refs = c.to_kerchunk("file://" + str(tmp_path / "b") + "/", name="values")
    assert refs["refs"]["values/0"][0] == "file://" + str(tmp_path / "b" / "data" / "__0.blp")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    shutil.rmtree(tmp_path / "a")
    assert_array_equal(open_group(refs)["values"][:], np.arange(20))
    t = bcolz.ctable([np.arange(3)], names=["a"], chunklen=2, rootdir=str(tmp_path / "t"))
    assert t.to_kerchunk("s3://bucket/t.bcolz")["refs"]["a/0"][0] == \
        "s3://bucket/t.bcolz/a/data/__0.blp"


def test_inline_threshold_inlines_small_full_chunks(tmp_path):
    c = bcolz.carray(np.zeros(40), chunklen=8, rootdir=str(tmp_path / "z"))
    refs = c.to_kerchunk(inline_threshold=1000)
    assert all(isinstance(r, str) for k, r in refs["refs"].items() if not k.startswith(".") and
               "/." not in k)
    assert_array_equal(open_group(refs)["z"][:], np.zeros(40))
    with pytest.raises(ValueError, match="inline_threshold"):
        c.to_kerchunk(inline_threshold=-1)
    with pytest.raises(ValueError, match="name"):
        c.to_kerchunk(name="a/b")


def test_the_inlined_leftover_is_padded_with_the_fill_value(tmp_path):
    c = bcolz.carray(np.arange(5, dtype="i8"), chunklen=8, dflt=-3, rootdir=str(tmp_path / "p"))
    refs = c.to_kerchunk()
    meta = json.loads(refs["refs"]["p/.zarray"])
    assert meta["fill_value"] is None and meta["compressor"]["id"] == "blosc"
    raw = numcodecs.Blosc().decode(base64.b64decode(refs["refs"]["p/0"][len("base64:"):]))
    assert_array_equal(np.frombuffer(raw, dtype="i8"), [0, 1, 2, 3, 4, -3, -3, -3])


def test_the_inlined_leftover_without_numcodecs_is_the_same_frame(tmp_path, monkeypatch):
    import sys
    c = bcolz.carray(np.arange(5, dtype="i8"), chunklen=8, rootdir=str(tmp_path / "p"))
    expected = c.to_kerchunk()
    monkeypatch.setitem(sys.modules, "numcodecs", None)
    refs = c.to_kerchunk()
    monkeypatch.undo()
    raw = numcodecs.Blosc().decode(base64.b64decode(refs["refs"]["p/0"][len("base64:"):]))
    assert_array_equal(np.frombuffer(raw, dtype="i8")[:5], np.arange(5))
    assert refs["refs"]["p/.zarray"] == expected["refs"]["p/.zarray"]


def test_unflushed_changes_are_refused_until_flushed(tmp_path):
    c = bcolz.carray(np.arange(10), chunklen=4, rootdir=str(tmp_path / "u"))
    c.append([10, 11, 12])
    with pytest.raises(ValueError, match="not flushed"):
        c.to_kerchunk()
    c.flush()
    assert_array_equal(open_group(c.to_kerchunk())["u"][:], np.arange(13))
    with pytest.raises(ValueError, match="in-memory"):
        bcolz.carray(np.arange(3)).to_kerchunk()


def test_appending_afterwards_leaves_the_references_at_the_old_rows(tmp_path):
    c = bcolz.carray(np.arange(10), chunklen=4, rootdir=str(tmp_path / "s"))
    refs = c.to_kerchunk()
    c.append(np.arange(10, 30))
    c.flush()
    assert_array_equal(open_group(refs)["s"][:], np.arange(10))


def test_vlen_and_categorical_columns_are_refused_naming_them(tmp_path):
    t = bcolz.ctable([np.arange(4), bcolz.carray(["a", "bb", "a", "c"], dtype="category"),
                      bcolz.carray(["x", "yy", "zzz", ""], dtype=bcolz.vlen("str"))],
                     names=["n", "cat", "text"], rootdir=str(tmp_path / "t"))
    with pytest.raises(TypeError, match="column 'cat'.*categorical") as err:
        t.to_kerchunk()
    assert "skip_unsupported=True" in str(err.value)      # says how to leave it out
    with pytest.raises(TypeError, match="variable-length"):
        t.cols["text"].to_kerchunk()
    with pytest.warns(UserWarning) as caught:
        refs = t.to_kerchunk(skip_unsupported=True)
    assert {str(w.message).split("'")[1] for w in caught} == {"cat", "text"}
    ds = open_dataset(refs)
    assert list(ds.data_vars) == ["n"]
    assert_array_equal(ds["n"].values, np.arange(4))


def test_object_and_structured_carrays_are_refused(tmp_path):
    c = bcolz.carray(np.array([{"a": 1}, None], dtype=object), rootdir=str(tmp_path / "o"))
    with pytest.raises(TypeError, match="object"):
        c.to_kerchunk()
    c = bcolz.carray(np.zeros(3, dtype="i4,f8"), rootdir=str(tmp_path / "r"))
    with pytest.raises(TypeError, match="structured"):
        c.to_kerchunk()


def test_a_kind_with_more_than_bcolz_storage_keys_is_refused(tmp_path):
    c = bcolz.carray(np.arange(3), rootdir=str(tmp_path / "k"))
    path = tmp_path / "k" / "meta" / "storage"
    obj = json.loads(path.read_text())
    obj["future_kind"] = {"what": "not plain"}          # a key a later version may write
    path.write_text(json.dumps(obj))
    with pytest.raises(TypeError, match="future_kind"):
        bcolz.open(str(tmp_path / "k"), mode="r").to_kerchunk()
    # a nullable carray (values plus a validity) is not plain either
    bcolz.carray(np.ma.masked_array([1, 2], mask=[False, True]), rootdir=str(tmp_path / "n"))
    with pytest.raises(TypeError, match="nullable"):
        bcolz.open(str(tmp_path / "n"), mode="r").to_kerchunk()


def test_snappy_chunks_are_refused(tmp_path):
    c = bcolz.carray(np.arange(4096, dtype="i8"), chunklen=1024, rootdir=str(tmp_path / "sn"))
    path = tmp_path / "sn" / "data" / "__0.blp"
    data = bytearray(path.read_bytes())
    data[18] = (data[18] & 0x1F) | (2 << 5)         # flags: codec 2 (snappy)
    path.write_bytes(bytes(data))
    with pytest.raises(CodecError, match="snappy"):
        bcolz.open(str(tmp_path / "sn"), mode="r").to_kerchunk()


FIXTURE_CARRAYS = sorted(name for name, info in json.loads(
    (FIXTURES / "manifest.json").read_text())["datasets"].items()
    if info["kind"] == "carray") if FIXTURES.is_dir() else []


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="no bcolz 1.13 fixtures")
@pytest.mark.parametrize("name", FIXTURE_CARRAYS)
def test_bcolz_fixtures_read_through_references(tmp_path, name):
    shutil.copytree(FIXTURES / name, tmp_path / name)     # never written where they live
    c = bcolz.open(str(tmp_path / name), mode="r")
    refs = c.to_kerchunk()
    check_chunk_files(refs)
    expected = np.load(FIXTURES / f"{name}.expected.npz")["data"]
    assert_array_equal(open_group(refs)[name][:], expected)


@pytest.mark.skipif(not FIXTURES.is_dir(), reason="no bcolz 1.13 fixtures")
def test_a_bcolz_ctable_fixture_is_an_xarray_dataset(tmp_path):
    shutil.copytree(FIXTURES / "ctable_mixed", tmp_path / "t")
    t = bcolz.open(str(tmp_path / "t"), mode="r")
    expected = np.load(FIXTURES / "ctable_mixed.expected.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = open_dataset(t.to_kerchunk())
    for name in t.names:
        assert_array_equal(ds[name].values, expected[name])


def test_a_carray_on_s3_is_referenced_by_its_url(s3_bucket):
    url, options = s3_bucket
    c = bcolz.carray(np.arange(50, dtype="i4"), chunklen=16, rootdir=f"{url}/a.bcolz",
                     storage_options=options)
    refs = c.to_kerchunk()
    assert refs["refs"]["a.bcolz/0"] == [f"{url}/a.bcolz/data/__0.blp", 16,
                                        refs["refs"]["a.bcolz/0"][2]]
    fs = fsspec.filesystem("reference", fo=refs, remote_protocol="s3", asynchronous=True,
                           remote_options=dict(options, asynchronous=True))
    store = zarr.storage.FsspecStore(fs, read_only=True, path="")
    z = zarr.open_group(store=store, mode="r", zarr_format=2)["a.bcolz"]
    assert_array_equal(z[:], np.arange(50))


def test_the_python_block_of_the_guide_runs(tmp_path, monkeypatch, capsys):
    import re
    pytest.importorskip("xarray")
    doc = Path(__file__).resolve().parents[2] / "docs" / "zarr.md"
    blocks = re.findall(r"```python\n(.*?)```", doc.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(blocks[0], str(doc), "exec"), {})     # noqa: S102 - our own doc
    out = capsys.readouterr().out.splitlines()
    assert out == ["(1000,) (256,) [0.998999 1.      ]", "('dim_0',) {'units': 'm'}",
                   "{'row': 1000} ['i', 'x']"]


def test_a_store_without_urls_needs_url(tmp_path):
    from bcolz_store.storage.memory import MemoryStore
    c = bcolz.carray(np.arange(20), chunklen=8, rootdir=MemoryStore())
    with pytest.raises(ValueError, match="url="):
        c.to_kerchunk()
    refs = c.to_kerchunk("memory://elsewhere/m", name="m")
    assert refs["refs"]["m/1"][0] == "memory://elsewhere/m/data/__1.blp"


def test_verify_reads_whole_files_and_gives_the_same_references(tmp_path):
    c = bcolz.carray(np.arange(100), chunklen=16, rootdir=str(tmp_path / "v"))
    plain = c.to_kerchunk()
    checked = bcolz.open(str(tmp_path / "v"), mode="r", verify=True).to_kerchunk()
    assert checked == plain
