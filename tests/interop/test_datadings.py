"""datadings datasets: the six files as datadings makes them, its reader,
msgpack-numpy values, and hostile files."""

from __future__ import annotations

import hashlib
import io
import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import DatasetExistsError, FormatError

from .samples import make

msgpack = pytest.importorskip("msgpack")
dd = pytest.importorskip("bcolz_store.converters.datadings")

try:
    import datadings  # noqa: F401 - only whether it imports
    DATADINGS_HERE = True
except ImportError:
    DATADINGS_HERE = False
SUFFIXES = ["", ".offsets", ".keys", ".key_hashes", ".filter", ".md5"]


def table(n=12):
    cols = {
        "key": np.array([f"k{i:03d}" for i in range(n)]),
        "label": np.arange(n) % 4,                              # int64: msgpack int
        "score": np.linspace(0, 1, n, dtype="f4"),              # numpy scalar
        "when": np.datetime64("2020-01-01", "s") + np.arange(n),
        "image": np.arange(n * 6, dtype="u1").reshape(n, 2, 3),  # msgpack-numpy array
        "name": np.array(["\u00e9%d" % i for i in range(n)]),
        "raw": np.array([b"\x00\x01%d" % i for i in range(n)]),
        "ok": np.arange(n) % 2 == 0,
    }
    return bcolz.ctable(columns=list(cols.values()), names=list(cols))


def write(tmp_path, obj=None, name="d.msgpack", **kwargs):
    path = tmp_path / name
    dd.to_datadings(table() if obj is None else obj, path, **kwargs)
    return path


def test_a_table_round_trips_with_its_key_column(tmp_path):
    t = table()
    back = dd.from_datadings(write(tmp_path, t), rootdir=tmp_path / "b")
    assert back.names == t.names
    for name in t.names:
        assert back.cols[name].dtype == t.cols[name].dtype, name
        assert_array_equal(back[name][:], t[name][:], err_msg=name)


def test_keys_are_row_numbers_without_a_key_column(tmp_path):
    path = write(tmp_path, make("ctable", 3, columns=["i", "x"]), drop_attrs=True)
    back = dd.from_datadings(path)
    assert back.names == ["key", "i", "x"] and back["key"][:].tolist() == ["0", "1", "2"]
    assert dd.from_datadings(path, key_column=None).names == ["i", "x"]
    assert dd.from_datadings(path, key_column="id").names == ["id", "i", "x"]


def test_the_files_are_what_datadings_expects(tmp_path):
    path = write(tmp_path)
    files = {s: Path(f"{path}{s}") for s in SUFFIXES}
    data = files[""].read_bytes()
    offsets = np.frombuffer(files[".offsets"].read_bytes(), dtype=">u8")
    assert offsets[0] == 0 and offsets[-1] == len(data) and len(offsets) == 13
    first = msgpack.unpackb(data[offsets[0]:offsets[1]], raw=False, strict_map_key=False)
    assert first["key"] == "k000" and first["label"] == 0 and first["image"][b"nd"] is True
    assert msgpack.unpackb(files[".keys"].read_bytes()) == [f"k{i:03d}" for i in range(12)]
    assert len(files[".key_hashes"].read_bytes()) == 8 + 8 * 12
    assert files[".filter"].read_bytes()[:8] == b"SIMPBLOO"
    md5 = dict(line.split("  ")[::-1] for line in files[".md5"].read_text().splitlines())
    assert md5 == {f.name: hashlib.md5(f.read_bytes()).hexdigest()
                   for s, f in files.items() if s != ".md5"}


def test_values_decode_with_msgpack_numpy(tmp_path):
    msgpack_numpy = pytest.importorskip("msgpack_numpy")
    data = write(tmp_path).read_bytes()
    sample = next(msgpack.Unpacker(io.BytesIO(data), raw=False,
                                   object_hook=msgpack_numpy.decode))
    assert sample["score"].dtype == np.dtype("f4") and sample["image"].shape == (2, 3)
    assert sample["when"] == np.datetime64("2020-01-01T00:00:00")


