"""The one module that calls Blosc (being written)."""
import blosc


def blosc_version():
    return (blosc.blosclib_version.split(" ")[0], blosc.blosclib_version)


def blosc_compressor_list():
    return list(blosc.compressor_list())


def blosc_set_nthreads(n):
    return blosc.set_nthreads(n)
