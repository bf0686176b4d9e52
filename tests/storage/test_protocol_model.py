"""The commit protocol under a deterministic scheduler, checked against a model.

Writers (2 to 4) and readers (1 or 2) run in threads, each on its own
container opened on its own :class:`~tests.storage.protocol_harness.SchedulingStore`
around one shared store (a MemoryStore, or S3 on the moto server of
``tests/conftest.py``).  Every store request waits for the scheduler, which
picks the next actor from a hypothesis-drawn :class:`Scenario`: a priority
order with change points (PCT-like, so one actor is often stopped at a
position of the protocol while the others run: between its blobs and its
record, between the record and its application, between the checksum file
and the consolidated metadata, in the middle of a recovery...), a seeded share
of random picks, stops (the actor granted the n-th request of a kind stands
still there) and faults on the n-th request of a kind (a request that fails,
one whose answer is lost, one performed twice).  The store is taken for a
local one or for a remote one (a MemoryStore then runs the object-store
protocol: contents inline in records, copies, consolidated metadata), and a
request costs 10 us to 10 ms of virtual time.  Time, the backoff jitter and the
writer tokens are virtual and seeded, so a scenario replays exactly
(``run_scenario(Scenario(...))``; set ``PYTHONHASHSEED`` to replay in
another process).

Writers append recognisable ids (``writer * 100000 + op * 100 + row``,
lengths that are and are not multiples of the chunklen) to a carray
(``append`` + ``flush``) or a ctable with a vlen str column (auto-flushed),
and in some runs assign a row, set an attribute, trim or read, which may raise
``ConflictError`` (then the model takes the operation as not made).  An
operation that raised anything else after an injected fault may or may not
stand.  After the run, with faults off, a writer opens the dataset (recovery
finishes what is half applied) and a reader reads it.  The checks:

* one order of the operations (each writer's in its order, real-time order
  respected) explains every state a reader or a writer read and the final state;
* in runs of appends only: every acknowledged append present once and whole,
  each writer's rows in order, an unacknowledged append whole or absent;
* the vlen column matches the ids, columns have one length, ``verify()`` is ok;
* no ``FormatError``/``IntegrityError`` anywhere, no error other than
  ``ConflictError``/``ConcurrentWriteError`` (writers), ``DatasetChangedError``
  (readers) and what an injected fault explains.

The library bugs the model found (two writers rolling one record forward
on a remote store, among others) are fixed; a failing run fails the test,
and hypothesis shrinks its scenario.

Budget: ``BCOLZ_STORE_PROTOCOL_EXAMPLES`` (default 40) examples on the
MemoryStore (half taken for a local store, half for a remote one) and a
tenth of them (at least 2) on S3.
"""

from __future__ import annotations

import itertools
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bcolz_store
from bcolz_store.errors import ConcurrentWriteError

from tests.storage.protocol_harness import (FAULTS, WRITES, Scenario, check, problems_of,
                                            report, run_scenario)

DEFAULT_EXAMPLES = 40


def _examples() -> int:
    text = os.environ.get("BCOLZ_STORE_PROTOCOL_EXAMPLES", "")
    try:
        return max(int(text), 1) if text else DEFAULT_EXAMPLES
    except ValueError:
        raise ValueError(f"BCOLZ_STORE_PROTOCOL_EXAMPLES must be a whole number, not {text!r}")