def test_the_bloom_filter_matches_simplebloom():
    simplebloom = pytest.importorskip("simplebloom")
    for keys in ([], ["a"], [f"key-{i}" for i in range(1000)]):
        bf = simplebloom.BloomFilter(max(2, len(keys)))
        for key in keys:
            bf += key
        assert dd.bloom_filter(keys) == bytes(bf.dumps())


@pytest.mark.skipif(not DATADINGS_HERE, reason="datadings is not installed")
def test_files_are_byte_identical_to_datadings_writer(tmp_path):
    from datadings.writer import FileWriter
    samples = [{"key": f"s{i}", "x": i, "y": f"v{i}"} for i in range(50)]
    with FileWriter(tmp_path / "ref.msgpack", overwrite=True, disable=True) as writer:
        for sample in samples:
            writer.write(sample)
    t = bcolz.ctable(columns=[np.array([s["key"] for s in samples]), np.arange(50),
                              np.array([s["y"] for s in samples])], names=["key", "x", "y"])
    dd.to_datadings(t, tmp_path / "ours.msgpack")
    for suffix in SUFFIXES[:-1]:
        assert (tmp_path / f"ours.msgpack{suffix}").read_bytes() == \
            (tmp_path / f"ref.msgpack{suffix}").read_bytes(), suffix


@pytest.mark.skipif(not DATADINGS_HERE, reason="datadings is not installed")
def test_datadings_reader_opens_what_we_write(tmp_path):
    from datadings.reader import MsgpackReader
    t = table()
    with MsgpackReader(write(tmp_path)) as reader:
        assert len(reader) == 12
        sample = reader.get(5)
        assert "k005" in reader and "nope" not in reader and reader.find_index("k007") == 7
    assert sample["key"] == "k005" and sample["name"] == t["name"][5]
    assert_array_equal(sample["image"], t["image"][5])
    assert sample["when"] == t["when"][5] and sample["raw"] == t["raw"][5]


@pytest.mark.skipif(not DATADINGS_HERE, reason="datadings is not installed")
def test_we_read_what_datadings_writes(tmp_path):
    from datadings.writer import FileWriter
    with FileWriter(tmp_path / "ref.msgpack", overwrite=True, disable=True) as writer:
        for i in range(5):
            writer.write({"key": f"s{i}", "img": np.full((2, 2), i, "u1"), "c": 1j * i,
                          "l": [i, i + 1], "f": np.float16(i)})
    t = dd.from_datadings(tmp_path / "ref.msgpack")
    assert [str(t.cols[n].dtype) for n in t.names] == [
        "<U2", "uint8", "complex128", "int64", "float16"]
    assert t.cols["img"].shape == (5, 2, 2) and t["l"][4].tolist() == [4, 5]


def test_reads_sequentially_without_an_index(tmp_path):
    path = write(tmp_path)
    for suffix in SUFFIXES[1:]:
        os.unlink(f"{path}{suffix}")
    assert len(dd.from_datadings(path)) == 12


def test_refusals_when_writing(tmp_path):
    with pytest.raises(ValueError, match="drop_attrs"):
        write(tmp_path, make("ctable", 3))
    with pytest.raises(ValueError, match="reserve"):
        write(tmp_path, bcolz.ctable(columns=[np.arange(2)], names=["nd"]))
    with pytest.raises(ValueError, match="duplicate key 'a'"):
        write(tmp_path, bcolz.ctable(columns=[np.array(["a", "b", "a"])], names=["key"]))
    with pytest.raises(TypeError, match="object"):
        write(tmp_path, bcolz.carray(np.array([1, "x"], dtype=object)))
    assert os.listdir(tmp_path) == []
    write(tmp_path)
    with pytest.raises(DatasetExistsError):
        write(tmp_path)
    write(tmp_path, overwrite=True)


