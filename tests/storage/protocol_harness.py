"""A deterministic scheduler for the commit protocol, and a linearizability
checker for what its actors saw (used by ``test_protocol_model.py``).

Every actor (a writer or a reader) runs in a thread of its own, on a
container opened on its own :class:`SchedulingStore` around one shared inner
store.  Each request an actor makes to the store waits until the
:class:`Scheduler` grants it; only one actor runs at a time, so whatever an
actor computes between two requests belongs to the step that precedes it.
The scheduler picks the next actor from a :class:`Scenario` (a PCT-like
policy: a priority order, change points that demote the running actor, and a
seeded share of random picks), so a run is a function of its scenario.

Time is virtual: ``time.time``/``time.monotonic``/``time.sleep`` as the
commit protocol sees them (``storage/commit.py``, ``storage/committed.py``)
read and advance the scheduler's clock.  A granted store request costs the
scenario's ``step_cost``; a ``sleep(x)`` makes its actor wait until the clock
reaches ``now + x``, and when no actor is ready the clock jumps to the first
wake-up.  No actor ready to make a request waits more than :data:`FAIRNESS`
(a quarter of the apply lease), so a live writer never stalls past the lease;
a writer that died with its record unapplied is taken over once the others
have waited the lease: the one timing assumption of docs/durability.md holds
in every run.  Modification times a store reports (the lease compares a
record's age) are the virtual times of the writes.  The journal's writer tokens
(``uuid``) and the protocol's backoff jitter (``random``) are seeded too.

Faults (:data:`FAULTS`) are attached to requests by kind and count (``("move",
3, "lost")``: the third ``move`` of the run, whoever makes it): ``fail`` raises
:class:`InjectedFault` before the request takes effect, ``lost`` performs it
and then raises (a lost answer), ``dup`` performs it twice (a retried request
whose first answer was lost) and answers as the second did.  Reads only
fail.  Every injected error is an :class:`InjectedFault` (an ``OSError``),
so that what the library raises can be traced back to it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import random
import sys
import threading
import time
import traceback
import types

import numpy as np

import bcolz_store
from bcolz_store import threads as bcolz_threads
from bcolz_store.errors import (ConcurrentWriteError, ConflictError, DatasetChangedError,
                                FormatError, IntegrityError)
from bcolz_store.storage import commit as commit_module
from bcolz_store.storage import commit_lock as lock_module
from bcolz_store.storage import committed as committed_module
from bcolz_store.storage import journal as journal_module
from bcolz_store.storage.base import Store
from bcolz_store.storage.journal import Journal
from bcolz_store.storage.records import JOURNAL_PREFIX, RECORD_NAME, parse_record

#: The lease of the commit lock, in virtual seconds, during a run.
LEASE = 1.0
#: No actor ready to make a request waits longer than this (virtual seconds):
#: the scheduler then grants the one that waited longest.  A twentieth of the
#: lease, so that a live holder of the commit lock, which renews it before
#: each write it makes (the heartbeat thread is off: it would make requests
#: outside the schedule), never stalls past it between two renewals
#: (docs/durability.md's one timing assumption).
FAIRNESS = LEASE / 20
#: Requests the final open, reads and verify() may make (more: a livelock).
FINAL_REQUESTS = 20000
#: What a virtual time.time() adds to the clock.
EPOCH = 1_700_000_000.0
FAULTS = ("dup", "lost", "fail")

READS = ("get", "get_many", "exists", "size", "identity", "list", "list_times", "listdir",
         "root_state")
WRITES = ("put", "put_if_absent", "delete", "delete_if", "delete_many", "delete_prefix", "move",
          "copy", "replace_if", "remove_root")


class InjectedFault(OSError):
    """An error the harness injected (the medium failed, or an answer was lost)."""


class HarnessAbort(BaseException):
    """Unwinds an actor when the scheduler gives up (a timeout, a failure)."""


class HarnessError(AssertionError):
    """The harness itself could not go on: a step that never came, too many steps."""


def caused_by_fault(err: BaseException) -> bool:
    """True when ``err`` or an exception it was raised from or during is injected."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, InjectedFault):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


# ----------------------------------------------------------------- scenario