MEMORY_EXAMPLES = _examples()
S3_EXAMPLES = max(MEMORY_EXAMPLES // 10, 2)

APPEND = st.tuples(st.just("append"), st.integers(1, 9))
WRITER_READ = st.tuples(st.just("read"))
OTHER = st.one_of(st.tuples(st.just("setitem"), st.sampled_from([0.0, 0.5, 0.99])),
                  st.tuples(st.just("attrs")),
                  st.tuples(st.just("trim"), st.integers(1, 3)), WRITER_READ)
READER = st.sampled_from(["read", "read", "refresh", "reopen"])
# Requests a fault or a stop is attached to (by kind and count): the commit
# record's creation most often, then the requests around it.  Drawn from a
# seeded random.Random (hypothesis draws the seed and how many): hypothesis'
# own draws of several small choices come out strongly correlated.
FAULT_OPS = ["put_if_absent"] * 4 + ["move", "move", "copy", "copy", "put", "put", "put",
                                     "delete_prefix", "delete_many", "delete", "get", "get",
                                     "list_times", "exists", "listdir"]
STOP_OPS = ["put_if_absent"] * 3 + ["move", "copy", "put", "get", "exists", "list_times",
                                    "delete_prefix", "delete_many"]


def _faults(seed, count):
    rng = random.Random(seed)
    out = {}
    for _ in range(count):
        op = rng.choice(FAULT_OPS)
        out[(op, rng.randint(1, 8))] = rng.choice(FAULTS)
    return tuple(sorted((op, n, fault) for (op, n), fault in out.items()))


def _stops(seed, count):
    rng = random.Random(seed)
    return tuple(sorted({(rng.choice(STOP_OPS), rng.randint(1, 8)) for _ in range(count)}))


@st.composite
def scenarios(draw, horizon=900, max_faults=3, remote=(False, True)):
    kind = draw(st.sampled_from(["carray", "ctable"]))
    mixed = draw(st.sampled_from([False, False, True]))
    op = st.one_of(APPEND, APPEND, OTHER) if mixed else st.one_of(APPEND, APPEND, APPEND,
                                                                  WRITER_READ)
    nwriters = draw(st.integers(2, 4))
    writers = tuple(tuple(draw(st.lists(op, min_size=1, max_size=4)))
                    for _ in range(nwriters))
    readers = tuple(tuple(draw(st.lists(READER, min_size=1, max_size=4)))
                    for _ in range(draw(st.integers(1, 2))))
    names = [f"w{i}" for i in range(1, nwriters + 1)] + \
        [f"r{i}" for i in range(1, len(readers) + 1)]
    return Scenario(
        kind=kind,
        initial=draw(st.integers(0, 6)),
        writers=writers,
        readers=readers,
        order=tuple(draw(st.permutations(names))),
        changes=tuple(sorted(draw(st.lists(st.integers(0, horizon), max_size=6,
                                           unique=True)))),
        p_random=draw(st.sampled_from([0.0, 0.0, 0.05, 0.3, 1.0])),
        seed=draw(st.integers(0, 2 ** 16)),
        faults=_faults(draw(st.integers(0, 2 ** 32)), draw(st.integers(0, max_faults))),
        stops=_stops(draw(st.integers(0, 2 ** 32)), draw(st.integers(0, 3))),
        remote=draw(st.sampled_from(remote)),
        step_cost=draw(st.sampled_from([1e-5, 1e-3, 1e-2])),
    )


COMMON = dict(deadline=None, derandomize=True, database=None, print_blob=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.function_scoped_fixture])


def _explore(examples, strategy, run):
    """Run ``examples`` scenarios drawn from ``strategy`` through ``run``;
    a run that went wrong fails the test (hypothesis shrinks it)."""

    @settings(max_examples=examples, **COMMON)
    @given(strategy)
    def explore(scenario):
        result = run(scenario)
        problems = problems_of(result)
        if problems:
            raise AssertionError(report(result, problems))
    explore()


