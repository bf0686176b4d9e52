"""Every store of the package keeps the Store contract.

The contract is :class:`bcolz_store.testing.store.StoreTests`; each backend's
class below inherits it and provides a ``store`` fixture (an empty, writable
store) and, for read-only backends, ``fill`` to build one holding given
objects.  Two checks keep the contract honest: every concrete store of
``bcolz_store/storage/`` has a class here (or elsewhere under ``tests/``)
inheriting it, and the contract fails on a store that breaks it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import pkgutil
import zipfile
from pathlib import Path

import pytest

import bcolz_store.storage
from bcolz_store.errors import FormatError
from bcolz_store.storage.base import PrefixStore, Store
from bcolz_store.storage.local import LocalStore
from bcolz_store.storage.memory import MemoryStore
from bcolz_store.storage.zip import ZipStore
from bcolz_store.testing.store import StoreTests

TESTS = Path(__file__).resolve().parent.parent


class TestLocalStore(StoreTests):

    @pytest.fixture
    def store(self, tmp_path):
        return LocalStore(tmp_path / "root")

    def test_symlink_leading_outside_is_refused(self, tmp_path):
        s = self.fill(LocalStore(tmp_path / "root"), {"meta/sizes": b"{}"})
        (tmp_path / "secret").write_bytes(b"secret")
        os.symlink(tmp_path / "secret", tmp_path / "root" / "meta" / "storage")
        with pytest.raises(FormatError, match="outside"):
            s.get("meta/storage", 100)
        os.symlink(tmp_path, tmp_path / "root" / "data")
        with pytest.raises(FormatError, match="outside"):
            s.get("data/secret", 100)
        with pytest.raises(FormatError, match="symlink"):
            s.check_targets(["data/__0.blp"])
        with pytest.raises(FormatError, match="symlink"):
            s.list("")

    def test_fifo_and_device_are_refused(self, tmp_path):
        s = self.fill(LocalStore(tmp_path / "root"), {"a": b"1"})
        os.mkfifo(tmp_path / "root" / "fifo")
        with pytest.raises(FormatError, match="FIFO"):
            s.get("fifo", 100)
        os.symlink("/dev/zero", tmp_path / "root" / "zero")
        with pytest.raises(FormatError):
            s.get("zero", 100)

    def test_ranged_reads_open_files_as_get_does(self, tmp_path):
        s = self.fill(LocalStore(tmp_path / "root"), {"meta/sizes": b"{}", "a": b"0123"})
        (tmp_path / "secret").write_bytes(b"secret")
        os.symlink(tmp_path / "secret", tmp_path / "root" / "meta" / "storage")
        os.symlink("a", tmp_path / "root" / "inside")
        os.mkfifo(tmp_path / "root" / "fifo")
        for call in (lambda k: s.get_range(k, 0, 4), lambda k: s.get_ranges(k, [(0, 2)])):
            with pytest.raises(FormatError, match="outside"):
                call("meta/storage")
            with pytest.raises(FormatError, match="FIFO"):
                call("fifo")                             # refused, never blocks
            with pytest.raises(FormatError, match="directory"):
                call("meta")
        assert s.get_range("inside", 1, 3) == b"12"      # a symlink that stays inside
        os.symlink(tmp_path, tmp_path / "root" / "data")
        with pytest.raises(FormatError, match="outside"):
            s.get_range("data/secret", 0, 4)

    def test_folder_key_that_is_a_symlink(self, tmp_path):
        s = LocalStore(tmp_path / "root")
        (tmp_path / "root").mkdir()
        os.symlink(tmp_path, tmp_path / "root" / ".bcolz_store-journal")
        with pytest.raises(FormatError, match="symlink"):
            s.check_folder(".bcolz_store-journal/")


class TestMemoryStore(StoreTests):

    @pytest.fixture
    def store(self):
        return MemoryStore()


class TestPrefixStore(StoreTests):

    @pytest.fixture
    def store(self):
        base = MemoryStore()
        base.put("outside", b"not yours")
        return PrefixStore(base, "inner/dataset")

    def test_prefix_store_cannot_reach_outside_keys(self, store):
        with pytest.raises(FormatError):
            store.get("../../outside", 100)
        assert store.list("") == []


class TestFsspecMemoryStore(StoreTests):

    @pytest.fixture
    def store(self, request):
        pytest.importorskip("fsspec")
        from bcolz_store.storage.fsspec import FsspecStore
        import fsspec
        name = f"/contract-{request.node.name}"
        fsspec.filesystem("memory").rm(name, recursive=True) if \
            fsspec.filesystem("memory").exists(name) else None
        return FsspecStore(f"memory://{name}")


class TestS3Store(StoreTests):

    @pytest.fixture
    def store(self, s3_bucket):
        from bcolz_store.storage.fsspec import FsspecStore
        url, options = s3_bucket
        return FsspecStore(f"{url}/dataset.bcolz", storage_options=options)


class TestZipStore(StoreTests):
    """A pack is read-only: it is built from the objects, then read."""

    writable = False

    @pytest.fixture
    def store(self, tmp_path):
        self._path = tmp_path / "pack.zip"
        return None

    def fill(self, store, objects):
        with zipfile.ZipFile(self._path, "w", compression=zipfile.ZIP_STORED) as zf:
            for key, data in objects.items():
                zf.writestr(key, data)
        return ZipStore(self._path)

    def test_compressed_entries_are_refused(self, tmp_path):
        path = tmp_path / "bomb.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("meta/sizes", b"0" * 100000)
        with pytest.raises(FormatError, match="compressed"):
            ZipStore(path).get("meta/sizes", 1 << 20)

    def test_ranged_reads_refuse_compressed_entries_and_check_the_crc(self, tmp_path):
        path = tmp_path / "bomb.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("meta/sizes", b"0" * 100000)
        with pytest.raises(FormatError, match="compressed"):
            ZipStore(path).get_range("meta/sizes", 0, 10)
        path = tmp_path / "bad.zip"
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr("data/__0.blp", b"A" * 64)
        raw = path.read_bytes()
        path.write_bytes(raw.replace(b"A" * 64, b"A" * 63 + b"B", 1))
        with pytest.raises(FormatError, match="data/__0.blp"):
            ZipStore(path).get_range("data/__0.blp", 0, 4)

    def test_entries_leaving_the_pack_are_refused(self, tmp_path):
        path = tmp_path / "evil.zip"
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("../evil", b"x")
        with pytest.raises(FormatError, match="could leave"):
            ZipStore(path)

    def test_not_a_zip(self, tmp_path):
        path = tmp_path / "x.zip"
        path.write_bytes(b"not a zip")
        with pytest.raises(FormatError):
            ZipStore(path)


# ------------------------------------------------------------ the contract kept honest

def _base_name(node) -> str:
    return node.id if isinstance(node, ast.Name) else getattr(node, "attr", "")


def contract_classes(contract: str, root: Path = TESTS) -> dict:
    """``{"file::class": names its body refers to}`` for every class in the
    Python files under ``root`` that inherits ``contract`` (directly, or
    through another such class of the same file)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if contract not in text:
            continue
        classes = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ClassDef)]
        heirs, grew = {contract}, True
        while grew:
            grew = False
            for node in classes:
                if node.name not in heirs and any(_base_name(b) in heirs for b in node.bases):
                    heirs.add(node.name)
                    grew = True
        for node in classes:
            if node.name in heirs - {contract}:
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
                found[f"{path.relative_to(root)}::{node.name}"] = names
    return found


