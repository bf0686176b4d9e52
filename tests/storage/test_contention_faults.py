"""Writers under faults, outside in: S3 requests that fail, lose their answer
or are made twice (:mod:`tests.storage.s3_faults`), and writer processes
killed with SIGKILL while they append (:mod:`benchmarks.contention`).

Each writer logs what it began and what it took for acknowledged; after the
run the dataset must open (mode ``'a'``, then ``'r'``), hold every
acknowledged append once, whole and in its writer's order, hold an append in
progress at a kill wholly or not at all, hold nothing else, and pass
``verify()``.  The checker itself is tried first on rows and datasets made
wrong on purpose, so that these tests can fail.
"""

import http.client
import os
import urllib.parse

import numpy as np
import pytest

import bcolz_store

from benchmarks import contention
from benchmarks.contention import _ids, _sizes, check_rows, parse_log

from .s3_faults import FaultProxy


@pytest.fixture
def fault_proxy(s3_bucket):
    """``(bucket url, moto's storage options, a started FaultProxy)`` (no rates)."""
    url, options = s3_bucket
    with FaultProxy(options["client_kwargs"]["endpoint_url"], seed=7,
                    keep_history=True) as proxy:
        yield url, options, proxy


def _fs(options):
    import s3fs
    return s3fs.S3FileSystem(**options)


# --- the proxy ---------------------------------------------------------------------------------

def test_the_proxy_forwards_requests_faithfully(fault_proxy):
    url, options, proxy = fault_proxy
    bucket = url[len("s3://"):]
    through, direct = _fs(proxy.storage_options(options)), _fs(options)
    payload = os.urandom(1 << 20)
    through.pipe_file(f"{bucket}/big", payload)
    assert direct.cat_file(f"{bucket}/big") == payload
    assert through.size(f"{bucket}/big") == len(payload)        # HEAD: no body, its length
    assert through.cat_file(f"{bucket}/big", start=10, end=20) == payload[10:20]
    through.pipe_file(f"{bucket}/once", b"first", mode="create")
    with pytest.raises(FileExistsError):                        # 412, as moto answered it
        through.pipe_file(f"{bucket}/once", b"second", mode="create")
    assert direct.cat_file(f"{bucket}/once") == b"first"
    through.rm_file(f"{bucket}/once")
    assert not direct.exists(f"{bucket}/once")
    # botocore sends its PUTs with Expect: 100-continue, signed for the proxy's host.
    puts = [h for method, _path, h, _kind in proxy.history if method == "PUT"]
    assert puts and all(h.get("Expect") == "100-continue" for h in puts)
    port = urllib.parse.urlsplit(proxy.endpoint).port
    assert all(h["Host"] == f"127.0.0.1:{port}" for h in puts)
    # A chunked body is forwarded as it came, chunk sizes included.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("PUT", f"/{bucket}/chunked", body=iter([b"abc", b"", b"defgh"]),
                 headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
    response = conn.getresponse()
    response.read()
    conn.close()
    assert response.status == 200
    assert direct.cat_file(f"{bucket}/chunked") == b"abcdefgh"
    assert proxy.counts == {"fail": 0, "lost": 0, "dup": 0}


def test_each_fault_is_absorbed_or_seen_as_a_repeated_request(fault_proxy):
    """``fail`` is retried by botocore; ``lost`` and ``dup`` of a create make
    the create answer 412 although it took effect (the object is ours)."""
    url, options, proxy = fault_proxy
    bucket = url[len("s3://"):]
    through, direct = _fs(proxy.storage_options(options)), _fs(options)
    direct.pipe_file(f"{bucket}/x", b"x")
    proxy.force("fail", "GET")
    assert through.cat_file(f"{bucket}/x") == b"x"
    proxy.force("fail", "PUT", reset=True)
    through.pipe_file(f"{bucket}/y", b"y")
    for kind in ("lost", "dup"):
        proxy.force(kind, "PUT", path=f"/{kind}$")
        with pytest.raises(FileExistsError):
            through.pipe_file(f"{bucket}/{kind}", kind.encode(), mode="create")
        assert direct.cat_file(f"{bucket}/{kind}") == kind.encode()
    proxy.force("lost", "DELETE", reset=True)
    through.rm_file(f"{bucket}/y")
    assert not direct.exists(f"{bucket}/y")
    assert proxy.forced_pending == 0
    assert proxy.counts == {"fail": 2, "lost": 2, "dup": 1}
    # Each request that failed or lost its answer was sent again: by botocore
    # (amz-sdk-request: attempt=2) or, for a PUT or DELETE on a kept-alive
    # connection that broke, by aiohttp itself (attempt=1 again).
    history = [(m, p, k) for m, p, _h, k in proxy.history]
    for i, (method, path, kind) in enumerate(history):
        if kind in ("fail", "lost"):
            assert (method, path, None) in history[i + 1:], (method, path, kind)


