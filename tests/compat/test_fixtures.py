"""Every dataset bcolz 1.13 wrote reads back exactly, and we write the same bytes."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

import bcolz_store as bcolz

from tests.conftest import FIXTURES, STATS_FILE as STATS, bcolz_files, without_stats

MANIFEST = json.loads((FIXTURES / "manifest.json").read_text()) if FIXTURES.is_dir() else {
    "datasets": {}}
DATASETS = MANIFEST["datasets"]
CARRAYS = sorted(n for n, d in DATASETS.items() if d["kind"] == "carray")
CTABLES = sorted(n for n, d in DATASETS.items() if d["kind"] == "ctable")

pytestmark = pytest.mark.skipif(not FIXTURES.is_dir(), reason="reference fixtures absent")


def _expected(name):
    with np.load(FIXTURES / f"{name}.expected.npz", allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _files(root: Path):
    """The files bcolz reads (ours, the checksum file, the consolidated metadata and the
    journal, sit beside them and are checked elsewhere), without our chunk statistics."""
    return sorted(without_stats(bcolz_files(root)))


@pytest.mark.parametrize("name", CARRAYS)
def test_carray_fixture_reads_back_exactly(name):
    meta = DATASETS[name]
    c = bcolz.open(str(FIXTURES / name), mode="r")
    assert isinstance(c, bcolz.carray)
    expected = _expected(name)["data"]
    assert c.dtype == np.dtype(meta["dtype"])
    assert list(c.shape) == meta["shape"]
    assert c.chunklen == meta["chunklen"]
    for key, value in meta["cparams"].items():
        assert getattr(c.cparams, key) == value
    assert c.attrs.getall() == meta["attrs"]
    data = c[:]
    assert data.dtype == expected.dtype
    np.testing.assert_array_equal(data, expected)


@pytest.mark.parametrize("name", CTABLES)
def test_ctable_fixture_reads_back_exactly(name):
    meta = DATASETS[name]
    t = bcolz.open(str(FIXTURES / name), mode="r")
    assert isinstance(t, bcolz.ctable)
    expected = _expected(name)
    assert list(t.names) == meta["names"] == list(expected["__names__"])
    assert len(t) == meta["len"]
    assert t.attrs.getall() == meta["attrs"]
    for col in meta["names"]:
        got = t[col][:]
        assert got.dtype == expected[col].dtype
        np.testing.assert_array_equal(got, expected[col])


def _rewrite_carray(name, dest):
    """Write the fixture's data with its recorded parameters, as bcolz was asked to."""
    src = bcolz.open(str(FIXTURES / name), mode="r")
    storage = json.loads((FIXTURES / name / "meta" / "storage").read_text())
    data = _expected(name)["data"]
    out = bcolz.carray(data[:0], rootdir=str(dest), mode="w", cparams=src.cparams,
                       chunklen=src.chunklen, expectedlen=storage["expectedlen"],
                       dflt=src.dflt)
    if name == "dflt_resized":
        # bcolz built it as arange(10000) then resize(12345) with dflt -1.
        out.append(data[:10000])
        out.resize(len(data))
    else:
        out.append(data)
    out.flush()
    for key, value in src.attrs.getall().items():
        out.attrs[key] = value
    return out


@pytest.mark.parametrize("name", CARRAYS)
def test_carray_files_are_byte_identical(name, tmp_path):
    dest = tmp_path / name
    _rewrite_carray(name, dest)
    ref = FIXTURES / name
    assert _files(dest) == _files(ref)
    for rel in _files(ref):
        assert (dest / rel).read_bytes() == (ref / rel).read_bytes(), rel
    assert set(bcolz_files(dest)) - set(_files(dest)) == \
        ({STATS} if DATASETS[name]["shape"][1:] == [] else set())    # (2-d atoms: none)


@pytest.mark.parametrize("name", CTABLES)
def test_ctable_files_are_byte_identical(name, tmp_path):
    ref = FIXTURES / name
    src = bcolz.open(str(ref), mode="r")
    expected = _expected(name)
    chunklens = {src[col].chunklen for col in src.names}
    defaults = {bcolz.carray(expected[col][:0], expectedlen=len(src)).chunklen == src[col].chunklen
                for col in src.names}
    # Columns either all took their chunklen from expectedlen, or share one given chunklen.
    kwargs = {} if defaults == {True} else {"chunklen": chunklens.pop()}
    dest = tmp_path / name
    t = bcolz.ctable([expected[col] for col in src.names], names=list(src.names),
                     rootdir=str(dest), mode="w", **kwargs)
    for key, value in src.attrs.getall().items():
        t.attrs[key] = value
    t.flush()
    assert _files(dest) == _files(ref)
    for rel in _files(ref):
        assert (dest / rel).read_bytes() == (ref / rel).read_bytes(), rel
    assert set(bcolz_files(dest)) - set(_files(dest)) == {f"{col}/{STATS}" for col in src.names}


def test_every_fixture_is_covered():
    names = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert names == set(DATASETS)
    assert len(CARRAYS) + len(CTABLES) == len(names) > 0
    assert not os.path.exists(FIXTURES / "__pycache__")
