"""Shared fixtures: where bcolz 1.13's reference datasets live."""

from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "bcolz-1.13"


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"reference fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_fsync_in_process(monkeypatch):
    """In-process tests skip fsync (durability is what the crash tests check, in
    writer subprocesses that keep it on); the commit protocol is otherwise the same."""
    from bcolz_store.storage.journal import Journal
    monkeypatch.setattr(Journal, "fsync_default", False)
