"""The contract every :class:`~bcolz_store.storage.base.Store` keeps.

A backend proves itself by inheriting :class:`StoreTests` in its own test
module and supplying a ``store`` fixture: an empty store it may write to (or,
for a read-only backend, anything :meth:`StoreTests.fill` needs to build one)::

    import pytest
    from bcolz_store.testing.store import StoreTests

    class TestMyStore(StoreTests):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path / "root")

The inherited tests then check it: what is put is got back, missing keys and
oversized objects are told apart, byte ranges (``get_range``, ``get_ranges``)
read what they should, across the end of an object too, and refuse what
``get`` refuses, conditional ranged reads (``get_ranges_if_md5``) answer
the ranges of the content they name or None, never bytes of another,
listings are sorted, recursive and skip the store's own files, conditional
writes (``put_if_absent``, ``replace_if``, ``delete_if``)
act only when they should, the commit lock excludes a second holder, and
hostile keys (``..``, absolute paths, empty components, NUL) are refused by
every method.

This module imports pytest; ``import bcolz_store`` never imports it.
"""

from __future__ import annotations

import pytest

from ..errors import (ConcurrentWriteError, DatasetNotFoundError, FormatError,
                      LockTimeoutError, ReadOnlyError)
from ..storage.base import Store

__all__ = ["HOSTILE_KEYS", "StoreTests"]

#: Keys that could leave a store's root, or that name nothing: every method
#: taking a key must refuse them with :class:`~bcolz_store.errors.FormatError`.
HOSTILE_KEYS = ["../x", "a/../../x", "/etc/passwd", "", "a//b", "./a", "a/./b", "a/..",
                "a\\..\\b", "a\0b"]


