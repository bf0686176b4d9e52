"""Every dataset bcolz_store 0.1.0 wrote (../shared/fixtures/bcolz_store-0.1.0, one of
each column kind and a table of all of them) reads back exactly as it must,
whatever layout versions this version writes.

The fixtures are never edited or regenerated (their PROVENANCE.md says how
they were made); each ``NAME.expected.arrow`` holds what ``NAME`` must read
back as, compared by value with dictionaries decoded.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import bcolz_store
from bcolz_store.testing.kinds import arrow_equal

pa = pytest.importorskip("pyarrow")

FIXTURES = Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "bcolz_store-0.1.0"
MANIFEST = FIXTURES / "manifest.json"
NAMES = sorted(json.loads(MANIFEST.read_text())["datasets"]) if MANIFEST.exists() else []

pytestmark = pytest.mark.skipif(not NAMES, reason=f"no fixtures at {FIXTURES}")


def _expected(name):
    with pa.ipc.open_file(str(FIXTURES / f"{name}.expected.arrow")) as reader:
        return reader.read_all()


def _copy(name, tmp_path) -> str:
    """A copy of the fixture (opening may take the commit lock or finish a commit)."""
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    return str(dest)


def test_the_manifest_names_every_kind():
    kinds = {name.split("_", 1)[1] for name in NAMES if name.startswith("carray_")}
    assert {"vlen_str", "vlen_bytes", "category", "nullable_i8", "decimal", "list_i4",
            "list_str", "map_str_i8", "struct"} <= kinds


@pytest.mark.parametrize("name", NAMES)
def test_a_fixture_reads_back_exactly(name, tmp_path):
    want = _expected(name)
    kind = json.loads(MANIFEST.read_text())["datasets"][name]["kind"]
    obj = bcolz_store.open(_copy(name, tmp_path), mode="r")
    got = pa.table(obj)
    if kind == "carray":
        assert len(obj) == want.num_rows
        assert arrow_equal(got.column(0), want.column(0)), name
        return
    assert got.column_names == want.column_names
    for column in want.column_names:
        assert arrow_equal(got.column(column), want.column(column)), (name, column)


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("carray_")])
def test_a_fixture_takes_appends_and_reads_both(name, tmp_path):
    """A dataset of the old layout keeps its rows when more are appended."""
    want = _expected(name).column(0)
    path = _copy(name, tmp_path)
    c = bcolz_store.open(path, mode="a")
    c.append(want.slice(0, 7))
    c.flush()
    got = pa.table(bcolz_store.open(path, mode="r")).column(0)
    assert arrow_equal(got, pa.concat_arrays([_one(want), _one(want.slice(0, 7))]))


def _one(arr):
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