@pytest.mark.parametrize("remote", [False, True], ids=["local-protocol", "remote-protocol"])
def test_protocol_on_memory(remote):
    """A MemoryStore, taken for a local store or for a remote one (contents
    inline in records, copies, consolidated metadata, readers checking
    contents): half of the examples each."""
    _explore(max(MEMORY_EXAMPLES // 2, 1), scenarios(remote=(remote,)), run_scenario)


_s3_names = itertools.count()


def test_protocol_on_s3(s3_bucket):
    from bcolz_store.storage.fsspec import FsspecStore
    url, options = s3_bucket

    def run(scenario):
        inner = FsspecStore(f"{url}/protocol-{next(_s3_names)}.bcolz", storage_options=options)
        return run_scenario(scenario, inner, step_timeout=120.0)
    _explore(S3_EXAMPLES, scenarios(max_faults=2, remote=(False,)), run)


# --- named scenarios: each position of the protocol at least once, whatever hypothesis draws


def _stop_at(n_steps, *, faults=(), kind="carray", remote=False):
    """w1 runs first and is demoted at step ``n_steps``: w2 and the reader run
    while w1 stands there."""
    return Scenario(kind=kind, initial=5,
                    writers=((("append", 3), ("append", 4)), (("append", 5), ("append", 4))),
                    readers=(("read", "refresh", "read", "read"),),
                    order=("w1", "w2", "r1"), changes=(n_steps,), faults=faults,
                    remote=remote)


def _w1_requests(kind, remote):
    """(step, op) of the requests w1 makes in the scenario of :func:`_stop_at`."""
    run = run_scenario(_stop_at(10 ** 6, kind=kind, remote=remote))
    check(run)
    return [(step, op) for step, actor, op, _key, _fault in run.scheduler.trace
            if actor == "w1" and op not in ("start", "sleep")]


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
@pytest.mark.parametrize("kind", ["carray", "ctable"])
def test_a_writer_stopped_after_each_of_its_requests(kind, remote):
    """w1 stopped after each of its requests in turn (its open, blobs, record,
    moves or copies, checksums, consolidated metadata, clean-up), while w2
    and the reader run."""
    for step, _op in _w1_requests(kind, remote):
        check(run_scenario(_stop_at(step + 1, kind=kind, remote=remote)))


@pytest.mark.parametrize("remote", [False, True], ids=["local", "remote"])
@pytest.mark.parametrize("fault", FAULTS)
def test_one_fault_at_each_write_of_a_writer(fault, remote):
    """A fault at each write request of w1 in turn (w1 stopped right after it)."""
    counts = {}
    for step, op in _w1_requests("carray", remote):
        counts[op] = counts.get(op, 0) + 1
        if op in WRITES or fault == "fail":
            check(run_scenario(_stop_at(step + 1, faults=((op, counts[op], fault),),
                                        remote=remote)))


# --- library bugs this model found (strict xfail: they pass once fixed) -----------------------


def _two_writers(rows, chunklen=4):
    from bcolz_store.storage.memory import MemoryStore
    store = MemoryStore("bug")
    bcolz_store.carray(np.arange(rows), rootdir=store, mode="w", chunklen=chunklen)
    return store, bcolz_store.open(store, mode="a"), bcolz_store.open(store, mode="a")


@pytest.mark.parametrize("then", ["setitem", "read"])
def test_a_writer_reads_a_chunk_another_writer_trimmed(then):
    """Found by the model (B1): b trims chunk 0 (4 rows) to a leftover of 3;
    a, loaded before, touches chunk 0 and got FormatError (concurrency
    reported as damage).  A writer whose chunk read fails now asks whether
    another writer committed since its state (ConcurrentWriteError)."""
    store, a, b = _two_writers(4)
    b.trim(1)
    try:
        if then == "setitem":
            a[0] = 99
        else:
            assert a[:].tolist() in ([0, 1, 2, 3], [0, 1, 2])
    except ConcurrentWriteError:      # (ConflictError is one)
        pass
    assert bcolz_store.verify(store).ok


def test_a_writer_never_reads_a_state_never_committed():
    """Found by the model (B2): a writer's read mixed the leftover it loaded
    with a full chunk of a newer commit ([99, 1, 2, 3, 4, 5]).  A writer's
    chunk reads are now checked against commits, as a reader's are."""
    store, a, b = _two_writers(6)           # chunk 0 full, leftover [4, 5]
    b[5] = 77                               # commit g+1: the leftover
    b[0] = 99                               # commit g+2: chunk 0
    with pytest.raises(ConcurrentWriteError, match="another writer committed"):
        a[:]
    a.refresh()
    assert a[:].tolist() == [99, 1, 2, 3, 4, 77]


#: Found by the model (B3, remote protocol on a MemoryStore; the same scenario on S3 with
#: ``remote=False`` over moto: verify() reports bcolz_store.json damaged).  w1 commits
#: record 1, its first apply request fails; after the lease w1 and w2 both roll record 1
#: forward.  w1 passes the newer_than check before the consolidated-metadata step and stops
#: there; w2 applies record 1, commits and applies 2 and 3; w1 then puts record 1's
#: bcolz_store.json over record 3's.  Readers lose w2's acknowledged append, verify() finds
#: bcolz_store.json damaged, and writers spin in recover() (the checksum file is newer than
#: the consolidated metadata for ever).
CONCURRENT_ROLL_FORWARD = Scenario(
    kind="carray", writers=((("append", 1),), (("append", 1), ("append", 1))), readers=(),
    order=("w1", "w2"), faults=(("put", 1, "fail"),), stops=(("put", 1),), remote=True,
    step_cost=0.001)


def test_the_owner_retries_applying_beside_a_roll_forward_on_a_remote_store():
    """The scenario that first showed B3: w1's first apply request failed, and
    w1 rolled its record forward again beside w2 after the lease.  The owner
    now applies again at once (storage/commit.py APPLY_TRIES), and applying
    is done under the commit lock: two writers never roll one record forward
    at once (B3 is fixed)."""
    check(run_scenario(CONCURRENT_ROLL_FORWARD))


#: A drawn scenario in which B3 happened before the commit lock: w2's request
#: to create its record was stopped, others' requests failed or ran twice, and
#: two writers rolled one record forward at once on the remote protocol.
ROLL_FORWARD_RACE = Scenario(
    kind="ctable", initial=4,
    writers=((("append", 5), ("append", 5), ("read",), ("append", 7)),
             (("append", 1), ("append", 8), ("append", 7), ("read",)),
             (("read",), ("append", 5), ("read",), ("read",))),
    readers=(("read", "read", "reopen", "refresh"),), order=("w2", "r1", "w3", "w1"),
    changes=(223,), p_random=0.0, seed=2152,
    faults=(("listdir", 8, "dup"), ("put", 2, "fail"), ("put", 8, "dup")),
    stops=(("copy", 2), ("exists", 8), ("put_if_absent", 2)), remote=True, step_cost=0.01)


def test_two_writers_never_roll_one_record_forward_at_once():
    """B3 (see CONCURRENT_ROLL_FORWARD): applying takes the commit lock, so the
    drawn scenario that showed an older commit's files written over newer
    ones now runs clean: no stale write, every check of the model holds."""
    run = run_scenario(ROLL_FORWARD_RACE)
    assert not run.mtimes.stale
    check(run)


@pytest.mark.parametrize("change", ["append", "trim"])
def test_a_lost_answer_to_the_record_then_a_failed_read_of_it(change):
    """Found by the model (B4): the retried creation of a commit record
    answered 'exists', and reading the record back failed once; the writer
    took its own record for another's, discarded the blobs it names and said
    ConflictError.  The read back is now tried again (_record_writer): the
    change is committed, once."""
    from bcolz_store.storage.memory import MemoryStore
    from bcolz_store.storage.records import record_key
    store = MemoryStore("bug")
    c = bcolz_store.carray(np.arange(5), rootdir=store, mode="w", chunklen=4)
    record = record_key(c.dataset.generation + 1)
    real_put, real_get = store.put_if_absent, store.get
    failed = []

    def put_if_absent(key, data):       # done; the retry of the request answers "exists"
        real_put(key, data)
        raise ConcurrentWriteError(f"{key}: exists already")

    def get(key, limit):                # and reading the record back fails once
        if key == record and not failed:
            failed.append(key)
            raise OSError(5, "a transient failure", key)
        return real_get(key, limit)
    store.put_if_absent, store.get = put_if_absent, get
    try:
        if change == "append":
            c.append([5, 6])
            c.flush()
        else:
            c.trim(2)
    finally:
        store.put_if_absent, store.get = real_put, real_get
    assert failed and store.exists(record)
    assert bcolz_store.open(store, mode="a")[:].tolist() == (
        [0, 1, 2, 3, 4, 5, 6] if change == "append" else [0, 1, 2])
    report = bcolz_store.verify(store)
    assert report.ok and not report.interrupted_commit


#: Found by a long run (2,000 examples): w2's attrs conflicts with w1's append;
#: its refresh() then loads w1's trim (generation 3) but the listing of the
#: journal's garbage collection fails, so the carray keeps the append's length
#: while the journal holds the trim's state; the next refresh() flushed the
#: carray's `meta/sizes` (4 items) as a new commit over the trim (3 items),
#: and the final open found the chunk shorter than the metadata said.
STALE_AFTER_A_FAILED_REFRESH = Scenario(
    kind="carray", initial=0, writers=((("append", 4), ("trim", 1)), (("attrs",),)),
    readers=(("refresh", "refresh"), ("read",)), order=("w2", "r1", "w1", "r2"), changes=(),
    p_random=0.0, seed=0, faults=(("list_times", 7, "fail"),),
    stops=(("get", 1), ("put_if_absent", 6)), remote=False, chunklen=4, step_cost=0.01)


def test_a_writer_whose_refresh_failed_never_commits_the_state_it_held():
    """A writer whose load of the committed state fails is broken until a
    reload succeeds (its containers may hold an older state than the one
    loaded), and a garbage collection that fails does not fail the load."""
    check(run_scenario(STALE_AFTER_A_FAILED_REFRESH))
