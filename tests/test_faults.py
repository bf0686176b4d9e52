"""Failed writes never commit a corrupt state.

An injector makes the N-th file-system write under a dataset fail (opening a
file for writing, writing to it, fsync, replace, rename, mkdir, unlink) with
ENOSPC (and every later write too: a full disk), or once with EIO or EACCES.
For every N until the operation no longer hits a failure:

1. the operation raises an ``OSError`` naming a file of the dataset (or a
   ``BcolzStoreError``);
2. the disk is working again, and the same object is used on: ``flush()``
   either succeeds or refuses with ``WriteFailedError`` until ``refresh()``;
   then one more write succeeds;
3. the dataset then holds exactly the committed state before or after the
   failed operation, plus the extra write; its columns have one length,
   ``verify()`` finds nothing wrong, and it opens in modes 'r' and 'a'.

This is the failure the long audit found: a full disk during appends, then a
successful ``flush()``, committed a ctable whose columns differed in length.

A full disk is tried at every write position.  A single EIO or EACCES is
tried at every third position (EIO from the first, EACCES from the second,
so that together they cover two thirds of them); set
``BCOLZ_STORE_FAULTS=all`` to try every position with both.
"""

from __future__ import annotations

import builtins
import dataclasses
import errno
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import BcolzStoreError, WriteFailedError

ERRORS = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO, "EACCES": errno.EACCES}
MAX_POSITIONS = 400


