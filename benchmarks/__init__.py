"""Benchmarks of bcolz_store against bcolz, blosc2 and zarr (``python -m benchmarks``).

See :mod:`benchmarks.harness` and ``docs/performance.md``.
"""
