"""What the carray and ctable machines share: where the dataset lives, what
happens between two steps, the committed model, and the read-back through a
pack.

Between two steps (drawn with each step, and done before it, so that the
step is the first thing a reopened dataset sees):

``none``
    the same object goes on;
``reopen``
    ``flush()``, then the dataset is opened anew in mode 'a';
``refresh``
    ``refresh()`` (which commits pending appends first);
``drop``
    the object is dropped without a flush and the dataset opened anew: what
    was not committed is gone, so the model goes back to the committed one.

The committed model is what a reader opening the dataset in mode 'r' must
see; it follows every operation that commits (docs/durability.md: all but
an append not yet flushed).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

import bcolz_store
from bcolz_store import threads
from bcolz_store.storage.packs import pack
from tests.machine import PHASES, budget
from tests.stats_check import check_stats

#: What happens before a step (drawn with it; "none" most often).
BETWEEN = st.sampled_from(["none", "none", "none", "reopen", "refresh", "drop"])


class StoreMachine(RuleBasedStateMachine):
    """A dataset on one kind of store (``store``: 'local', 'memory', 's3' or
    None for an in-memory dataset) and its models."""

    store = "local"
    s3 = None                   # (bucket URL, storage_options) for store 's3'

    def __init__(self):
        super().__init__()
        self.tmpdir = tempfile.mkdtemp(prefix="bcolz-machine-")
        name = uuid.uuid4().hex[:12]
        self.opts = None
        if self.store == "local":
            self.url = os.path.join(self.tmpdir, "ds")
        elif self.store == "memory":
            self.url = f"memory://machine-{name}/ds"
        elif self.store == "s3":
            bucket, self.opts = self.s3
            self.url = f"{bucket}/{name}"
        else:
            self.url = None
        self.saved_nthreads = threads.get_nthreads()
        self.packs = 0

    def teardown(self):
        threads.set_nthreads(self.saved_nthreads)
        shutil.rmtree(self.tmpdir, ignore_errors=True)
        if self.store == "memory":
            import fsspec
            fs = fsspec.filesystem("memory")
            root = self.url[len("memory://"):].split("/")[0]
            if fs.exists(root):
                fs.rm(root, recursive=True)

    # ---------------------------------------------------------------- helpers

    @property
    def stored(self) -> bool:
        return self.url is not None

    def location(self) -> dict:
        """Keyword arguments that put a new dataset where this machine keeps it."""
        if not self.stored:
            return {}
        out = {"rootdir": self.url, "mode": "w"}
        if self.opts:
            out["storage_options"] = self.opts
        return out

    def open(self, mode="a"):
        return bcolz_store.open(self.url, mode=mode, storage_options=self.opts)

    def set_threads(self, n: int) -> None:
        threads.set_nthreads(n)

    def between(self, what: str) -> None:
        """Do ``what`` (see the module's description) before a step."""
        if what == "none" or not self.stored:
            return
        if what == "reopen":
            self.obj.flush()
            self.obj = self.open("a")
            self.committed_now()
        elif what == "refresh":
            self.obj.refresh()
            self.committed_now()
        elif what == "drop":
            self.obj = None
            self.obj = self.open("a")
            self.restore_committed()
        else:                                 # pragma: no cover - a typo in a rule
            raise ValueError(what)

    # The subclasses keep their models in ``model`` and ``committed``.

    def committed_now(self) -> None:
        """The current state is committed."""
        raise NotImplementedError

    def restore_committed(self) -> None:
        """Back to the committed state (what a dropped writer leaves)."""
        raise NotImplementedError

    def check_committed(self, obj) -> None:
        """``obj`` (opened in mode 'r' or from a pack) holds the committed model."""
        raise NotImplementedError

    def check_committed_stats(self) -> None:
        """After a commit (and a reopen): a reader's chunk statistics, read from
        the committed ``meta/stats``, are complete and equal those recomputed
        from its items.  The first commit and every third after it (opening
        a reader is most of a step's time; the statistics a writer knows are
        checked at every step, and those of every reader the machine opens)."""
        self.commits_checked = getattr(self, "commits_checked", 0) + 1
        if self.stored and self.commits_checked % 3 == 1:
            check_stats(self.open("r"), complete=True, what="committed")

    # ------------------------------------------------------------ attrs

    @rule(between=BETWEEN, key=st.sampled_from(["a", "first_row", "ünï"]),
          value=st.one_of(st.integers(-10, 10), st.text(max_size=5), st.none(),
                          st.lists(st.integers(0, 3), max_size=3),
                          st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 3))))
    def set_attr(self, between, key, value):
        self.between(between)
        self.obj.attrs[key] = value
        self.attrs[key] = value
        self.committed_now()

    @rule(between=BETWEEN)
    def del_attr(self, between):
        self.between(between)
        if not self.attrs:
            return
        key = sorted(self.attrs)[0]
        del self.obj.attrs[key]
        del self.attrs[key]
        self.committed_now()

    # ------------------------------------------------------------ readers

    @rule(between=BETWEEN)
    def reader(self, between):
        """A reader opened in mode 'r' beside the writer sees the committed state."""
        self.between(between)
        if self.stored:
            self.check_committed(self.open("r"))

    @rule(between=BETWEEN)
    def pack(self, between):
        """``bcolz-store pack`` of the committed dataset, read back."""
        self.between(between)
        if not self.stored:
            return
        self.packs += 1
        dst = os.path.join(self.tmpdir, f"pack-{self.packs}.zip")
        if self.store == "local":
            from bcolz_store.cli import main
            assert main(["pack", self.url, dst]) == 0
        else:
            pack(self.url, dst, storage_options=self.opts)
        packed = bcolz_store.open(dst, mode="r")
        self.check_committed(packed)


def random_key(rng, n: int):
    """A random slice over ``n`` items, negative steps included."""
    def bound():
        return None if rng.random() < 0.25 else int(rng.integers(-n - 2, n + 3))
    step = [None, 1, 1, 2, 3, 7, -1, -2, -5][int(rng.integers(0, 9))]
    return slice(bound(), bound(), step)


def random_positions(rng, n: int, size: int | None = None) -> np.ndarray:
    """Random positions (negative ones too, repeats allowed) into ``n`` items."""
    size = int(rng.integers(0, 8)) if size is None else size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    return rng.integers(-n, n, size=size)


def run_machine(machine, store, share: float, steps: int, s3=None) -> None:
    """Run ``machine`` with its dataset on ``store`` ('local', 'memory', 's3' with
    ``s3`` its bucket and options, or None: in memory) for ``share`` of the
    example budget, ``steps`` steps each."""
    kind = type(f"{machine.__name__}On{str(store).title()}", (machine,),
                {"store": store, "s3": s3})
    run_state_machine_as_test(kind, settings=settings(
        max_examples=budget(share), stateful_step_count=steps, report_multiple_bugs=False,
        phases=PHASES))