@dataclasses.dataclass(frozen=True)
class Scenario:
    """One run, replayable: ``run_scenario(Scenario(...))``.

    ``writers``: per writer a tuple of operations, ``("append", n)``,
    ``("setitem", fraction)`` (a row at ``fraction`` of the writer's length
    gets a new id), ``("attrs",)`` (attribute ``w<k>`` set to the op's
    index), ``("trim", n)``, ``("read",)`` (the writer reads everything).
    ``readers``: per reader a tuple of actions
    ``"read"``, ``"refresh"``, ``"reopen"``.  ``order``: actor names, the
    first runs first; at each step in ``changes`` the actor picked is demoted
    below all others; with probability ``p_random`` (seeded by ``seed``) a
    ready actor is picked at random instead; the actor granted the ``n``-th
    request of kind ``op``, for each ``(op, n)`` in ``stops``, is demoted
    right after it (it stands still there while others can run).
    ``faults``: ``(op, n, fault)``, the ``n``-th request of kind ``op``.
    ``remote``: the inner store is taken for a remote one (a MemoryStore then
    runs the object-store protocol: contents inline in records, copies,
    consolidated metadata, readers checking contents).  ``step_cost``: the
    virtual seconds a request takes (against the protocol's sleeps: 1e-5 a
    fast local store, 1e-3 to 1e-2 an object store).
    """

    kind: str = "carray"
    initial: int = 0
    writers: tuple = ((("append", 3),), (("append", 5),))
    readers: tuple = (("read",),)
    order: tuple = ()
    changes: tuple = ()
    p_random: float = 0.0
    seed: int = 0
    faults: tuple = ()
    stops: tuple = ()
    remote: bool = False
    chunklen: int = 4
    step_cost: float = 1e-5


def label(row_id: int) -> str:
    """The vlen str of the row whose id is ``row_id`` (lengths vary)."""
    return f"{row_id}:" + "v" * (row_id % 7)


def append_ids(writer: int, op: int, n: int) -> tuple:
    return tuple(writer * 100000 + op * 100 + j for j in range(n))


# ----------------------------------------------------------------- scheduler


class _Actor:
    def __init__(self, name):
        self.name = name
        self.status = "new"        # new, waiting, running, done
        self.request = None        # (op, key) or ("sleep", seconds) or ("start", None)
        self.wake = 0.0
        self.since = 0.0
        self.go = False
        self.fault = None
        self.thread = None


class Scheduler:
    """Grants one request of one actor at a time (see the module docstring)."""

    def __init__(self, scenario: Scenario, step_timeout: float = 60.0,
                 max_steps: int = 20000, run_timeout: float = 600.0):
        self.scenario = scenario
        self.cond = threading.Condition()
        self.actors = {}
        self.local = threading.local()
        self.clock = 0.0
        self.steps = 0
        self.trace = []
        self.faults = {(op, n): fault for op, n, fault in scenario.faults}
        self.stops = set(scenario.stops)
        self.op_counts = {}
        self.faults_on = True
        self.injected = []
        self.rng = random.Random(scenario.seed)
        self.prio = {}
        n = len(scenario.order)
        for i, name in enumerate(scenario.order):
            self.prio[name] = n - i
        self.lowest = 0
        self.changes = set(scenario.changes)
        self.step_timeout = step_timeout
        self.max_steps = max_steps
        self.run_timeout = run_timeout
        self.aborted = None
        self.foreign_calls = []

    # ---- actor side

    def current(self):
        return getattr(self.local, "actor", None)

    def spawn(self, name, function):
        actor = _Actor(name)
        self.actors[name] = actor
        self.prio.setdefault(name, -len(self.actors))

        def body():
            self.local.actor = actor
            try:
                self._wait(actor, ("start", None), self.clock)
                function()
            except HarnessAbort:
                pass
            finally:
                with self.cond:
                    actor.status = "done"
                    self.cond.notify_all()
        actor.thread = threading.Thread(target=body, name=f"protocol-{name}", daemon=True)
        return actor

    def _wait(self, actor, request, wake):
        with self.cond:
            if self.aborted:
                raise HarnessAbort(self.aborted)
            actor.status = "waiting"
            actor.request = request
            actor.wake = wake
            actor.since = self.clock
            actor.go = False
            self.cond.notify_all()
            while not actor.go:
                self.cond.wait()
                if self.aborted:
                    raise HarnessAbort(self.aborted)
            actor.go = False
            fault, actor.fault = actor.fault, None
            return fault

    def request(self, actor, op, key):
        """Wait for the grant of a store request; the fault attached to it, or None."""
        return self._wait(actor, (op, key), self.clock)

    def sleep(self, seconds):
        actor = self.current()
        if actor is None:               # the main thread, alone: time simply passes
            self.clock += max(float(seconds), 0.0)
            return
        self._wait(actor, ("sleep", seconds), self.clock + max(float(seconds), 0.0))

    # ---- scheduler side

    def run(self):
        for actor in self.actors.values():
            actor.thread.start()
        started = time.monotonic()
        try:
            while True:
                with self.cond:
                    deadline = time.monotonic() + self.step_timeout
                    while True:
                        busy = [a for a in self.actors.values()
                                if a.status in ("new", "running")]
                        if not busy:
                            break
                        left = deadline - time.monotonic()
                        if left <= 0:
                            raise HarnessError(
                                f"no request from {[a.name for a in busy]} within "
                                f"{self.step_timeout} s (step {self.steps}):\n"
                                + self.stacks(busy))
                        self.cond.wait(left)
                    waiting = sorted((a for a in self.actors.values()
                                      if a.status == "waiting"), key=lambda a: a.name)
                    if not waiting:
                        return
                    if self.steps >= self.max_steps:
                        raise HarnessError(f"more than {self.max_steps} steps (a livelock?):\n"
                                           + self.tail())
                    if time.monotonic() - started > self.run_timeout:
                        raise HarnessError(f"the run took more than {self.run_timeout} s")
                    ready = [a for a in waiting if a.wake <= self.clock]
                    if not ready:
                        self.clock = min(a.wake for a in waiting)
                        ready = [a for a in waiting if a.wake <= self.clock]
                    chosen = self._choose(ready)
                    op, key = chosen.request
                    fault = None
                    if op not in ("start", "sleep"):
                        self.clock += self.scenario.step_cost
                        count = self.op_counts[op] = self.op_counts.get(op, 0) + 1
                        fault = self.faults.get((op, count)) if self.faults_on else None
                        if fault is not None and op not in WRITES:
                            fault = "fail"
                        if (op, count) in self.stops:
                            self.lowest -= 1
                            self.prio[chosen.name] = self.lowest - len(self.actors)
                    self.trace.append((self.steps, chosen.name, op, key, fault))
                    self.steps += 1
                    chosen.fault = fault
                    chosen.status = "running"
                    chosen.go = True
                    self.cond.notify_all()
        except BaseException as err:
            self.abort(f"the scheduler stopped: {err!r}")
            raise
        finally:
            for actor in self.actors.values():
                actor.thread.join(timeout=self.step_timeout)

    def _choose(self, ready):
        overdue = [a for a in ready if self.clock - max(a.wake, a.since) > FAIRNESS]
        if overdue:
            return min(overdue, key=lambda a: (max(a.wake, a.since), a.name))
        if self.steps in self.changes:
            top = max(ready, key=lambda a: self.prio[a.name])
            self.lowest -= 1
            self.prio[top.name] = self.lowest - len(self.actors)
        if self.scenario.p_random and self.rng.random() < self.scenario.p_random:
            return self.rng.choice(ready)
        return max(ready, key=lambda a: self.prio[a.name])

    def abort(self, why):
        with self.cond:
            self.aborted = why
            self.cond.notify_all()

    def stacks(self, actors):
        frames = sys._current_frames()
        out = []
        for actor in actors:
            frame = frames.get(actor.thread.ident) if actor.thread else None
            out.append(f"--- {actor.name} ({actor.status}):\n"
                       + ("".join(traceback.format_stack(frame)) if frame else "(no frame)\n"))
        return "".join(out)

    def tail(self, n=60):
        return "\n".join(f"  {s:5d} {a:3s} {op} {key}" + (f"  <{f}>" if f else "")
                         for s, a, op, key, f in self.trace[-n:])