def test_rates_inject_each_kind_and_only_lost_and_dup_on_writes():
    proxy = FaultProxy("http://127.0.0.1:9", fail=0.2, lost=0.2, dup=0.2, seed=3)
    draws = [proxy._draw(method, "/b/k") for method in ["GET", "PUT"] * 300]
    kinds = [kind for kind, _reset in draws]
    assert {kinds[i] for i in range(0, len(kinds), 2)} == {None, "fail"}      # GET
    assert {kinds[i] for i in range(1, len(kinds), 2)} == {None, "fail", "lost", "dup"}
    assert sum(proxy.counts.values()) == sum(k is not None for k in kinds)
    assert 0.12 < proxy.counts["fail"] / 600 < 0.28


@pytest.mark.parametrize("target", [r"commit-\d+\.json$", r"commit\.lock$"])
@pytest.mark.parametrize("kind", ["lost", "dup"])
def test_a_repeated_create_of_a_record_or_the_lock_commits_once(fault_proxy, target, kind):
    """The commit record and the lock object are created with If-None-Match:
    a create whose answer was lost (or that was made twice) answers 412 on its
    retry; the writer must find its own record (lock) and go on, committing
    the append exactly once."""
    url, options, proxy = fault_proxy
    path = f"{url}/a.bcolz"
    bcolz_store.carray(np.arange(5), rootdir=path, mode="w", storage_options=options)
    c = bcolz_store.open(path, mode="a", storage_options=proxy.storage_options(options))
    proxy.force(kind, "PUT", path=target)
    c.append([5, 6])
    c.flush()
    assert proxy.forced_pending == 0 and proxy.counts[kind] == 1
    assert c.dataset.journal.rebases == 0
    c.close()
    assert bcolz_store.open(path, mode="r", storage_options=options)[:].tolist() == \
        list(range(7))
    assert bcolz_store.verify(path, storage_options=options).ok


@pytest.mark.parametrize("kind", ["lost", "dup"])
def test_a_repeated_conditional_replace_reports_that_it_replaced(fault_proxy, kind):
    """``replace_if`` (S3 ``If-Match`` PUT) renews the commit lock.  When its
    answer is lost, aiohttp or botocore send it again and S3 answers 412: the
    object holds the new content already, which is success."""
    from bcolz_store.storage.fsspec import FsspecStore
    url, options, proxy = fault_proxy
    store = FsspecStore(f"{url}/d", storage_options=proxy.storage_options(options))
    store.put("k", b"old")
    proxy.force(kind, "PUT", path="/k$")
    done = store.replace_if("k", b"new", b"old")
    assert store.get("k", 100) == b"new" and proxy.forced_pending == 0
    assert done


def test_a_botocore_without_if_match_falls_back_to_read_compare_act(s3_bucket, monkeypatch):
    """botocore releases older than S3's conditional writes refuse ``IfMatch``
    with ParamValidationError: the conditional replace and delete then read,
    compare and act, as on other filesystems."""
    from bcolz_store.storage.fsspec import FsspecStore
    url, options = s3_bucket
    store = FsspecStore(f"{url}/d", storage_options=options)
    real = store.fs.call_s3

    class ParamValidationError(Exception):
        pass

    def call_s3(method, *args, **kwargs):
        if "IfMatch" in kwargs:
            raise ParamValidationError("Unknown parameter in input: IfMatch")
        return real(method, *args, **kwargs)
    monkeypatch.setattr(store.fs, "call_s3", call_s3)
    store.put("k", b"old")
    assert store.replace_if("k", b"new", b"old")
    assert not store.replace_if("k", b"x", b"old")
    assert store.get("k", 10) == b"new"
    assert not store.delete_if("k", b"old")
    assert store.delete_if("k", b"new")
    assert not store.exists("k")


