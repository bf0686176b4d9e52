"""Contract test classes for the parts of bcolz_store that others can add.

A new storage backend, chunk engine or file converter proves itself by
inheriting the matching class and supplying a fixture; the tests come with it
(as ``zarr.testing.store`` does for zarr's stores)::

    from bcolz_store.testing.store import StoreTests

    class TestMyStore(StoreTests):
        @pytest.fixture
        def store(self, tmp_path):
            return MyStore(tmp_path)

These modules import pytest; ``import bcolz_store`` never imports them.
"""