# --------------------------------------------------------------------- store


class MTimes(dict):
    """Virtual modification times of the keys of one inner store, and the
    stale writes seen there (``stale``: see :meth:`SchedulingStore._stale`)."""

    def __init__(self):
        super().__init__()
        self.stale = []
        self.unsure = set()         # (actor, record key) created with a lost answer
        self.unread_claims = []     # ... whose reading back then failed
        self.budget = None      # requests left to the final checks


class SchedulingStore(Store):
    """``inner`` seen by one actor: each request waits for the scheduler's
    grant and may carry a fault; calls from any other thread (the main
    thread, before and after the run) go straight through."""

    def __init__(self, inner: Store, scheduler: Scheduler | None, actor_name: str | None,
                 mtimes: MTimes, remote: bool = False):
        super().__init__(inner.url, False)
        self.inner = inner
        self.scheduler = scheduler
        self.actor_name = actor_name
        self.mtimes = mtimes
        self.atomic_move = inner.atomic_move
        self.durable = inner.durable
        self.remote = inner.remote or remote
        self.on_disk = False
        self.self_checking = inner.self_checking

    def _now(self):
        return self.scheduler.clock if self.scheduler is not None else 0.0

    def _call(self, op, key, function):
        sched = self.scheduler
        fault = None
        if sched is not None:
            actor = sched.current()
            if actor is not None and actor.name == self.actor_name:
                fault = sched.request(actor, op, key)
            elif actor is not None or sched.actors and any(
                    a.status in ("waiting", "running") for a in sched.actors.values()):
                sched.foreign_calls.append((threading.current_thread().name, op, key))
        elif self.mtimes.budget is not None:
            self.mtimes.budget -= 1
            if self.mtimes.budget < 0:
                raise HarnessAbort("too many requests")
        if fault is None:
            return function()
        if sched is not None:
            sched.injected.append((sched.steps - 1, self.actor_name, op, key, fault))
            # B4's mechanism: the answer to a record's creation lost (or the request
            # repeated), then the writer's read of that record fails
            if op == "put_if_absent" and fault in ("lost", "dup"):
                self.mtimes.unsure.add((self.actor_name, key))
            elif op == "get" and (self.actor_name, key) in self.mtimes.unsure:
                self.mtimes.unread_claims.append((sched.steps - 1, self.actor_name, key))
        if fault == "fail":
            raise InjectedFault(errno.EIO, f"injected: {op} {key!r} failed before taking "
                                           f"effect")
        result = function()
        if fault == "lost":
            raise InjectedFault(errno.EIO, f"injected: the answer to {op} {key!r} was lost")
        if fault == "dup":
            return function()
        return result

    def _touch(self, key):
        self.mtimes[key] = self._now()

    def _stale(self, key, data, how):
        """Note a *stale write*: ``data`` (contents, or a blob's name for a
        copy) is what commit record ``g`` gives
        ``key`` (its newest record to do so), while a later record, still in
        the journal, gives ``key`` other content: an older commit's file is
        being written over a newer one's.  (Inline contents of remote stores;
        a blob moved on a local store is gone once applied.)"""
        if key.startswith(JOURNAL_PREFIX):
            return
        if not isinstance(data, str):       # a blob's name (a copy), else contents
            data = b"".join(bytes(p) for p in data) if isinstance(data, list) else bytes(data)
        records = {}
        for name in self.inner.list_times(JOURNAL_PREFIX):
            match = RECORD_NAME.fullmatch(name[len(JOURNAL_PREFIX):])
            if not match:
                continue
            try:
                entries = parse_record(self.inner.get(name, 1 << 26), name)[0]
            except Exception:       # gone meanwhile, or not ours to judge
                continue
            records[int(match.group(1))] = dict((k, b) for k, b in entries)
        ours = [g for g, entries in records.items()
                if entries.get(key) is not None and entries[key] == data]
        if not ours:
            return
        newer = [g for g, entries in records.items()
                 if g > max(ours) and key in entries and entries[key] != data]
        if newer:
            self.mtimes.stale.append((self.scheduler.steps - 1 if self.scheduler else None,
                                      self.actor_name, how, key, max(ours), max(newer)))

    # reading
    def get(self, key, limit):
        return self._call("get", key, lambda: self.inner.get(key, limit))

    def get_many(self, keys, limit):
        keys = list(keys)
        if not self.remote:
            return super().get_many(keys, limit)   # one get() each, each a step
        try:
            return self._call("get_many", tuple(keys), lambda: self.inner.get_many(keys, limit))
        except InjectedFault as err:
            return {key: err for key in keys}

    def exists(self, key):
        return self._call("exists", key, lambda: self.inner.exists(key))

    def size(self, key):
        return self._call("size", key, lambda: self.inner.size(key))

    def identity(self, key):
        return self._call("identity", key, lambda: self.inner.identity(key))

    def list(self, prefix=""):
        return self._call("list", prefix, lambda: self.inner.list(prefix))

    def list_times(self, prefix):
        found = self._call("list_times", prefix, lambda: self.inner.list_times(prefix))
        return {key: EPOCH + self.mtimes.get(key, 0.0) for key in found}

    def listdir(self, prefix=""):
        return self._call("listdir", prefix, lambda: self.inner.listdir(prefix))

    def root_state(self):
        return self._call("root_state", "", self.inner.root_state)

    # writing
    def put(self, key, data):
        self._check_writable()

        def put():
            self._stale(key, data, "put")
            self.inner.put(key, data)
            self._touch(key)
        return self._call("put", key, put)

    def put_if_absent(self, key, data):
        self._check_writable()

        def put():
            self.inner.put_if_absent(key, data)
            self._touch(key)
        return self._call("put_if_absent", key, put)

    def delete(self, key):
        self._check_writable()
        return self._call("delete", key, lambda: self.inner.delete(key))

    def delete_if(self, key, data):
        self._check_writable()
        return self._call("delete_if", key, lambda: self.inner.delete_if(key, data))

    def replace_if(self, key, data, expected):
        self._check_writable()

        def replace():
            done = self.inner.replace_if(key, data, expected)
            if done:
                self._touch(key)
            return done
        return self._call("replace_if", key, replace)

    def delete_many(self, keys):
        self._check_writable()
        keys = list(keys)
        return self._call("delete_many", tuple(keys), lambda: self.inner.delete_many(keys))

    def delete_prefix(self, prefix):
        self._check_writable()
        return self._call("delete_prefix", prefix, lambda: self.inner.delete_prefix(prefix))

    def move(self, src, dst):
        self._check_writable()

        def move():
            self.inner.move(src, dst)
            self.mtimes[dst] = self._now() if self.remote else self.mtimes.get(src, self._now())
        return self._call("move", f"{src} -> {dst}", move)

    def copy(self, src, dst):
        self._check_writable()

        def copy():
            if src.startswith(JOURNAL_PREFIX):
                self._stale(dst, src[len(JOURNAL_PREFIX):], "copy")
            self.inner.copy(src, dst)
            self._touch(dst)
        return self._call("copy", f"{src} -> {dst}", copy)

    def remove_root(self):
        self._check_writable()
        return self._call("remove_root", "", self.inner.remove_root)

    def for_each(self, function, items):
        for item in items:            # one request after the other, each a step
            function(item)

    # not requests (no-ops on memory and S3), passed through
    def check_folder(self, prefix):
        self.inner.check_folder(prefix)

    def makedirs(self, prefix=""):
        self.inner.makedirs(prefix)

    def remove_folder_if_empty(self, prefix):
        self.inner.remove_folder_if_empty(prefix)

    def sync(self, keys):
        self.inner.sync(keys)

    def sync_folders(self, keys):
        self.inner.sync_folders(keys)

    def check_targets(self, keys):
        self.inner.check_targets(keys)

    def prune_empty_folders(self, keep=()):
        self.inner.prune_empty_folders(keep)

    def portable(self):
        return None


