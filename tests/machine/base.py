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
from hypothesis.stateful import RuleBasedStateMachine

import bcolz_store
from bcolz_store import threads
from bcolz_store.storage.packs import pack

BETWEEN_STORED = ["none", "none", "none", "reopen", "refresh", "drop"]
BETWEEN_MEMORY = ["none"]


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

    def between_choices(self):
        return BETWEEN_STORED if self.stored else BETWEEN_MEMORY

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

    # ------------------------------------------------------------ pack

    def pack_and_check(self) -> None:
        """Pack the committed dataset and check what the pack holds."""
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

    def reader_check(self) -> None:
        """A reader opened in mode 'r' beside the writer sees the committed state."""
        if self.stored:
            self.check_committed(self.open("r"))


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
