"""Property-based tests (hypothesis) of the carray against a numpy model.

Profiles, chosen with the environment variable ``HYPOTHESIS_PROFILE``:

``dev`` (default)
    Random examples, a modest number of them; the whole folder runs in well
    under a minute.
``ci``
    The same example counts, derandomized (reproducible runs) and printing
    the reproduction blob of a failure.
``thorough``
    Ten times the examples, for a long run before a release.

Each test asks :func:`examples` for its example count, so one factor scales
them all.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                      HealthCheck.data_too_large])
settings.register_profile("dev", **_COMMON)
settings.register_profile("ci", derandomize=True, print_blob=True, **_COMMON)
settings.register_profile("thorough", **_COMMON)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "dev")
settings.load_profile(PROFILE)
_SCALE = 10 if PROFILE == "thorough" else 1


def examples(n: int) -> int:
    """Number of examples for a test that runs ``n`` under the default profiles."""
    return n * _SCALE


import numpy as np  # noqa: E402

#: dtypes the property tests draw from (1-d and 2-d atoms are drawn separately).
DTYPES = ["int8", "int64", "uint16", "float32", "float64", "bool", "S5", "U3", "datetime64[s]"]

_LETTERS = np.array(list("abcdeXYZ09 \u00e9\u4e2d\U0001f600"))


def random_values(rng: np.random.Generator, dtype, shape) -> np.ndarray:
    """Random values of ``dtype`` and ``shape``, covering each dtype's awkward corners.

    Integers span the whole range, floats include NaN, infinities and -0.0,
    strings vary in length (including empty ones) and datetimes include NaT.
    """
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    size = int(np.prod(shape, dtype=np.int64))
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        out = rng.integers(info.min, info.max, size=size, dtype=dtype, endpoint=True)
    elif dtype.kind == "f":
        out = (rng.standard_normal(size) * 1e3).astype(dtype)
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], dtype=dtype)
        hits = rng.random(size) < 0.05
        out[hits] = rng.choice(specials, int(hits.sum()))
    elif dtype.kind == "b":
        out = rng.random(size) < 0.5
    elif dtype.kind in "SU":
        width = dtype.itemsize if dtype.kind == "S" else dtype.itemsize // 4
        letters = _LETTERS[:10] if dtype.kind == "S" else _LETTERS
        lens = rng.integers(0, width, size=size, endpoint=True)
        chars = rng.choice(letters, size=(size, width))
        out = np.array(["".join(row[:n]) for row, n in zip(chars, lens)], dtype=str)
        out = out.astype(dtype) if dtype.kind == "U" else np.char.encode(out, "ascii").astype(dtype)
    elif dtype.kind in "mM":
        out = rng.integers(-10 ** 10, 10 ** 10, size=size).astype(dtype)
        out[rng.random(size) < 0.05] = np.array("NaT", dtype=dtype)
    else:
        raise NotImplementedError(dtype)
    return np.asarray(out, dtype=dtype).reshape(shape)
