"""meta/sizes, meta/storage, __attrs__ and __rootdirs__: golden bytes, round trips, bad input."""

import json

import numpy as np
import pytest

from bcolz_store.errors import FormatError
from bcolz_store.format import meta
from tests.conftest import FIXTURES


def _fixture_files(name):
    return sorted(FIXTURES.rglob(name)) if FIXTURES.is_dir() else []


@pytest.mark.parametrize("path", _fixture_files("sizes"), ids=lambda p: p.parts[-3])
def test_sizes_round_trip_to_identical_bytes(path):
    data = path.read_bytes()
    assert meta.dump_sizes(meta.load_sizes(data)) == data


@pytest.mark.parametrize("path", _fixture_files("storage"), ids=lambda p: "/".join(p.parts[-4:-2]))
def test_storage_round_trip_to_identical_bytes(path):
    data = path.read_bytes()
    assert meta.dump_storage(meta.load_storage(data)) == data


@pytest.mark.parametrize("path", _fixture_files("__attrs__"), ids=lambda p: "/".join(p.parts[-3:-1]))
def test_attrs_round_trip_to_identical_bytes(path):
    data = path.read_bytes()
    assert meta.dump_attrs(meta.load_attrs(data)) == data


@pytest.mark.parametrize("path", _fixture_files("__rootdirs__"), ids=lambda p: p.parts[-2])
def test_rootdirs_round_trip_to_identical_bytes(path):
    data = path.read_bytes()
    assert meta.dump_rootdirs(meta.load_rootdirs(data)) == data


def test_golden_sizes_bytes():
    assert meta.dump_sizes(meta.SizesMeta((10, 3), 240, 16384)) == \
        b'{"shape": [10, 3], "nbytes": 240, "cbytes": 16384}\n'


def test_old_storage_layout_without_cname_and_quantize():
    old = b'{"dtype": "int32", "cparams": {"shuffle": true, "clevel": 5}, "chunklen": 65536, ' \
          b'"dflt": 0, "expectedlen": 100000}'
    st = meta.load_storage(old)
    assert st.cparams == {"clevel": 5, "shuffle": 1, "cname": "blosclz", "quantize": 0}
    assert st.dtype == np.dtype("int32") and st.chunklen == 65536


def test_structured_dtype_string_that_bcolz_cannot_parse():
    text = str(np.dtype([("f0", "<i4"), ("f1", "<f8")]))
    assert meta.decode_dtype(text) == np.dtype([("f0", "<i4"), ("f1", "<f8")])


@pytest.mark.parametrize("dtype, value", [
    ("complex128", 1 + 2j), ("M8[s]", "2020-01-02T03:04:05"), ("M8[D]", "NaT"),
    ("m8[ms]", 1234), ("M8[ns]", 17), ("S3", b"ab"), ("U4", "\u00e9t\u00e9"),
    ("f8", float("nan")), ("f4", float("-inf")), ("bool", True),
    ([("a", "S3"), ("b", "<f8", (2,))], (b"xy", [1.5, 2.5])),
])
def test_dflt_survives_json(dtype, value):
    dt = np.dtype(dtype)
    dflt = np.zeros((), dtype=dt)
    dflt[()] = value
    encoded = json.loads(json.dumps(meta.encode_dflt(dflt)))
    back = meta.decode_dflt(encoded, dt)
    assert back.tobytes() == dflt.tobytes()


@pytest.mark.parametrize("data, message", [
    (b"{not json", "not valid JSON"),
    (b'{"shape": [-1], "nbytes": 0, "cbytes": 0}', "invalid shape"),
    (b'{"shape": [], "nbytes": 0, "cbytes": 0}', "invalid shape"),
    (b'{"shape": [3], "cbytes": 0}', "missing key 'nbytes'"),
    (b'[1, 2]', "JSON object"),
])
def test_bad_sizes_raise_format_error(data, message):
    with pytest.raises(FormatError, match=message):
        meta.load_sizes(data, "x/meta/sizes")


GOOD_STORAGE = {"dtype": "int32", "cparams": {"clevel": 5, "shuffle": 1, "cname": "lz4",
                                               "quantize": 0},
                "chunklen": 10, "expectedlen": 10, "dflt": 0}


@pytest.mark.parametrize("change, message", [
    ({"dtype": "nonsense"}, "unknown dtype"),
    ({"chunklen": 0}, "chunklen"),
    ({"chunklen": 2 ** 50}, "chunklen"),
    ({"cparams": {"clevel": 5, "shuffle": 1, "cname": "rot13"}}, "unknown compressor"),
    ({"cparams": {"clevel": 12, "shuffle": 1}}, "clevel"),
    ({"dflt": "abc"}, "does not fit"),
])
def test_bad_storage_raises_format_error(change, message):
    data = json.dumps({**GOOD_STORAGE, **change}).encode()
    with pytest.raises(FormatError, match=message):
        meta.load_storage(data, "x/meta/storage")


@pytest.mark.parametrize("names", [["../x"], ["/abs"], ["a/b"], [""], ["a", "a"], [3], [".."]])
def test_unsafe_column_names_raise_format_error(names):
    with pytest.raises(FormatError):
        meta.load_rootdirs(json.dumps({"names": names}).encode())