def package_classes(package, keep) -> dict:
    """``{name: class}`` of the public classes defined in the modules of
    ``package`` for which ``keep(class)`` is true."""
    out = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for name, value in vars(module).items():
            if inspect.isclass(value) and value.__module__ == module.__name__ \
                    and not name.startswith("_") and keep(value):
                out[name] = value
    return out


def test_contract_classes_finds_heirs_and_what_they_name(tmp_path):
    (tmp_path / "test_a.py").write_text(
        "class TestA(StoreTests):\n    def store(self):\n        return AStore()\n"
        "class TestB(TestA):\n    pass\n"
        "class TestC:\n    x = CStore()\n")
    (tmp_path / "test_d.py").write_text("class TestD(m.StoreTests):\n    s = DStore\n")
    found = contract_classes("StoreTests", tmp_path)
    assert set(found) == {"test_a.py::TestA", "test_a.py::TestB", "test_d.py::TestD"}
    assert "AStore" in found["test_a.py::TestA"] and "DStore" in found["test_d.py::TestD"]
    assert "CStore" not in set().union(*found.values())


def test_every_store_has_a_contract_class():
    stores = package_classes(bcolz_store.storage,
                             lambda c: issubclass(c, Store) and not inspect.isabstract(c))
    assert {"LocalStore", "MemoryStore", "PrefixStore", "ZipStore"} <= set(stores)
    named = set().union(*contract_classes("StoreTests").values())
    missing = sorted(set(stores) - named)
    assert not missing, (f"no test class inheriting bcolz_store.testing.store.StoreTests "
                         f"uses {missing}")


class _OverwritingStore(MemoryStore):
    """put_if_absent replaces what is there."""

    def put_if_absent(self, key, data):
        self.put(key, data)


class _LimitlessStore(MemoryStore):
    """get ignores its limit."""

    def get(self, key, limit):
        return super().get(key, 1 << 62)


class _UncheckedRangeStore(MemoryStore):
    """get_range slices with whatever it is given (a negative start counts
    from the end)."""

    def get_range(self, key, start, stop):
        return self.get(key, 1 << 62)[start:stop]


class _RangeToTheEndStore(MemoryStore):
    """get_range ignores stop."""

    def get_range(self, key, start, stop):
        return super().get_range(key, start, 1 << 62)


@pytest.mark.parametrize("broken, test", [
    (_OverwritingStore, StoreTests.test_put_if_absent_refuses_an_existing_key),
    (_LimitlessStore, StoreTests.test_get_refuses_more_than_the_limit),
    (_UncheckedRangeStore, lambda contract, store:
     StoreTests.test_get_range_bad_arguments(contract, store, -1, 4)),
])
def test_the_contract_fails_a_store_that_breaks_it(broken, test):
    contract = TestMemoryStore()
    test(contract, MemoryStore())                    # a sound store passes
    with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
        test(contract, broken())


def test_the_contract_fails_a_store_whose_ranges_run_past_their_stop():
    contract = TestMemoryStore()
    StoreTests.test_get_range_inside_and_across_the_end(contract, MemoryStore())
    with pytest.raises(AssertionError):
        StoreTests.test_get_range_inside_and_across_the_end(contract, _RangeToTheEndStore())


class _UnconditionalStore(MemoryStore):
    """get_ranges_if_md5 reads the ranges whatever the md5."""

    def get_ranges_if_md5(self, key, ranges, md5):
        return self.get_ranges(key, ranges)


def test_the_contract_fails_a_store_whose_conditional_reads_ignore_the_md5():
    contract = TestMemoryStore()
    for test in (StoreTests.test_get_ranges_if_md5_reads_only_the_content_it_names,
                 StoreTests.test_get_ranges_if_md5_after_a_replacement):
        test(contract, MemoryStore())
        with pytest.raises(AssertionError):
            test(contract, _UnconditionalStore())
