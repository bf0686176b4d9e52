"""A reader opened in mode 'r' never mixes two committed states: once a writer has
begun a commit (any number of them), the reader's next chunk read raises
DatasetChangedError, and refresh() moves it to the newest state.  Without a
commit it reads on, however many reads it makes."""

from __future__ import annotations

import numpy as np
import pytest

import bcolz_store
from bcolz_store.errors import DatasetChangedError

CHUNKLEN = 100
N = 2_000


def _write(root, real_bcolz_writes: bool):
    data = np.arange(N, dtype="i8")
    if real_bcolz_writes:
        bcolz = pytest.importorskip("bcolz")
        bcolz.carray(data, rootdir=str(root), mode="w", chunklen=CHUNKLEN).flush()
    else:
        bcolz_store.carray(data, rootdir=str(root), mode="w", chunklen=CHUNKLEN).flush()
    return data


@pytest.mark.parametrize("writer", ["bcolz_store", "bcolz"])
def test_reads_without_a_commit_never_fail(tmp_path, writer):
    data = _write(tmp_path / "a", writer == "bcolz")
    reader = bcolz_store.open(str(tmp_path / "a"), mode="r")
    reader.cache_budget = 0                   # every read goes to its chunk file
    for i in range(0, N, 37):
        assert reader[i] == data[i]
    np.testing.assert_array_equal(reader[:], data)


@pytest.mark.parametrize("writer", ["bcolz_store", "bcolz"])
@pytest.mark.parametrize("commits", [1, 2, 3])
def test_a_reader_notices_any_number_of_commits(tmp_path, writer, commits):
    data = _write(tmp_path / "a", writer == "bcolz")
    if writer == "bcolz_store":               # a few commits already, as a dataset has
        for _ in range(2):
            w = bcolz_store.open(str(tmp_path / "a"), mode="a")
            w.append([1])
            w.flush()
            data = np.append(data, 1)
    reader = bcolz_store.open(str(tmp_path / "a"), mode="r")
    reader.cache_budget = 0
    assert reader[5] == data[5]
    expected = data.copy()
    for k in range(commits):
        w = bcolz_store.open(str(tmp_path / "a"), mode="a")
        w[:CHUNKLEN] = -1 - k                 # rewrites chunk 0 in place of the old file
        w.flush()
        expected[:CHUNKLEN] = -1 - k
    with pytest.raises(DatasetChangedError, match="refresh"):
        reader[7]
    reader.refresh()
    assert reader[7] == expected[7]
    np.testing.assert_array_equal(reader[:], expected)


def test_a_reader_notices_a_commit_that_has_only_begun(tmp_path):
    """A commit record created but not applied (a writer between the two steps)."""
    data = _write(tmp_path / "a", False)
    reader = bcolz_store.open(str(tmp_path / "a"), mode="r")
    reader.cache_budget = 0
    assert reader[1] == data[1]
    journal = tmp_path / "a" / ".bcolz_store-journal"
    records = sorted(journal.glob("commit-*.json"))
    assert len(records) == 1
    generation = int(records[0].stem.split("-")[1])
    (journal / f"commit-{generation + 1:012d}.json").write_text("[]")
    with pytest.raises(DatasetChangedError):
        reader[3]