# ----------------------------------------------------- virtual time and seeds


class _VirtualTime(types.SimpleNamespace):
    pass


@contextlib.contextmanager
def deterministic_protocol(scheduler: Scheduler, seed: int):
    """Virtual time, seeded jitter and writer tokens in the commit protocol."""
    clock = _VirtualTime(
        time=lambda: EPOCH + scheduler.clock,
        monotonic=lambda: scheduler.clock,
        perf_counter=lambda: scheduler.clock,
        sleep=scheduler.sleep,
    )
    rng = random.Random(seed ^ 0x5EED)
    tokens = iter(range(1, 10 ** 9))
    lock = threading.Lock()

    def uuid4():
        with lock:
            n = next(tokens)
        return types.SimpleNamespace(hex=f"{(seed & 0xFFFFFF) << 28 | n:016x}" + "0" * 16)
    saved = (commit_module.time, committed_module.time, lock_module.time, commit_module.random,
             lock_module.random, journal_module.uuid, lock_module.uuid, Journal.lock_lease,
             lock_module.ObjectCommitLock.heartbeat)
    nthreads = bcolz_threads.set_nthreads(1)   # chunks decoded in the actor's own thread
    commit_module.time = committed_module.time = lock_module.time = clock
    commit_module.random = lock_module.random = rng
    journal_module.uuid = lock_module.uuid = types.SimpleNamespace(uuid4=uuid4)
    Journal.lock_lease = LEASE
    lock_module.ObjectCommitLock.heartbeat = False
    try:
        yield
    finally:
        (commit_module.time, committed_module.time, lock_module.time, commit_module.random,
         lock_module.random, journal_module.uuid, lock_module.uuid, Journal.lock_lease,
         lock_module.ObjectCommitLock.heartbeat) = saved
        bcolz_threads.set_nthreads(nthreads)


