"""Datasets on S3 (moto on 127.0.0.1, through s3fs), in fsspec's memory filesystem,
and in packs: they read back exactly, commit atomically, tell concurrent writers
apart, open with a bounded number of requests, and work from the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store import cli
from bcolz_store.errors import ConflictError, DatasetNotFoundError, ReadOnlyError

from tests.helpers.s3 import count_requests

try:
    import bcolz as real_bcolz
except Exception:  # pragma: no cover - the oracle is optional
    real_bcolz = None


def zipline_bars(n: int, seed: int = 0) -> list:
    """Daily bars as zipline bundles store them (uint32 prices x 1000, volume, day, id)."""
    rng = np.random.default_rng(seed)
    close = (100_000 + rng.integers(-500, 500, n).cumsum()).astype("u4")
    return [close + 10, close + 200, close - 150, close,
            rng.integers(0, 10 ** 7, n).astype("u4"),
            (np.arange(n) * 86400 + 1_262_304_000).astype("u4"),
            np.repeat(np.arange(n // 100 + 1, dtype="u4"), 100)[:n]]


NAMES = ["open", "high", "low", "close", "volume", "day", "id"]


@pytest.fixture
def s3(s3_bucket):
    url, options = s3_bucket
    return url, options


def test_zipline_ctable_on_s3_reads_back_exactly(s3):
    url, options = s3
    cols = zipline_bars(25_000)
    t = bcolz_store.ctable(cols, names=NAMES, rootdir=f"{url}/daily.bcolz", mode="w",
                           chunklen=4096, storage_options=options)
    t.attrs["first_trading_day"] = 1262304000
    t.append([c[:100] for c in cols])
    t.flush()
    back = bcolz_store.open(f"{url}/daily.bcolz", mode="r", storage_options=options)
    assert isinstance(back, bcolz_store.ctable) and back.names == NAMES
    for name, col in zip(NAMES, cols):
        expected = np.concatenate([col, col[:100]])
        assert back.cols[name].dtype == expected.dtype
        np.testing.assert_array_equal(back.cols[name][:], expected)
    assert back.attrs["first_trading_day"] == 1262304000
    assert (back.cols["close"][-1], back.cols["day"][-1]) == (cols[3][99], cols[5][99])
    assert bcolz_store.verify(f"{url}/daily.bcolz", storage_options=options).ok


def test_carray_on_s3_append_trim_resize_setitem(s3):
    url, options = s3
    path = f"{url}/a.bcolz"
    c = bcolz_store.carray(np.arange(10_000, dtype="f8"), chunklen=1000, rootdir=path, mode="w",
                           storage_options=options)
    c.append(np.arange(5.0))
    c.flush()
    c.trim(3)
    c[10:20] = -1
    c.resize(10_100)
    expected = np.concatenate([np.arange(10_000.0), np.arange(2.0), np.zeros(98)])
    expected[10:20] = -1
    back = bcolz_store.open(path, mode="r", storage_options=options)
    np.testing.assert_array_equal(back[:], expected)
    assert back.sum() == expected.sum()
    np.testing.assert_array_equal(back[[5, 9999, 10_050]], expected[[5, 9999, 10_050]])
    report = bcolz_store.verify(path, storage_options=options)
    assert report.ok, report.problems()


def test_opening_a_12_column_ctable_on_s3_takes_two_requests(s3):
    url, options = s3
    bcolz_store.ctable([np.arange(50_000) * i for i in range(12)],
                       names=[f"c{i}" for i in range(12)], rootdir=f"{url}/t12.bcolz",
                       mode="w", chunklen=4096, storage_options=options)
    probe = bcolz_store.open(f"{url}/t12.bcolz", mode="r", storage_options=options)
    seen = count_requests(probe.dataset.store)
    t = bcolz_store.open(f"{url}/t12.bcolz", mode="r", storage_options=options)
    assert len(t) == 50_000 and len(t.names) == 12
    assert sum(seen.values()) <= 3, seen
    seen.clear()
    np.testing.assert_array_equal(t.cols["c5"][:], np.arange(50_000) * 5)
    nchunks = -(-50_000 // 4096)
    assert sum(seen.values()) <= nchunks + 1, seen     # the chunks and the checksum file


def test_two_writers_on_s3_appends_follow_each_other_a_setitem_is_refused(s3):
    url, options = s3
    path = f"{url}/w.bcolz"
    bcolz_store.carray(np.arange(100), rootdir=path, mode="w", storage_options=options)
    first = bcolz_store.open(path, mode="a", storage_options=options)
    second = bcolz_store.open(path, mode="a", storage_options=options)
    first.append([1000, 1001])
    first.flush()
    second.append([2000])           # rebased: its row goes after the first writer's
    second.flush()
    back = bcolz_store.open(path, mode="r", storage_options=options)
    assert back[:].tolist() == list(range(100)) + [1000, 1001, 2000]
    assert len(second) == 103
    # an assignment from a state another writer replaced conflicts
    first.refresh()
    first[0] = -1
    with pytest.raises(ConflictError, match="setitem conflicts") as info:
        second[1] = -2
    assert info.value.ours == ("setitem",) and info.value.theirs == ("setitem",)
    # nothing of the loser was committed; it is back at the newest state
    assert bcolz_store.open(path, mode="r", storage_options=options)[:3].tolist() == [-1, 1, 2]
    second[1] = -2
    assert bcolz_store.open(path, mode="r", storage_options=options)[:3].tolist() == [-1, -2, 2]
    assert bcolz_store.verify(path, storage_options=options).ok


def test_two_local_writers_the_second_is_refused(tmp_path):
    path = str(tmp_path / "w")
    bcolz_store.ctable([np.arange(10)], names=["a"], rootdir=path, mode="w")
    first = bcolz_store.open(path, mode="a")
    second = bcolz_store.open(path, mode="a")
    first.append([[1]])
    with pytest.raises(ConflictError, match="append"):
        second.attrs["x"] = 1           # a commit from the generation the first one took
    assert bcolz_store.open(path).attrs.getall() == {}
    second.attrs["x"] = 1
    assert len(bcolz_store.open(path)) == 11


def test_memory_url_round_trip_and_walk():
    pytest.importorskip("fsspec")
    import fsspec
    fsspec.filesystem("memory").rm("/walk", recursive=True) if \
        fsspec.filesystem("memory").exists("/walk") else None
    bcolz_store.carray(np.arange(10), rootdir="memory://walk/x/a.bcolz", mode="w")
    bcolz_store.ctable([np.arange(3)], names=["q"], rootdir="memory://walk/y.bcolz", mode="w")
    found = sorted((type(o).__name__, len(o)) for o in bcolz_store.walk("memory://walk"))
    assert found == [("carray", 10), ("ctable", 3)]


def test_url_errors(tmp_path):
    with pytest.raises(DatasetNotFoundError):
        bcolz_store.open("memory://nothing/here.bcolz")
    with pytest.raises(ValueError, match="storage_options are for URLs"):
        bcolz_store.carray(np.arange(3), rootdir=str(tmp_path / "x"), mode="w",
                           storage_options={"anon": True})
    with pytest.raises((ImportError, ValueError)):
        bcolz_store.open("nosuchprotocol://x/y")


def test_pack_open_verify_unpack(tmp_path):
    src = tmp_path / "t.bcolz"
    cols = zipline_bars(5000)
    bcolz_store.ctable(cols, names=NAMES, rootdir=str(src), mode="w", chunklen=1024)
    status = cli.main(["pack", str(src), str(tmp_path / "t.zip")])
    assert status == 0
    packed = bcolz_store.open(str(tmp_path / "t.zip"))
    np.testing.assert_array_equal(packed.cols["close"][:], cols[3])
    with pytest.raises(ReadOnlyError):
        packed.append([c[:1] for c in cols])
    assert bcolz_store.verify(str(tmp_path / "t.zip")).ok
    assert cli.main(["verify", str(tmp_path / "t.zip")]) == 0
    assert cli.main(["pack", str(src), str(tmp_path / "t.zip")]) == 1       # exists already
    assert cli.main(["unpack", str(tmp_path / "t.zip"), str(tmp_path / "u")]) == 0
    back = bcolz_store.open(str(tmp_path / "u"), mode="r")
    np.testing.assert_array_equal(back.cols["volume"][:], cols[4])
    assert bcolz_store.verify(str(tmp_path / "u")).ok
    if real_bcolz is not None:
        theirs = real_bcolz.open(str(tmp_path / "u"), mode="r")
        np.testing.assert_array_equal(theirs["close"][:], cols[3])


def test_pack_entries_are_stored_at_their_paths(tmp_path):
    import zipfile
    src = tmp_path / "a"
    bcolz_store.carray(np.arange(10_000), chunklen=1000, rootdir=str(src), mode="w")
    from bcolz_store.storage.packs import pack
    done = pack(str(src), str(tmp_path / "a.zip"))
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        infos = {i.filename: i for i in zf.infolist()}
    assert done["files"] == len(infos)       # the checksum and metadata files too
    with pytest.raises(ValueError, match="ends in .zip"):
        pack(str(src), str(tmp_path / "a.tar"))
    assert not (tmp_path / "a.tar").exists()
    assert all(i.compress_type == zipfile.ZIP_STORED for i in infos.values())
    files = {p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file()
             and ".bcolz_store-journal" not in p.parts}
    assert set(infos) == files
    for name in files:
        assert (src / name).read_bytes() == zipfile.ZipFile(tmp_path / "a.zip").read(name)
    # unzipped by hand (no bcolz_store involved), the folder is a bcolz dataset
    with zipfile.ZipFile(tmp_path / "a.zip") as zf:
        zf.extractall(tmp_path / "by-hand")
    np.testing.assert_array_equal(bcolz_store.open(str(tmp_path / "by-hand"))[:],
                                  np.arange(10_000))
    if real_bcolz is not None:
        np.testing.assert_array_equal(real_bcolz.open(str(tmp_path / "by-hand"), mode="r")[:],
                                      np.arange(10_000))


def test_cli_info_and_verify_on_s3(s3, capsys):
    url, options = s3
    bcolz_store.ctable(zipline_bars(3000), names=NAMES, rootdir=f"{url}/cli.bcolz", mode="w",
                       storage_options=options)
    opts = ["--storage-options", json.dumps(options)]
    assert cli.main(["info", f"{url}/cli.bcolz", "--json"] + opts) == 0
    facts = json.loads(capsys.readouterr().out)
    assert facts["kind"] == "ctable" and facts["shape"] == [3000] and facts["names"] == NAMES
    assert cli.main(["verify", f"{url}/cli.bcolz"] + opts) == 0
    assert capsys.readouterr().out.strip().endswith(": ok")
    assert cli.main(["info", f"{url}/missing.bcolz"] + opts) == 1
    assert cli.main(["info", f"{url}/cli.bcolz", "--storage-options", "[1]"]) == 2


def test_cli_info_on_s3_as_a_separate_process(s3):
    url, options = s3
    bcolz_store.carray(np.arange(10), rootdir=f"{url}/p.bcolz", mode="w", storage_options=options)
    package_parent = str(Path(bcolz_store.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=package_parent)
    done = subprocess.run([sys.executable, "-m", "bcolz_store.cli", "info", f"{url}/p.bcolz",
                           "--storage-options", json.dumps(options)],
                          capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "kind:      carray" in done.stdout and "shape:     (10,)" in done.stdout