# --- the checker, on rows and datasets made wrong on purpose ------------------------------------

def _log(writer: int, acked: int, pending: bool = False, done: bool = False,
         appends: int = 6) -> str:
    """A writer's log: ``acked`` appends acknowledged, the next one ``pending``."""
    sizes = _sizes(writer, appends)
    lines = ["open 0.0"]
    for seq in range(acked):
        lines += [f"begin {seq} {sizes[seq]} {seq}.0", f"ack {seq} {seq}.5"]
    if pending:
        lines.append(f"begin {acked} {sizes[acked]} {acked}.0")
    if done:
        lines.append("done 99.0")
    return "\n".join(lines) + "\n"


def _rows(writer: int, seqs, appends: int = 6) -> list:
    sizes = _sizes(writer, appends)
    return [_ids(writer, s, sizes[s]) for s in seqs]


def test_parse_log_reads_acknowledged_and_pending_appends():
    log = parse_log(_log(0, 3, pending=True) + "ack 3 4", 6, 0)      # torn last line
    assert log["acked"] == [0, 1, 2] and log["pending"] == 3 and not log["problems"]
    assert parse_log(_log(0, 6, done=True), 6, 0)["done"]
    assert parse_log(_log(1, 2), 6, 0)["problems"]                    # another's sizes
    assert parse_log("begin 0 1 0\nbegin 2 1 0\n", 6)["problems"]     # skipped, unacked
    assert parse_log("ack 0 1\n", 6)["problems"]                      # acked, not begun
    assert parse_log("begin 0 1 0\nack 0 1\nbegin 9 1 2\n", 6)["problems"]   # out of range


def test_check_rows_accepts_exactly_the_acknowledged_appends():
    logs = {0: parse_log(_log(0, 4, pending=True), 6, 0), 1: parse_log(_log(1, 2), 6, 1)}
    absent = np.concatenate(_rows(0, range(4)) + _rows(1, range(2)))
    assert check_rows(absent, 2, 6, logs) == ([], {0: False})
    present = np.concatenate(_rows(1, [0]) + _rows(0, range(5)) + _rows(1, [1]))
    assert check_rows(present, 2, 6, logs) == ([], {0: True})
    everything = np.concatenate(_rows(0, range(6)) + _rows(1, range(6)))
    assert check_rows(everything, 2, 6) == ([], {})