# ------------------------------------------------------------------- actors


@dataclasses.dataclass
class OpRecord:
    writer: int
    index: int
    kind: str
    model: tuple        # ("append", ids) / ("set", pos, id) / ("attr", key, value) / ("trim", n)
    start: int = 0
    end: int = 0
    outcome: str = "ok"     # ok, no (ConflictError: not made), unknown (an error)
    error: str = ""


@dataclasses.dataclass
class Observation:
    reader: str
    state: tuple
    a: int                  # the step its state began loading
    b: int                  # the step the read ended


class Run:
    """One scenario's run: actors, records, observations and problems."""

    def __init__(self, scenario: Scenario, inner: Store, step_timeout=60.0):
        self.scenario = scenario
        self.inner = inner
        self.mtimes = MTimes()
        self.scheduler = Scheduler(scenario, step_timeout=step_timeout)
        self.ops = {}               # writer -> [OpRecord]
        self.observations = []
        self.problems = []
        self.errors = []            # (actor, repr) of every error an actor saw
        self.initial_state = None
        self.final_state = None

    # ---- helpers

    def store(self, actor=None):
        return SchedulingStore(self.inner, self.scheduler if actor else None, actor,
                               self.mtimes, self.scenario.remote)

    def read_state(self, obj, who):
        """``(ids, attrs)`` of everything ``obj`` holds; a vlen column that
        disagrees with the ids is a problem."""
        if self.scenario.kind == "ctable":
            data = obj[:]
            ids = tuple(int(x) for x in data["id"])
            labels = [str(x) for x in data["s"]]
            if labels != [label(i) for i in ids]:
                self.problems.append(f"{who}: the vlen column does not match the ids: "
                                     f"ids {list(ids)}, strs {labels}")
            lengths = {name: len(obj.cols[name]) for name in obj.names}
            if len(set(lengths.values())) != 1 or len(ids) not in set(lengths.values()):
                self.problems.append(f"{who}: columns of different lengths {lengths}, "
                                     f"read {len(ids)} rows")
        else:
            ids = tuple(int(x) for x in obj[:])
            if len(ids) != len(obj):
                self.problems.append(f"{who}: read {len(ids)} rows of {len(obj)}")
        attrs = tuple(sorted((str(k), v) for k, v in dict(obj.attrs).items()))
        return ids, attrs

    def classify(self, who, err, writer=True):
        """'no' (nothing committed), 'unknown' (allowed: a fault), or a problem."""
        self.errors.append((who, f"{type(err).__name__}: {err}"))
        if writer and isinstance(err, (ConflictError, ConcurrentWriteError)) \
                and not caused_by_fault(err):
            return "no"
        if isinstance(err, (FormatError, IntegrityError)):
            what = "a fault reported as damage" if caused_by_fault(err) else \
                "concurrency reported as damage"
            self.problems.append(f"{who}: {what}: {type(err).__name__}: {err}\n"
                                 + "".join(traceback.format_exception(err)))
            return "unknown"
        if caused_by_fault(err):
            return "unknown"
        if not writer and isinstance(err, DatasetChangedError):
            return "unknown"
        self.problems.append(f"{who}: unexpected {type(err).__name__}: {err}\n"
                             + "".join(traceback.format_exception(err)))
        return "unknown"

    def open(self, who, mode, writer):
        """Open the dataset through ``who``'s store, again after injected faults."""
        for _attempt in range(20):
            try:
                return bcolz_store.open(self.store(who), mode=mode)
            except HarnessAbort:
                raise
            except BaseException as err:
                self.classify(who, err, writer)
                if not caused_by_fault(err) and not isinstance(err, DatasetChangedError):
                    raise HarnessAbort(f"{who} cannot open: {err!r}")
        raise HarnessAbort(f"{who} could not open in 20 attempts")

    def settle(self, who, obj, mode, writer):
        """Back to a usable object after an error: refresh(), else reopen."""
        for _attempt in range(20):
            try:
                if obj is None:
                    return self.open(who, mode, writer)
                obj.refresh()
                return obj
            except HarnessAbort:
                raise
            except BaseException as err:
                self.classify(who, err, writer)
                if not caused_by_fault(err):
                    obj = None
        raise HarnessAbort(f"{who} could not refresh in 20 attempts")

    # ---- actors

    def writer(self, w, program):
        who = f"w{w}"
        sched = self.scheduler
        records = self.ops.setdefault(w, [])
        loaded = sched.steps
        obj = self.open(who, "a", True)
        kind = self.scenario.kind
        for i, op in enumerate(program):
            if op[0] == "read":
                # A writer reads the state it loaded (or, after a commit it
                # notices, the newest): some committed state, never damage.
                try:
                    state = self.read_state(obj, who)
                except HarnessAbort:
                    raise
                except BaseException as err:
                    if self.classify(who, err, True) == "no":
                        self.errors.append((who, "(a read)"))
                    loaded = sched.steps
                    obj = self.settle(who, obj, "a", True)
                else:
                    self.observations.append(Observation(who, state, loaded, sched.steps))
                continue
            n = len(obj)
            if op[0] == "append":
                ids = append_ids(w, i, op[1])
                model = ("append", ids)
            elif op[0] == "setitem":
                if not n:
                    continue
                pos = min(int(op[1] * n), n - 1)
                new = w * 100000 + i * 100 + 99
                model = ("set", pos, new)
            elif op[0] == "attrs":
                model = ("attr", who, i)
            elif op[0] == "trim":
                k = min(op[1], n)
                if not k:
                    continue
                model = ("trim", k)
            else:
                raise ValueError(op)
            record = OpRecord(w, i, op[0], model, start=sched.steps)
            records.append(record)
            loaded = record.start
            try:
                if model[0] == "append":
                    if kind == "ctable":
                        obj.append([np.array(ids, dtype="i8"),
                                    np.array([label(x) for x in ids], dtype=object)])
                    else:
                        obj.append(np.array(ids, dtype="i8"))
                        obj.flush()
                elif model[0] == "set":
                    if kind == "ctable":
                        obj[model[1]] = (model[2], label(model[2]))
                    else:
                        obj[model[1]] = model[2]
                elif model[0] == "attr":
                    obj.attrs[who] = i
                else:
                    obj.trim(model[1])
            except HarnessAbort:
                raise
            except BaseException as err:
                record.end = sched.steps
                record.outcome = self.classify(who, err, True)
                record.error = f"{type(err).__name__}: {err}"
                obj = self.settle(who, obj, "a", True)
            else:
                record.end = sched.steps
        try:
            obj.close()             # nothing pending: commits nothing
        except HarnessAbort:
            raise
        except BaseException as err:
            self.classify(who, err, True)

    def reader(self, r, program):
        who = f"r{r}"
        sched = self.scheduler
        loaded = sched.steps
        obj = self.open(who, "r", False)
        for action in program:
            if action in ("refresh", "reopen"):
                loaded = sched.steps
                try:
                    if action == "refresh":
                        obj.refresh()
                    else:
                        obj = self.open(who, "r", False)
                except HarnessAbort:
                    raise
                except BaseException as err:
                    self.classify(who, err, False)
                    loaded = sched.steps
                    obj = self.settle(who, obj, "r", False)
                continue
            try:
                state = self.read_state(obj, who)
            except HarnessAbort:
                raise
            except BaseException as err:
                self.classify(who, err, False)
                loaded = sched.steps
                obj = self.settle(who, obj, "r", False)
                continue
            self.observations.append(Observation(who, state, loaded, sched.steps))

    # ---- the run

    def create(self):
        sc = self.scenario
        ids = np.arange(sc.initial, dtype="i8")
        if sc.kind == "ctable":
            bcolz_store.ctable([ids, np.array([label(int(x)) for x in ids], dtype=object)],
                               names=["id", "s"], dtype={"s": bcolz_store.vlen(str)},
                               rootdir=self.store(), mode="w", chunklen=sc.chunklen)
        else:
            bcolz_store.carray(ids, rootdir=self.store(), mode="w", chunklen=sc.chunklen)
        self.initial_state = (tuple(range(sc.initial)), ())

    def execute(self):
        sc = self.scenario
        with deterministic_protocol(self.scheduler, sc.seed):
            self.create()
            for w, program in enumerate(sc.writers, 1):
                self.scheduler.spawn(f"w{w}", lambda w=w, p=program: self.writer(w, p))
            for r, program in enumerate(sc.readers, 1):
                self.scheduler.spawn(f"r{r}", lambda r=r, p=program: self.reader(r, p))
            try:
                self.scheduler.run()
            except HarnessError as err:
                self.problems.append(f"the run did not finish: {err}")
            finally:
                self.scheduler.faults_on = False
            if any(a.thread.is_alive() for a in self.scheduler.actors.values()):
                self.problems.append("an actor is still running: no final check")
                return self
            self.finish()
        return self

    def finish(self):
        """Faults off: a writer opens (recovery finishes what is half applied),
        then a reader reads, and verify() checks every file."""
        self.mtimes.budget = FINAL_REQUESTS
        try:
            writer = bcolz_store.open(self.store(), mode="a")
            state = self.read_state(writer, "final writer")
            writer.close()
            reader = bcolz_store.open(self.store(), mode="r")
            again = self.read_state(reader, "final reader")
        except HarnessAbort:
            self.problems.append(f"the final open and reads made more than {FINAL_REQUESTS} "
                                 f"requests (a livelock)")
            return
        except Exception as err:
            self.problems.append("the final open failed: "
                                 + "".join(traceback.format_exception(err)))
            return
        if again != state:
            self.problems.append(f"the final reader read {again}, the final writer {state}")
        self.final_state = state
        try:
            report = bcolz_store.verify(self.store())
        except HarnessAbort:
            self.problems.append(f"verify() made more than {FINAL_REQUESTS} requests")
            return
        if not report.ok:
            self.problems.append(f"verify() after the run: {report}")
        if self.scheduler.foreign_calls:
            self.problems.append(f"store calls from threads the harness does not schedule: "
                                 f"{self.scheduler.foreign_calls[:5]}")

    # ---- the model

    def describe(self):
        lines = [f"scenario: {self.scenario!r}", f"steps: {self.scheduler.steps}"]
        for w, records in sorted(self.ops.items()):
            for rec in records:
                lines.append(f"  w{w} op{rec.index} {rec.model} [{rec.start}, {rec.end}] "
                             f"{rec.outcome} {rec.error[:200]}")
        for obs in self.observations:
            lines.append(f"  {obs.reader} saw {obs.state} [{obs.a}, {obs.b}]")
        lines.append(f"  final {self.final_state}")
        lines.append(f"  injected {self.scheduler.injected}")
        return "\n".join(lines)


