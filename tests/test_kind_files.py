"""The registries the core finds a carray's kind by: every stored carray (each
dataset bcolz_store 0.1.0 wrote, every part folder of it too) is claimed by
at most one kind's files (datasets/carray_files.KIND_FILES) and its
``meta/storage`` by at most one kind's entry (format/meta.STORAGE_KINDS); its
metadata and engine are that kind's, and staging its ``meta/storage`` again
gives the stored bytes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bcolz_store  # noqa: F401  (registers the kinds)
from bcolz_store.datasets.carray_files import (KIND_FILES, files_of_meta, load_carray,
                                               new_engine, stage_storage)
from bcolz_store.format.meta import STORAGE_KINDS, load_storage
from bcolz_store.storage.dataset import DatasetStore
from bcolz_store.storage.urls import open_store

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "bcolz_store-0.1.0"
MANIFEST = FIXTURES / "manifest.json"
NAMES = sorted(json.loads(MANIFEST.read_text())["datasets"]) if MANIFEST.exists() else []


def _carrays(root: Path) -> list:
    """Every carray folder under ``root`` (it included)."""
    return sorted(p.parent.parent for p in root.rglob("meta/storage"))


class _Staged:
    """Where :func:`stage_storage` writes: the bytes it stages, by key."""

    def __init__(self, root):
        self.root, self.files = str(root), {}

    def set(self, key, data):
        self.files[key] = bytes(data)


def test_each_kind_registers_its_files_and_entries():
    assert len({id(k) for k in KIND_FILES}) == len(KIND_FILES) >= 8
    assert {k.key for k in STORAGE_KINDS} == {"vlen", "categorical", "nullable", "list"}
    assert sum(1 for k in STORAGE_KINDS if k.plain) == 1


@pytest.mark.skipif(not NAMES, reason=f"no fixtures at {FIXTURES}")
@pytest.mark.parametrize("name", NAMES)
def test_a_stored_carray_is_of_one_kind_and_stages_its_storage_again(name):
    folders = _carrays(FIXTURES / name)
    assert folders
    for folder in folders:
        store = DatasetStore(open_store(str(folder), readonly=True), readonly=True)
        data = store.get("meta/storage")
        by_data = [k for k in KIND_FILES if k.of_data(data)]
        assert len(by_data) <= 1, folder
        by_storage = []
        if not by_data:
            storage = load_storage(data, str(folder))
            by_storage = [k for k in KIND_FILES if k.of_storage(storage)]
            assert len(by_storage) <= 1, folder
            assert (storage.kind is None) == (storage.entry is None), folder
        meta = load_carray(store)
        kinds = [k for k in KIND_FILES if k.of_meta(meta)]
        assert len(kinds) <= 1, folder
        claimed = by_data or by_storage
        assert kinds == claimed, folder
        assert files_of_meta(meta) is (kinds[0] if kinds else None)
        engine = new_engine(meta, store, cache_budget=0)
        assert [k for k in KIND_FILES if k.of_engine(engine)] in ([], kinds), folder
        staged = _Staged(folder)
        stage_storage(staged, meta)
        assert staged.files["meta/storage"] == bytes(data), folder