# --- hostile files -----------------------------------------------------------------

def pack(*samples) -> bytes:
    return b"".join(msgpack.packb(s) for s in samples)


def dataset(tmp_path, data: bytes, offsets=None):
    path = tmp_path / "h.msgpack"
    path.write_bytes(data)
    if offsets is not None:
        Path(f"{path}.offsets").write_bytes(np.asarray(offsets, dtype=">u8").tobytes())
    return path


def test_truncated_data_names_the_file(tmp_path):
    data = pack({"key": "a", "x": 1}, {"key": "b", "x": 2})
    with pytest.raises(FormatError, match=r"h\.msgpack: truncated: sample 1"):
        dd.from_datadings(dataset(tmp_path, data[:-2]))


def test_offsets_pointing_outside_are_refused(tmp_path):
    data = pack({"key": "a", "x": 1}, {"key": "b", "x": 2})
    for offsets in ([0, 10, len(data) + 100], [0, len(data)], [0, 3, len(data)], [5]):
        with pytest.raises(FormatError, match=r"h\.msgpack\.offsets"):
            dd.from_datadings(dataset(tmp_path, data, offsets))


def test_a_sample_with_other_keys_is_refused(tmp_path):
    data = pack({"key": "a", "x": 1}, {"key": "b", "y": 2})
    with pytest.raises(FormatError, match=r"h\.msgpack: sample 1 has the fields"):
        dd.from_datadings(dataset(tmp_path, data))


@pytest.mark.parametrize("second, match", [
    ({"key": "b", "x": "text"}, "is <U4, earlier samples int64"),
    ({"key": "b", "x": [1, 2]}, "shaped"),
    ({"key": "b", "x": None}, "NoneType"),
    ({"key": "b", "x": {"nested": 1}}, "dict"),
    ({"key": "a", "x": 2}, "duplicate key"),
    ({"x": 2}, "no str 'key'"),
    ([1, 2], "not a map"),
    ({"key": "b", "x": [1, "a"]}, "list"),
])
def test_samples_that_do_not_make_a_table_are_refused(tmp_path, second, match):
    data = pack({"key": "a", "x": 1}, second)
    with pytest.raises(FormatError, match=match):
        dd.from_datadings(dataset(tmp_path, data))


def test_garbage_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="h.msgpack: sample 0"):
        dd.from_datadings(dataset(tmp_path, b"\xc1\xc1\xc1"))


def test_pickled_arrays_are_refused_and_never_unpickled(tmp_path):
    marker = tmp_path / "pwned"

    class Exploit:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    nd = {b"nd": True, b"type": "|O", b"kind": b"O", b"shape": [1],
          b"data": pickle.dumps(Exploit())}
    with pytest.raises(FormatError, match="pickled"):
        dd.from_datadings(dataset(tmp_path, pack({"key": "a", "x": nd})))
    assert not marker.exists()


@pytest.mark.parametrize("value", [
    {b"nd": True, b"type": "<i4", b"kind": b"", b"shape": [3], b"data": b"\x00" * 8},
    {b"nd": True, b"type": "<i4", b"kind": b"", b"shape": [10**12], b"data": b""},
    {b"nd": True, b"type": "not a dtype", b"kind": b"", b"shape": [1], b"data": b"1234"},
    {b"nd": False, b"type": "<f8", b"data": b"\x00"},
    {b"nd": True, b"type": "<i4", b"kind": b""},
])
def test_malformed_numpy_values_are_refused(tmp_path, value):
    with pytest.raises(FormatError, match="msgpack-numpy"):
        dd.from_datadings(dataset(tmp_path, pack({"key": "a", "x": value})))


def test_a_keys_file_that_disagrees_is_refused(tmp_path):
    path = write(tmp_path)
    Path(f"{path}.keys").write_bytes(msgpack.packb(["k000", "other"]))
    with pytest.raises(FormatError, match=r"\.keys"):
        dd.from_datadings(path)
