"""S3 helpers for the tests that run against the moto server (tests/conftest.py
starts it on 127.0.0.1)."""

from __future__ import annotations

import collections


def count_requests(store):
    """A Counter of the S3 requests ``store`` (an fsspec S3 store of
    bcolz_store) sends from now on, by operation (``GetObject``,
    ``ListObjectsV2``...)."""
    seen = collections.Counter()
    store.fs.s3.meta.events.register(
        "before-send.s3", lambda **kw: seen.update([kw["event_name"].rsplit(".", 1)[-1]]))
    return seen
