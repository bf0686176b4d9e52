"""The test tiers (tests/conftest.py): every entry of the ``slow`` list names a
test that exists, and the markers the tiers select on are given as they say."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests import conftest

TESTS = Path(__file__).resolve().parent


def _defined(path: Path) -> set:
    """``name`` and ``Class::name`` of the tests in a module."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign):      # a hypothesis machine's TestCase
            for target in node.targets:
                if isinstance(target, ast.Name):
                    found.update((target.id, f"{target.id}::runTest"))
        elif isinstance(node, ast.ClassDef):
            found.add(node.name)
            found.update(f"{node.name}::{item.name}" for item in node.body
                         if isinstance(item, ast.FunctionDef))
    return found


@pytest.mark.parametrize("entry", conftest.SLOW)
def test_every_slow_entry_names_a_test(entry):
    path, _, name = entry.partition("::")
    assert (TESTS / path).is_file(), f"{entry}: no module {path}"
    if name:
        assert name in _defined(TESTS / path), f"{entry}: no test {name} in {path}"


@pytest.mark.parametrize("where, nodeid, fixtures, want", [
    ("test_carray.py", "tests/test_carray.py::test_x", (), {"oldest"}),
    ("storage/test_remote_datasets.py", "tests/storage/test_remote_datasets.py::test_x[a]",
     ("s3_server", "s3_bucket"), {"s3", "slow"}),
    ("crash/test_crash.py", "tests/crash/test_crash.py::test_model_is_deterministic", (),
     {"subprocess", "slow"}),
    ("hostile/test_fuzz.py", "tests/hostile/test_fuzz.py::test_fuzz", (),
     {"subprocess", "fuzz", "slow"}),
    ("test_query_plan.py", "tests/test_query_plan.py::test_every_query_answers_as_a_scan[a-b]",
     (), {"slow"}),
    ("test_query_plan.py", "tests/test_query_plan.py::test_something_quick", (), set()),
])
def test_markers_follow_the_lists(where, nodeid, fixtures, want):
    assert {m.name for m in conftest._markers(where, nodeid, fixtures)} == want