class _FailingFile:
    """A file object whose writes go through the injector."""

    def __init__(self, fh, injector, path):
        self._fh, self._injector, self._path = fh, injector, path

    def write(self, data):
        self._injector.event(self._path)
        return self._fh.write(data)

    def __getattr__(self, name):
        return getattr(self._fh, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._fh.close()


class Injector:
    """Fail the ``fail_at``-th write event under ``root`` (and, ``sticky``, every later one)."""

    def __init__(self, monkeypatch, root: Path, fail_at: int, err: int, sticky: bool):
        self.root = os.path.realpath(root.parent)
        self.fail_at, self.err, self.sticky = fail_at, err, sticky
        self.count = 0
        self.hit = False
        real = {name: getattr(os, name) for name in
                ("open", "replace", "rename", "makedirs", "mkdir", "unlink", "fsync", "writev")}
        real_open = builtins.open
        fds = {}

        def event_fd(fd):
            if fd in fds:
                self.event(fds[fd])

        def fake_open(file, mode="r", *args, **kwargs):
            fh = real_open(file, mode, *args, **kwargs)
            if any(c in mode for c in "wax+") and self.under(file):
                try:
                    self.event(file)
                except OSError:
                    fh.close()
                    raise
                return _FailingFile(fh, self, file)
            return fh

        def fake_os_open(path, flags, *args, **kwargs):
            if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and self.under(path):
                self.event(path)
            fd = real["open"](path, flags, *args, **kwargs)
            if self.under(path):
                fds[fd] = path
            return fd

        def wrap(name):
            def fake(path, *args, **kwargs):
                if self.under(path):
                    self.event(path)
                return real[name](path, *args, **kwargs)
            return fake

        def fake_fsync(fd):
            event_fd(fd)
            return real["fsync"](fd)

        def fake_writev(fd, buffers):
            event_fd(fd)
            return real["writev"](fd, buffers)

        monkeypatch.setattr(builtins, "open", fake_open)
        monkeypatch.setattr(os, "open", fake_os_open)
        monkeypatch.setattr(os, "fsync", fake_fsync)
        monkeypatch.setattr(os, "writev", fake_writev)
        for name in ("replace", "rename", "makedirs", "mkdir", "unlink"):
            monkeypatch.setattr(os, name, wrap(name))

    def under(self, path) -> bool:
        try:
            return os.path.abspath(os.fspath(path)).startswith(self.root)
        except TypeError:
            return False

    def event(self, path) -> None:
        self.count += 1
        if self.count == self.fail_at or (self.sticky and self.count > self.fail_at):
            self.hit = True
            raise OSError(self.err, os.strerror(self.err), os.fspath(path))


# --- datasets and operations -------------------------------------------------------------

def make_carray(root: Path):
    c = bcolz_store.carray(np.arange(35, dtype="i8"), chunklen=10, rootdir=str(root), mode="w")
    c.attrs["k"] = 1
    return c


def make_ctable(root: Path, auto_flush=True):
    t = bcolz_store.ctable([np.arange(25), np.arange(25) * 0.5], names=["a", "b"],
                           chunklen=10, rootdir=str(root), mode="w", auto_flush=auto_flush)
    t.attrs["k"] = 1
    return t


def state(obj) -> dict:
    if isinstance(obj, bcolz_store.ctable):
        cols = {n: obj.cols[n][:].tolist() for n in obj.names}
        out = {"names": list(obj.names), "attrs": obj.attrs.getall(), "cols": cols}
        if obj.indexes:     # (verify() also builds every index segment again from the items)
            out["indexes"] = obj.indexes
        return out
    return {"data": obj[:].tolist(), "attrs": obj.attrs.getall(), "shape": list(obj.shape)}


def disk_state(root: Path) -> dict:
    return state(bcolz_store.open(str(root), mode="r"))


CARRAY_OPS = {
    "append many + flush": lambda c: (c.append(np.arange(100, 160)), c.flush()),
    "append small + flush": lambda c: (c.append([7, 8]), c.flush()),
    "pending then trim": lambda c: (c.append(np.arange(25)), c.trim(12)),
    "resize": lambda c: c.resize(70),
    "setitem": lambda c: c.__setitem__(slice(5, 25), -7),
    "setitem fancy": lambda c: c.__setitem__([1, 17, 33], -1),
    "attrs": lambda c: c.attrs.__setitem__("x", [1, 2]),
    "del attrs": lambda c: c.attrs.__delitem__("k"),
    "reshape": lambda c: c.reshape((7, 5)),
}

CTABLE_OPS = {
    "append rows": lambda t: t.append([np.arange(30), np.arange(30) * 1.0]),
    "addcol": lambda t: t.addcol(np.arange(len(t)) * 2, name="c"),
    "delcol": lambda t: t.delcol("b"),
    "trim": lambda t: t.trim(7),
    "resize": lambda t: t.resize(40),
    "setitem": lambda t: t.__setitem__(slice(0, 20), (1, 2.0)),
    "replace column": lambda t: t.cols.__setitem__("b", np.ones(len(t))),
    "attrs": lambda t: t.attrs.__setitem__("x", "y"),
    "column append": lambda t: (t.cols["a"].append(np.arange(3)),
                                t.cols["b"].append(np.arange(3.0)), t.flush()),
}


def extra_write(obj) -> None:
    """One more write after the failure, which must succeed."""
    if isinstance(obj, bcolz_store.ctable):
        obj.append([np.array([1000]), np.array([0.25])][:len(obj.names)]
                   if len(obj.names) == 2 else
                   [np.array([1000 + i]) for i in range(len(obj.names))])
        obj.flush()
    else:
        obj.append(np.full(obj.shape[1:] or (), 1000, dtype=obj.dtype))
        obj.flush()


# Every write position for one-off errors too (the long run).
ALL_POSITIONS = os.environ.get("BCOLZ_STORE_FAULTS") == "all"


def _run_positions(tmp_path, monkeypatch, make, op, err, sticky, name, stride=1, first=1,
                   state=state, extra_write=extra_write):
    def disk_state(root):
        return state(bcolz_store.open(str(root), mode="r"))

    ref = make(tmp_path / "ref")
    before = state(ref)
    op(ref)
    ref.flush()
    after = state(bcolz_store.open(str(tmp_path / "ref"), mode="r"))
    expected = []
    for label, base in (("before", tmp_path / "b0"), ("after", tmp_path / "b1")):
        obj = make(base)
        if label == "after":
            op(obj)
            obj.flush()
        obj = bcolz_store.open(str(base), mode="a")
        extra_write(obj)
        expected.append((label, state(bcolz_store.open(str(base), mode="r"))))
    hits = 0
    for fail_at in range(first, MAX_POSITIONS, stride):
        root = tmp_path / f"case{fail_at}"
        obj = make(root)
        with monkeypatch.context() as m:
            injector = Injector(m, root, fail_at, err, sticky)
            try:
                op(obj)
                obj.flush()
            except (OSError, BcolzStoreError) as exc:
                assert injector.hit, f"{name}: {exc!r} without an injected failure"
                if isinstance(exc, OSError) and not isinstance(exc, BcolzStoreError):
                    named = str(exc) + " " + str(exc.filename)
                    assert str(root) in named or os.path.realpath(root) in named, \
                        f"{name} write {fail_at}: the OSError names no file: {exc}"
        if not injector.hit:
            break
        hits += 1
        # the disk works again: the object is usable, never commits a mix
        try:
            obj.flush()
        except WriteFailedError:
            obj.refresh()
            obj.flush()
        now = disk_state(root)
        assert now in (before, after), f"{name}: write {fail_at} failed, flush left {now}"
        extra_write(obj)
        got = disk_state(root)
        assert got in [s for _, s in expected], \
            f"{name}: write {fail_at} failed; after flush and one more write: {got}"
        report = bcolz_store.verify(str(root))
        assert report.ok, f"{name}: write {fail_at}: {report.problems()}"
        assert state(bcolz_store.open(str(root), mode="a")) == got
        shutil.rmtree(root)
    assert hits > 1, f"{name}: no write position was exercised"
    return hits


@pytest.mark.parametrize("opname", sorted(CARRAY_OPS))
def test_carray_full_disk_at_every_write(tmp_path, monkeypatch, opname):
    _run_positions(tmp_path, monkeypatch, make_carray, CARRAY_OPS[opname], errno.ENOSPC,
                   True, opname)


@pytest.mark.parametrize("opname", sorted(CTABLE_OPS))
def test_ctable_full_disk_at_every_write(tmp_path, monkeypatch, opname):
    _run_positions(tmp_path, monkeypatch, make_ctable, CTABLE_OPS[opname], errno.ENOSPC,
                   True, opname)


def make_indexed(root: Path):
    t = make_ctable(root)
    t.create_index("a")
    t.create_index("b", kind="bitmap")
    return t


INDEXED_OPS = {
    "append rows": CTABLE_OPS["append rows"],
    "setitem": CTABLE_OPS["setitem"],
    "trim": CTABLE_OPS["trim"],
    "create_index": lambda t: t.create_index("b", kind="sorted"),
    "drop_index": lambda t: t.drop_index("a"),
}


@pytest.mark.parametrize("opname", sorted(INDEXED_OPS))
def test_indexed_ctable_full_disk_at_every_write(tmp_path, monkeypatch, opname):
    _run_positions(tmp_path, monkeypatch, make_indexed, INDEXED_OPS[opname], errno.ENOSPC,
                   True, opname)


@pytest.mark.parametrize("errname", ["EIO", "EACCES"])
@pytest.mark.parametrize("opname", ["append many + flush", "setitem", "reshape"])
def test_carray_one_failed_write(tmp_path, monkeypatch, opname, errname):
    _run_positions(tmp_path, monkeypatch, make_carray, CARRAY_OPS[opname], ERRORS[errname],
                   False, opname, **_one_off_positions(errname))


@pytest.mark.parametrize("errname", ["EIO", "EACCES"])
@pytest.mark.parametrize("opname", ["append rows", "addcol", "column append"])
def test_ctable_one_failed_write(tmp_path, monkeypatch, opname, errname):
    _run_positions(tmp_path, monkeypatch, make_ctable, CTABLE_OPS[opname], ERRORS[errname],
                   False, opname, **_one_off_positions(errname))


def _one_off_positions(errname: str) -> dict:
    if ALL_POSITIONS:
        return {}
    return {"stride": 3, "first": 1 if errname == "EIO" else 2}


def test_full_disk_during_pending_appends_then_flush(tmp_path, monkeypatch):
    """The audit's case: ENOSPC while a table without auto_flush takes appends, then a
    successful flush must commit equal-length columns (or nothing new)."""
    for fail_at in range(1, 60):
        root = tmp_path / f"t{fail_at}"
        t = make_ctable(root, auto_flush=False)
        before = state(t)
        with monkeypatch.context() as m:
            injector = Injector(m, root, fail_at, errno.ENOSPC, True)
            try:
                for _ in range(40):
                    t.append([np.arange(25), np.arange(25) * 0.5])
            except OSError:
                pass
        if not injector.hit:
            break
        t.flush()
        reopened = bcolz_store.open(str(root), mode="a")
        lengths = {len(reopened.cols[n]) for n in reopened.names}
        assert len(lengths) == 1, f"write {fail_at}: columns of lengths {lengths}"
        assert disk_state(root) == before
        assert bcolz_store.verify(str(root)).ok


def test_carray_write_error_names_the_file(tmp_path, monkeypatch):
    root = tmp_path / "a"
    c = make_carray(root)
    with monkeypatch.context() as m:
        Injector(m, root, 1, errno.ENOSPC, True)
        with pytest.raises(OSError) as info:
            c.append(np.arange(1000))
            c.flush()
    assert "data/__" in str(info.value) or "meta/" in str(info.value) or \
        "bcolz_store.md5" in str(info.value), str(info.value)
    assert str(root) in str(info.value)


def test_refresh_after_a_broken_journal(tmp_path, monkeypatch):
    """When even reloading fails, writes refuse until refresh() succeeds."""
    root = tmp_path / "a"
    c = make_carray(root)
    owner = c.dataset.journal.owner
    calls = []

    def failing_reload():
        calls.append(1)
        raise OSError(errno.EIO, "I/O error", str(root / "meta" / "sizes"))

    c.dataset.attach(dataclasses.replace(owner, reload=failing_reload))
    with monkeypatch.context() as m:
        Injector(m, root, 1, errno.ENOSPC, True)
        with pytest.raises(OSError):
            c.append(np.arange(100))
            c.flush()
    assert calls
    with pytest.raises(WriteFailedError, match="refresh"):
        c.append(np.arange(10))
    with pytest.raises(WriteFailedError):
        c.flush()
    c.dataset.attach(owner)
    c.refresh()
    c.append(np.arange(3))
    c.flush()
    assert bcolz_store.open(str(root))[:].tolist() == list(range(35)) + [0, 1, 2]


# --- the column kinds --------------------------------------------------------------------

def _kinds_source():
    """A pyarrow Table of 60 rows: text, categorical, nullable int, decimal,
    list, struct, map and fixed-size binary columns, nulls among them."""
    import decimal
    pa = pytest.importorskip("pyarrow")
    n = 60
    return pa.table({
        "s": pa.array([None if i % 7 == 3 else "w%d" % i * (i % 4) for i in range(n)]),
        "c": pa.array([None if i % 5 == 1 else "sym%d" % (i % 6) for i in range(n)])
        .dictionary_encode(),
        "n": pa.array([None if i % 4 == 2 else i - 30 for i in range(n)], pa.int64()),
        "d": pa.array([None if i % 6 == 5 else decimal.Decimal(i).scaleb(-2) for i in range(n)],
                      pa.decimal128(9, 2)),
        "l": pa.array([None if i % 8 == 7 else list(range(i % 4)) for i in range(n)],
                      pa.list_(pa.int32())),
        "st": pa.array([None if i % 9 == 4 else {"a": i, "b": str(i)} for i in range(n)],
                       pa.struct([("a", pa.int32()), ("b", pa.string())])),
        "m": pa.array([None if i % 10 == 6 else [("k%d" % i, i)] for i in range(n)],
                      pa.map_(pa.string(), pa.int64())),
        "fb": pa.array([None if i % 11 == 8 else i.to_bytes(4, "little") for i in range(n)],
                       pa.binary(4)),
    })


def make_kinds(root: Path):
    t = bcolz_store.ctable(_kinds_source().slice(0, 40), chunklen=8, rootdir=str(root),
                           mode="w")
    t.attrs["k"] = 1
    return t


def kinds_state(obj) -> dict:
    """What a ctable of the kinds holds, as Python values (pyarrow's rows)."""
    import pyarrow as pa
    return {"names": list(obj.names), "attrs": obj.attrs.getall(),
            "rows": pa.table(obj).to_pylist()}


def kinds_extra_write(obj) -> None:
    obj.append(_kinds_source().slice(59, 1))
    obj.flush()


KINDS_OPS = {
    "append rows": lambda t: (t.append(_kinds_source().slice(40, 15)), t.flush()),
    "trim": lambda t: t.trim(9),
    "resize": lambda t: t.resize(45),
    "delcol": lambda t: t.delcol("st"),
}


@pytest.mark.parametrize("opname", sorted(KINDS_OPS))
def test_kinds_ctable_full_disk_at_every_write(tmp_path, monkeypatch, opname):
    """The column kinds keep the same promise: a full disk at a write of an
    operation leaves the committed state before or after it (every ninth write
    position, each op a different ninth; every one with ``BCOLZ_STORE_FAULTS=all``:
    eight columns of their own files make hundreds of positions)."""
    first = 1 + sorted(KINDS_OPS).index(opname) % 9
    _run_positions(tmp_path, monkeypatch, make_kinds, KINDS_OPS[opname], errno.ENOSPC, True,
                   opname, stride=1 if ALL_POSITIONS else 9, first=1 if ALL_POSITIONS else first,
                   state=kinds_state, extra_write=kinds_extra_write)