@pytest.mark.parametrize("defect, message", [
    ("lost", "acknowledged append 2 lost"),
    ("duplicated", "present more than once"),
    ("reordered", "out of order"),
    ("torn", "is torn"),
    ("never begun", "never began or acknowledged"),
    ("stranger", "rows of no writer"),
    ("one row lost", "1 of"),
])
def test_check_rows_catches_each_defect(defect, message):
    logs = {0: parse_log(_log(0, 4, pending=True), 6, 0), 1: parse_log(_log(1, 3), 6, 1)}
    mine = _rows(0, range(4))
    theirs = np.concatenate(_rows(1, range(3)))
    pending = _rows(0, [4])[0]
    assert len(pending) > 1
    if defect == "lost":
        mine = mine[:2] + mine[3:]
    elif defect == "duplicated":
        mine = mine + [mine[1]]
    elif defect == "reordered":
        mine = [mine[1], mine[0]] + mine[2:]
    elif defect == "torn":
        mine = mine + [pending[: len(pending) // 2]]
    elif defect == "never begun":
        mine = mine + _rows(0, [5])
    elif defect == "stranger":
        mine = mine + [np.array([7 * 10 ** 12])]
    elif defect == "one row lost":
        mine = mine[:1] + [mine[1][1:]] + mine[2:]
    problems, _pending = check_rows(np.concatenate(mine + [theirs]), 2, 6, logs)
    assert any(message in p for p in problems), problems


def test_check_catches_a_dataset_that_lost_doubled_or_mislabelled_rows(tmp_path):
    """The whole check, on a ctable: a lost acknowledged append, a doubled
    one and a vlen item that does not match its id are each reported."""
    appends = 4
    path = str(tmp_path / "t.bcolz")
    contention._create("ctable", path, None)
    t = bcolz_store.open(path, mode="a")
    for seq in (0, 1, 1, 3):                    # 2 lost, 1 doubled (log: 0..3 acked)
        ids = _rows(0, [seq], appends)[0]
        names = [f"w{i}" for i in ids.tolist()]
        if seq == 3:
            names[0] = "wrong"
        t.append([ids, np.zeros(len(ids), dtype=np.int16), names])
    t.close()
    logs = {0: parse_log(_log(0, 4, appends=appends), appends, 0)}
    problems = contention.check("ctable", path, None, 1, appends, logs)
    assert any("acknowledged append 2 lost" in p for p in problems), problems
    assert any("append 1 present more than once" in p for p in problems), problems
    assert any("vlen items do not match" in p for p in problems), problems


# --- writers through faults, writers killed ------------------------------------------------------

def _assert_whole(figures, commits=None):
    assert figures["problems"] == [], "\n".join(figures["problems"])
    assert figures["tracebacks"] == [], figures["tracebacks"][0]
    assert figures["errors"] == {}, "\n".join(figures["messages"])
    if commits is not None:
        assert figures["commits"] == commits


# The commit lock's lease: the protocol assumes that no live holder stalls for
# longer (docs/durability.md).  Under faults botocore backs off for seconds
# before a retry (0-1 s, then 0-2 s, ...), so the runs through the proxy keep
# the default lease; runs with kills take a shorter one, which a killed
# holder of the lock costs the others once.
FAULTS_LEASE = 30.0
KILLS_LEASE = 3.0


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_writers_through_s3_faults_lose_and_double_nothing(s3_bucket, kind):
    url, options = s3_bucket
    figures = contention.run(kind, f"{url}/{kind}.bcolz", options, writers=3, appends=8,
                             faults=0.1, lease=FAULTS_LEASE, seed=11)
    _assert_whole(figures, commits=24)
    assert figures["proxied_requests"] > 200
    assert all(n > 0 for n in figures["faults"].values()), figures["faults"]


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_writers_killed_while_appending_locally(kind):
    figures = contention.run(kind, writers=4, appends=30, kill=2, seed=5)
    _assert_whole(figures)
    # Locally a writer's 30 appends take a fraction of a second: on a busy
    # machine one may finish before the supervisor's moment comes.
    assert 1 <= len(figures["killed"]) <= 2
    assert figures["commits"] == 30 * (4 - len(figures["killed"])) + \
        sum(k["acked"] for k in figures["killed"])


@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_writers_killed_while_appending_on_s3(s3_bucket, kind):
    """A killed writer may leave the commit lock object behind: the others
    (and the final open) take it over after the lease."""
    url, options = s3_bucket
    figures = contention.run(kind, f"{url}/{kind}.bcolz", options, writers=4, appends=20,
                             kill=2, lease=KILLS_LEASE, seed=6)
    _assert_whole(figures)
    # As locally: a writer may finish its appends before the supervisor's
    # moment to kill it comes (the more so the faster commits are).
    assert 1 <= len(figures["killed"]) <= 2
    assert figures["commits"] == 20 * (4 - len(figures["killed"])) + \
        sum(k["acked"] for k in figures["killed"])


def test_writers_killed_through_s3_faults(s3_bucket):
    url, options = s3_bucket
    figures = contention.run("carray", f"{url}/c.bcolz", options, writers=3, appends=12,
                             faults=0.1, kill=1, lease=10.0, seed=8)
    _assert_whole(figures)
    assert len(figures["killed"]) == 1 and sum(figures["faults"].values()) > 0
