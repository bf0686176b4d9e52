"""Query planning on S3 (moto on 127.0.0.1): planning costs no request beyond
the open, and a selective query reads only the chunks that can match."""


import numpy as np
import pytest

import bcolz_store

from tests.helpers.s3 import count_requests

N, CHUNKLEN = 200_000, 8192


@pytest.fixture(scope="module")
def table(s3_server):
    import s3fs
    options = s3_server
    s3fs.S3FileSystem(**options).mkdir("queries")
    path = "s3://queries/table.bcolz"
    rng = np.random.default_rng(7)
    ts = np.cumsum(rng.integers(1, 5, N))
    ids = rng.permutation(N)
    sym = bcolz_store.carray([f"S{i:03d}" for i in rng.integers(0, 100, N)], dtype="category")
    t = bcolz_store.ctable([ts, ids, sym, rng.random(N)], names=["ts", "id", "sym", "price"],
                           rootdir=path, mode="w", chunklen=CHUNKLEN, storage_options=options)
    t.create_index("id")
    t.create_index("sym", kind="bitmap")
    return path, options, ts, ids


def _open(path, options):
    probe = bcolz_store.open(path, mode="r", storage_options=options)
    seen = count_requests(probe.dataset.store)      # the store is shared by every open
    return bcolz_store.open(path, mode="r", storage_options=options), seen


def test_planning_costs_no_request_beyond_the_open(table):
    path, options, ts, _ = table
    t, seen = _open(path, options)
    assert sum(seen.values()) <= 3, seen
    seen.clear()
    lo, hi = int(ts[50_000]), int(ts[50_010])
    plan = t.explain("(ts >= lo) & (ts < hi)", user_dict={"lo": lo, "hi": hi})
    assert plan.strategy == "statistics" and sum(seen.values()) == 0, seen
    assert t.indexes == {"id": "sorted", "sym": "bitmap"} and sum(seen.values()) == 0


def test_a_selective_query_reads_the_matching_chunks_only(table):
    path, options, ts, _ = table
    t, seen = _open(path, options)
    lo, hi = int(ts[50_000]), int(ts[50_010])
    seen.clear()
    got = t.fetchwhere("(ts >= lo) & (ts < hi)", user_dict={"lo": lo, "hi": hi},
                       out_flavor="numpy")
    np.testing.assert_array_equal(got["ts"], ts[(ts >= lo) & (ts < hi)])
    # one chunk (or two) of each of the 4 columns, the categories and the checksum
    # file: never the 25 chunks of every column a scan reads
    planned = seen["GetObject"]
    assert planned <= 2 * 4 + 3, seen
    with bcolz_store.defaults_ctx(query_planning=False):
        t2, scan = _open(path, options)
        scan.clear()
        same = t2.fetchwhere("(ts >= lo) & (ts < hi)", user_dict={"lo": lo, "hi": hi},
                             out_flavor="numpy")
    np.testing.assert_array_equal(same, got)
    # the scan reads every chunk of ts (25) before the matching rows
    assert scan["GetObject"] >= N // CHUNKLEN + 1 > 2 * planned, (scan, planned)


def test_a_point_lookup_by_index_reads_a_few_blocks(table):
    path, options, _, ids = table
    t, seen = _open(path, options)
    target = int(np.flatnonzero(ids == 123_456)[0])
    seen.clear()
    got = t.fetchwhere("id == 123456", out_flavor="numpy")
    assert got["id"].tolist() == [123_456]
    assert t.explain("id == 123456").strategy == "index"
    assert seen["GetObject"] <= 14, seen
    assert t["id"][target] == 123_456