def apply_model(state, model):
    """The committed state after ``model`` (None when it cannot apply there)."""
    ids, attrs = state
    kind = model[0]
    if kind == "append":
        return ids + model[1], attrs
    if kind == "set":
        if model[1] >= len(ids):
            return None
        return ids[:model[1]] + (model[2],) + ids[model[1] + 1:], attrs
    if kind == "attr":
        return ids, tuple(sorted(dict(attrs, **{model[1]: model[2]}).items()))
    if kind == "trim":
        if model[1] > len(ids):
            return None
        return ids[:len(ids) - model[1]], attrs
    raise ValueError(model)


def linearizable(run: Run, budget: int = 2_000_000, writers_reads: bool = True):
    """True when one order of the committed operations explains every read
    and the final state: each writer's operations in its order, each made
    (``ok``), not made (``no``) or either (``unknown``); an operation that
    ended before another began comes first, a read sees every operation that
    ended before its state began loading and none that began after it ended,
    and reads in real-time order see states in that order.  None when the
    search ran out of ``budget``."""
    writers = sorted(run.ops)
    programs = [run.ops[w] for w in writers]
    obs = [o for o in run.observations if writers_reads or not o.reader.startswith("w")]
    final = run.final_state
    all_ops = [(k, i, rec) for k, prog in enumerate(programs) for i, rec in enumerate(prog)]
    # before[k][i]: (writer index, op index) of ops (other writers) that ended before op k,i began
    before = {(k, i): [(k2, i2) for k2, i2, r2 in all_ops
                       if k2 != k and r2.end <= rec.start]
              for k, i, rec in all_ops}
    obs_before_op = {(k, i): [j for j, o in enumerate(obs) if o.b <= rec.start]
                     for k, i, rec in all_ops}
    ops_before_obs = [[(k, i) for k, i, rec in all_ops if rec.end <= o.a] for o in obs]
    obs_before_obs = [[j2 for j2, o2 in enumerate(obs) if o2.b <= o.a] for o in obs]
    seen = set()
    count = 0
    stack = [(tuple(0 for _ in programs), 0, run.initial_state)]
    while stack:
        pos, matched, state = stack.pop()
        key = (pos, matched, state)
        if key in seen:
            continue
        seen.add(key)
        count += 1
        if count > budget:
            return None

        def processed(k, i, pos=pos):
            return pos[k] > i
        # match every observation that can be matched now (never harms)
        changed = True
        while changed:
            changed = False
            for j, o in enumerate(obs):
                if matched >> j & 1 or o.state != state:
                    continue
                if all(processed(k, i) for k, i in ops_before_obs[j]) and \
                        all(matched >> j2 & 1 for j2 in obs_before_obs[j]):
                    matched |= 1 << j
                    changed = True
        if all(p == len(prog) for p, prog in zip(pos, programs)):
            if matched == (1 << len(obs)) - 1 and state == final:
                return True
            continue
        for k, prog in enumerate(programs):
            i = pos[k]
            if i == len(prog):
                continue
            rec = prog[i]
            if not all(processed(k2, i2) for k2, i2 in before[(k, i)]):
                continue
            nxt = pos[:k] + (i + 1,) + pos[k + 1:]
            if rec.outcome in ("no", "unknown"):
                stack.append((nxt, matched, state))
            if rec.outcome in ("ok", "unknown"):
                if not all(matched >> j & 1 for j in obs_before_op[(k, i)]):
                    continue
                new = apply_model(state, rec.model)
                if new is not None:
                    stack.append((nxt, matched, new))
    return False


