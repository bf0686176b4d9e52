"""Shared fixtures and helpers: where bcolz 1.13's reference datasets live,
and the md5 of a dataset's bcolz files computed independently of the library."""

import hashlib
import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "bcolz-1.13"
# Names in a rootdir that are bcolz_store's own (never checksummed).
OWN_NAMES = ("bcolz_store.md5", "bcolz_store.json", ".bcolz_store-journal", ".bcolz_store.lock")


def bcolz_files(root: Path) -> dict:
    """``{relative path: md5 hex}`` of every bcolz file under root (ours excluded)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in OWN_NAMES]
        for name in files:
            if name in OWN_NAMES:
                continue
            full = Path(folder) / name
            out[full.relative_to(root).as_posix()] = hashlib.md5(full.read_bytes()).hexdigest()
    return out


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