class StoreTests:
    """The tests every store passes; a subclass supplies the ``store`` fixture.

    Attributes
    ----------
    writable : bool, default True
        The store accepts writes.  A read-only backend (a zip pack) sets it
        to False and overrides :meth:`fill`; the tests of writing then skip,
        and those of reading run on the stores :meth:`fill` builds.

    Notes
    -----
    Each test asks for ``store``, a pytest fixture the subclass defines; it
    gives an empty store (writable stores) or whatever the subclass's
    :meth:`fill` needs.  A backend's own tests (symlinks of a local folder,
    a pack's compressed entries) go in the subclass beside the fixture.
    """

    writable = True

    def fill(self, store: Store, objects: dict) -> Store:
        """A store holding ``objects``.

        Parameters
        ----------
        store : Store
            What the ``store`` fixture gave.
        objects : dict
            ``{key: bytes}``.

        Returns
        -------
        Store
            A store holding exactly ``objects`` (writable stores: ``store``
            itself, after putting them; read-only ones build a new store).
        """
        for key, data in objects.items():
            store.makedirs(key.rpartition("/")[0])
            store.put(key, data)
        return store

    # --- reading

    def test_get_returns_what_was_put(self, store):
        s = self.fill(store, {"meta/sizes": b"{}\n", "data/__0.blp": b"x" * 1000})
        assert s.get("meta/sizes", 100) == b"{}\n"
        assert s.get("data/__0.blp", 1000) == b"x" * 1000

    def test_get_missing_key(self, store):
        s = self.fill(store, {"a": b"1"})
        with pytest.raises(DatasetNotFoundError):
            s.get("meta/sizes", 100)
        assert not s.exists("meta/sizes")
        assert s.size("meta/sizes") is None
        assert s.identity("meta/sizes") is None

    def test_get_refuses_more_than_the_limit(self, store):
        s = self.fill(store, {"big": b"x" * 101})
        with pytest.raises(FormatError, match="big"):
            s.get("big", 100)
        assert s.get("big", 101) == b"x" * 101

    def test_get_many_returns_errors_in_place(self, store):
        s = self.fill(store, {"a": b"1", "b/c": b"22"})
        got = s.get_many(["a", "b/c", "missing"], 10)
        assert got["a"] == b"1" and got["b/c"] == b"22"
        assert isinstance(got["missing"], DatasetNotFoundError)

    def test_exists_size_identity(self, store):
        s = self.fill(store, {"x/y": b"abc"})
        assert s.exists("x/y") and s.size("x/y") == 3
        assert s.identity("x/y") is not None

    def test_list_is_sorted_recursive_and_skips_own_files(self, store):
        objects = {"b": b"1", "a/meta/sizes": b"2", "a/data/__0.blp": b"3",
                   "bcolz_store.md5": b"4", ".bcolz_store-journal/x/000001.blob": b"5",
                   "bcolz_store.json": b"6"}
        s = self.fill(store, objects)
        assert s.list("") == ["a/data/__0.blp", "a/meta/sizes", "b"]
        assert s.list("a/") == ["a/data/__0.blp", "a/meta/sizes"]
        assert s.list("zzz/") == []
        assert ".bcolz_store-journal/x/000001.blob" in s.list_times(".bcolz_store-journal/")

    def test_root_state(self, store):
        s = self.fill(store, {"meta/sizes": b"{}"})
        assert s.root_state() == "folder"

    def test_child_sees_the_keys_below_its_prefix(self, store):
        s = self.fill(store, {"col/meta/sizes": b"1", "col/data/__0.blp": b"2", "other": b"3"})
        child = s.child("col")
        assert child.get("meta/sizes", 10) == b"1"
        assert child.list("") == ["data/__0.blp", "meta/sizes"]

    @pytest.mark.parametrize("key", HOSTILE_KEYS)
    def test_hostile_keys_are_refused_for_reading(self, store, key):
        s = self.fill(store, {"a": b"1"})
        for call in (lambda: s.get(key, 10), lambda: s.exists(key), lambda: s.size(key)):
            with pytest.raises(FormatError):
                call()

    # --- ranged reads

    def test_get_range_inside_and_across_the_end(self, store):
        data = bytes(range(256)) * 4
        s = self.fill(store, {"data/__0.blp": data})
        assert s.get_range("data/__0.blp", 0, 16) == data[:16]
        assert s.get_range("data/__0.blp", 100, 300) == data[100:300]
        assert s.get_range("data/__0.blp", 1000, 2000) == data[1000:]     # past the end
        assert s.get_range("data/__0.blp", 0, 1 << 40) == data
        assert s.get_range("data/__0.blp", 1023, 1024) == data[1023:]
        assert isinstance(s.get_range("data/__0.blp", 5, 9), bytes)

    def test_get_range_empty(self, store):
        s = self.fill(store, {"k": b"0123456789", "empty": b""})
        assert s.get_range("k", 3, 3) == b""
        assert s.get_range("k", 10, 20) == b""          # starts at the end
        assert s.get_range("k", 50, 60) == b""          # starts past it
        assert s.get_range("empty", 0, 10) == b""
        assert s.get_range("empty", 0, 0) == b""
        assert s.get_ranges("k", []) == []

    def test_get_range_missing_key(self, store):
        s = self.fill(store, {"a": b"1"})
        for call in (lambda: s.get_range("data/__0.blp", 0, 10),
                     lambda: s.get_range("data/__0.blp", 0, 0),
                     lambda: s.get_ranges("data/__0.blp", [(0, 4), (200_000, 200_010)])):
            with pytest.raises(DatasetNotFoundError):
                call()

    @pytest.mark.parametrize("start, stop", [(-1, 4), (0, -1), (5, 4), (1.0, 4), (0, "4"),
                                             (None, 4), (True, 4)])
    def test_get_range_bad_arguments(self, store, start, stop):
        s = self.fill(store, {"k": b"0123456789"})
        with pytest.raises(ValueError):
            s.get_range("k", start, stop)
        with pytest.raises(ValueError):
            s.get_ranges("k", [(0, 2), (start, stop)])

    @pytest.mark.parametrize("ranges", [None, 5, "ab", [(0, 1, 2)], [0, 1], [(0,)]])
    def test_get_ranges_bad_arguments(self, store, ranges):
        s = self.fill(store, {"k": b"0123456789"})
        with pytest.raises(ValueError):
            s.get_ranges("k", ranges)

    def test_get_range_accepts_numpy_integers(self, store):
        np = pytest.importorskip("numpy")
        s = self.fill(store, {"k": b"0123456789"})
        assert s.get_range("k", np.int64(2), np.uint32(5)) == b"234"

    def test_get_range_refuses_a_folder_as_get_does(self, store):
        s = self.fill(store, {"data/__0.blp": b"x" * 10})
        with pytest.raises((DatasetNotFoundError, FormatError)) as whole:
            s.get("data", 100)
        with pytest.raises(type(whole.value)):
            s.get_range("data", 0, 10)
        with pytest.raises(type(whole.value)):
            s.get_ranges("data", [(0, 2), (4, 6)])

    def test_get_ranges_near_far_overlapping_in_any_order(self, store):
        data = bytes(range(256)) * 1024               # 256 KiB: ranges far apart too
        s = self.fill(store, {"data/__0.blp": data})
        ranges = [(200_000, 200_100), (0, 32), (40, 48), (30, 44), (100_000, 100_000),
                  (262_000, 300_000), (300_000, 300_010), (48, 48)]
        got = s.get_ranges("data/__0.blp", ranges)
        assert got == [data[a:b] for a, b in ranges]
        assert s.get_ranges("data/__0.blp", iter([(5, 6)])) == [data[5:6]]

    def test_child_reads_ranges_below_its_prefix(self, store):
        s = self.fill(store, {"col/data/__0.blp": b"0123456789", "other": b"x"})
        child = s.child("col")
        assert child.get_range("data/__0.blp", 2, 4) == b"23"
        assert child.get_ranges("data/__0.blp", [(0, 1), (9, 12)]) == [b"0", b"9"]
        with pytest.raises(DatasetNotFoundError):
            child.get_range("other", 0, 1)

    @pytest.mark.parametrize("key", HOSTILE_KEYS)
    def test_hostile_keys_are_refused_for_ranged_reads(self, store, key):
        s = self.fill(store, {"a": b"1"})
        for call in (lambda: s.get_range(key, 0, 1), lambda: s.get_ranges(key, [(0, 1)]),
                     lambda: s.get_ranges(key, [])):
            with pytest.raises(FormatError):
                call()

    def test_get_ranges_if_md5_reads_only_the_content_it_names(self, store):
        import hashlib
        data = bytes(range(256)) * 1024               # 256 KiB: ranges far apart too
        s = self.fill(store, {"data/__0.blp": data, "k": b"0123456789"})
        md5 = hashlib.md5(data).hexdigest()
        ranges = [(200_000, 200_100), (0, 32), (40, 48), (30, 44), (262_000, 300_000),
                  (48, 48)]
        got = s.get_ranges_if_md5("data/__0.blp", ranges, md5)
        assert got is None or got == [data[a:b] for a, b in ranges]
        got = s.get_ranges_if_md5("data/__0.blp", iter([(5, 6)]), md5)
        assert got is None or got == [data[5:6]]
        assert s.get_ranges_if_md5("data/__0.blp", [], md5) in (None, [])
        got = s.get_ranges_if_md5("k", [(2, 4), (8, 20)], hashlib.md5(b"0123456789").hexdigest())
        assert got is None or got == [b"23", b"89"]
        for other in (hashlib.md5(data + b"x").hexdigest(), "0" * 32, "not an md5", "",
                      md5.upper()):
            assert s.get_ranges_if_md5("data/__0.blp", [(0, 32), (200_000, 200_100)],
                                       other) is None
        child = s.child("data")
        got = child.get_ranges_if_md5("__0.blp", [(7, 9)], md5)
        assert got is None or got == [data[7:9]]
        assert child.get_ranges_if_md5("__0.blp", [(7, 9)], "0" * 32) is None

    def test_get_ranges_if_md5_after_a_replacement(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        import hashlib
        s = self.fill(store, {"data/__0.blp": b"old content"})
        old = hashlib.md5(b"old content").hexdigest()
        s.put("data/__0.blp", b"new content")
        assert s.get_ranges_if_md5("data/__0.blp", [(0, 3)], old) is None
        got = s.get_ranges_if_md5("data/__0.blp", [(0, 3)],
                                  hashlib.md5(b"new content").hexdigest())
        assert got is None or got == [b"new"]

    def test_get_ranges_if_md5_missing_key_and_bad_arguments(self, store):
        import hashlib
        s = self.fill(store, {"k": b"0123456789"})
        md5 = hashlib.md5(b"0123456789").hexdigest()
        try:
            assert s.get_ranges_if_md5("data/__0.blp", [(0, 4)], md5) is None
        except DatasetNotFoundError:
            pass
        for ranges in (None, 5, "ab", [(0, 1, 2)], [(-1, 4)], [(5, 4)], [(0, 2), (1.0, 4)]):
            with pytest.raises(ValueError):
                s.get_ranges_if_md5("k", ranges, md5)

    @pytest.mark.parametrize("key", HOSTILE_KEYS)
    def test_hostile_keys_are_refused_for_conditional_ranged_reads(self, store, key):
        s = self.fill(store, {"a": b"1"})
        for ranges in ([(0, 1)], []):
            with pytest.raises(FormatError):
                s.get_ranges_if_md5(key, ranges, "0" * 32)

    # --- writing

    def test_put_replaces_and_identity_changes(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"k": b"one"})
        before = s.identity("k")
        s.put("k", [b"tw", b"o!"])
        assert s.get("k", 10) == b"two!"
        assert s.identity("k") != before

    def test_put_and_sync_writes_every_part_and_tells_when_durable(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"k": b"one"})
        parts = [b"head", memoryview(bytes(range(256)) * 300), b"", b"tail"]
        s.put_and_sync("k", parts).result(timeout=60)
        assert s.get("k", 1 << 20) == b"".join(bytes(p) for p in parts)

    def test_put_if_absent_refuses_an_existing_key(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {})
        s.makedirs("j")
        s.put_if_absent("j/commit-1.json", b"[]")
        with pytest.raises(ConcurrentWriteError):
            s.put_if_absent("j/commit-1.json", b"[1]")
        assert s.get("j/commit-1.json", 10) == b"[]"

    def test_delete_and_delete_prefix(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"a/1": b"1", "a/2": b"2", "b": b"3"})
        s.delete("b")
        s.delete("b")                    # deleting what is gone is fine
        assert not s.exists("b")
        s.delete_prefix("a/")
        assert s.list("") == []

    def test_move(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"j/1.blob": b"payload", "data/__0.blp": b"old"})
        s.move("j/1.blob", "data/__0.blp")
        assert s.get("data/__0.blp", 100) == b"payload"
        assert not s.exists("j/1.blob")
        with pytest.raises(DatasetNotFoundError):
            s.move("j/1.blob", "data/__0.blp")       # moved already
        s.move("data/__0.blp", "new/folder/x")
        assert s.get("new/folder/x", 100) == b"payload"

    def test_copy(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"j/1.blob": b"payload", "data/__0.blp": b"old"})
        s.copy("j/1.blob", "data/__0.blp")
        assert s.get("data/__0.blp", 100) == b"payload"
        assert s.get("j/1.blob", 100) == b"payload"
        with pytest.raises(DatasetNotFoundError):
            s.copy("j/2.blob", "data/__1.blp")
        assert not s.exists("data/__1.blp")

    def test_delete_if_and_replace_if_act_only_on_the_expected_content(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"j/lock": b"one"})
        assert not s.replace_if("j/lock", b"two", b"zzz")
        assert s.get("j/lock", 10) == b"one"
        assert s.replace_if("j/lock", b"two", b"one")
        assert s.get("j/lock", 10) == b"two"
        assert not s.delete_if("j/lock", b"one")
        assert s.exists("j/lock")
        assert s.delete_if("j/lock", b"two")
        assert not s.exists("j/lock")
        assert not s.delete_if("j/lock", b"two")            # gone: nothing to remove
        assert not s.replace_if("j/lock", b"three", b"two")
        assert not s.exists("j/lock")

    def test_commit_lock_excludes_a_second_holder_until_released(self, store):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"a": b"1"})
        first = s.commit_lock(".bcolz_store-journal/commit.lock", 30.0)
        second = s.commit_lock(".bcolz_store-journal/commit.lock", 30.0)
        with first.hold(1.0):
            with first.hold(1.0):               # the holder takes it again
                first.confirm()
            assert first.held
            with pytest.raises(LockTimeoutError, match="commit lock"):
                with second.hold(0.3):
                    pass
            first.confirm()
        assert not first.held
        with second.hold(1.0):
            second.confirm()
        assert s.get("a", 10) == b"1"

    @pytest.mark.parametrize("key", HOSTILE_KEYS)
    def test_hostile_keys_are_refused_for_writing(self, store, key):
        if not self.writable:
            pytest.skip("read-only store")
        s = self.fill(store, {"a": b"1"})
        for call in (lambda: s.put(key, b"x"), lambda: s.delete(key),
                     lambda: s.move("a", key), lambda: s.put_if_absent(key, b"x")):
            with pytest.raises(FormatError):
                call()
        assert s.get("a", 10) == b"1"

    def test_read_only_store_refuses_writes(self, store):
        s = self.fill(store, {"a": b"1"})
        s.readonly = True
        for call in (lambda: s.put("b", b"x"), lambda: s.delete("a"),
                     lambda: s.put_if_absent("c", b"x"), lambda: s.delete_prefix(""),
                     lambda: s.put_and_sync("b", b"x")):
            with pytest.raises(ReadOnlyError):
                call()
        assert s.get("a", 10) == b"1"