def invariants(run: Run) -> list:
    """Plain statements about the final state (clearer than the search when
    only appends ran): every acknowledged append present exactly once and
    whole, each writer's rows in its order, an unacknowledged one whole or
    absent, no duplicates."""
    problems = []
    if run.final_state is None:
        return problems
    ids = run.final_state[0]
    if len(set(ids)) != len(ids):
        dup = sorted({x for x in ids if ids.count(x) > 1})
        problems.append(f"duplicated rows in the final state: {dup[:20]}")
    only_appends = all(rec.kind == "append" for recs in run.ops.values() for rec in recs)
    if not only_appends:
        return problems
    where = {x: n for n, x in enumerate(ids)}
    for w, records in run.ops.items():
        last = -1
        for rec in records:
            rows = rec.model[1]
            present = [x in where for x in rows]
            if rec.outcome == "ok" and not all(present):
                problems.append(f"w{w} op{rec.index}: acknowledged append {rows} missing "
                                f"{[x for x in rows if x not in where]}")
            if rec.outcome == "no" and any(present):
                problems.append(f"w{w} op{rec.index}: append refused ({rec.error[:120]}) "
                                f"but present")
            if any(present) and not all(present):
                problems.append(f"w{w} op{rec.index}: append {rows} partly present")
            if all(present):
                first = where[rows[0]]
                if [where[x] for x in rows] != list(range(first, first + len(rows))):
                    problems.append(f"w{w} op{rec.index}: rows {rows} not contiguous")
                if first < last:
                    problems.append(f"w{w} op{rec.index}: rows before the writer's earlier rows")
                last = first
    if ids[:run.scenario.initial] != tuple(range(run.scenario.initial)):
        problems.append(f"the initial rows changed: {ids[:run.scenario.initial]}")
    return problems


def run_scenario(scenario: Scenario, inner: Store | None = None, step_timeout=60.0) -> Run:
    """Run ``scenario`` on ``inner`` (a new MemoryStore by default)."""
    if inner is None:
        from bcolz_store.storage.memory import MemoryStore
        inner = MemoryStore("protocol")
    return Run(scenario, inner, step_timeout).execute()


def problems_of(run: Run) -> list:
    """Every way ``run`` went wrong (an empty list when it did not)."""
    problems = list(run.problems) + invariants(run)
    if not problems and run.final_state is not None:
        verdict = linearizable(run)
        if verdict is None:
            problems.append("the linearizability search ran out of budget")
        elif not verdict:
            problems.append("no order of the committed operations explains what the readers "
                            "saw and the final state")
    return problems


def report(run: Run, problems: list) -> str:
    return ("\n".join(problems) + "\n" + run.describe() + "\nstale writes: "
            + repr(run.mtimes.stale) + "\ntrace tail:\n" + run.scheduler.tail(80))


def check(run: Run) -> None:
    """Raise AssertionError describing every way ``run`` went wrong."""
    problems = problems_of(run)
    if problems:
        raise AssertionError(report(run, problems))
