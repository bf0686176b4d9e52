"""The column kinds the operation machines draw: how to make one, its values,
its model, and how a read is compared with the model.

A model is a numpy array: of the atom's dtype for fixed-size kinds (so numpy
itself says what every assignment, trim and resize must give), of ``object``
for vlen and categorical kinds (their items: str or bytes, None for a missing
one).  Reads are compared exactly: fixed-size atoms byte for byte (NaN
payloads, -0.0 and NaT included), items by type and value.
"""

from __future__ import annotations

import numpy as np

import bcolz_store
from tests.properties import random_values

#: fixed-size dtypes (with the shape of one atom) the machines draw from.
FIXED = [
    ("int8", ()), ("uint32", ()), ("int64", ()), ("float32", ()), ("float64", ()),
    ("complex64", ()), ("bool", ()), ("datetime64[ns]", ()), ("datetime64[D]", ()),
    ("timedelta64[s]", ()), ("S5", ()), ("U3", ()), (">i4", ()), (">f8", ()),
    ("int16", (3,)), ("float32", (2, 2)), ("S2", (2,)),
    ([("a", "<i4"), ("b", "<f8"), ("c", "S3")], ()),
]

_TEXT = list("ab \x00é€😀xyz")
_BYTES = [b"a", b"b", b"\x00", b"\xff", b" ", b"\x01z"]


def _random_str(rng, alphabet, longest):
    n = int(rng.integers(0, longest + 1))
    return "".join(rng.choice(alphabet, n)) if n else ""


class Kind:
    """One column kind; ``label`` names it in failure reports."""

    label = "?"
    itemwise = False           # items compared as Python objects (vlen, categorical)
    where_ok = True            # numeric 1-d: usable in where() expressions
    frame_ok = True            # todataframe() can hold it

    def create_kwargs(self) -> dict:
        """Keyword arguments of ``carray(...)`` that make this kind."""
        return {}

    def values(self, rng, n: int) -> np.ndarray:
        raise NotImplementedError

    def filler(self, n: int) -> np.ndarray:
        """What growing by ``n`` (resize, negative trim) appends."""
        raise NotImplementedError

    def as_input(self, values: np.ndarray, rng):
        """``values`` in one of the forms a user passes (array, list...)."""
        return values if rng.random() < 0.5 else values.tolist()

    def bad_values(self, n: int):
        """Values an append or assignment of this kind must refuse (None: there are none)."""
        return None

    def as_carray(self, values: np.ndarray, rng):
        """``values`` as a carray to append (empty fixed-size ones stay an array)."""
        return bcolz_store.carray(values) if len(values) else values

    def other_kind_carray(self):
        """A carray an append must refuse as of the other kind (None: there is none)."""
        return None

    def check(self, got, expected: np.ndarray, what: str) -> None:
        raise NotImplementedError

    def check_item(self, got, expected, what: str) -> None:
        """One item read (``c[i]``) is the model's."""
        if type(got) is not type(expected) or got != expected:
            raise AssertionError(f"{what}: {got!r} != {expected!r}")

    def frame_values(self, series) -> np.ndarray:
        """A DataFrame column of this kind as a model array."""
        return series.to_numpy()

    def one(self, item):
        """``item`` as ``append`` and ``x[i] = ...`` take one item."""
        return item


class Fixed(Kind):
    """Atoms of one numpy dtype and shape."""

    def __init__(self, dtype, shape, dflt):
        self.dtype = np.dtype(dtype)
        self.shape = tuple(shape)
        self.dflt = dflt
        self.atom = np.dtype((self.dtype, self.shape)) if self.shape else self.dtype
        self.label = f"{self.dtype.str if not self.dtype.names else 'struct'}{self.shape or ''}"
        self.where_ok = not self.shape and self.dtype.kind in "iufb" and \
            self.dtype.isnative
        self.frame_ok = not self.shape and not self.dtype.names

    @classmethod
    def draw(cls, rng, spec, with_dflt: bool):
        dtype, shape = spec
        dflt = cls._random(rng, np.dtype(dtype), (), ())[()] if with_dflt else None
        return cls(dtype, shape, dflt)

    @staticmethod
    def _random(rng, dtype, shape, n):
        shape = (n,) + tuple(shape) if n != () else tuple(shape)
        if dtype.names:
            out = np.zeros(shape, dtype=dtype)
            for name in dtype.names:
                out[name] = random_values(rng, dtype[name], shape)
            return out
        if not dtype.isnative:
            return random_values(rng, dtype.newbyteorder("="), shape).astype(dtype)
        if dtype.kind == "c":
            parts = random_values(rng, np.dtype(f"f{dtype.itemsize // 2}"), shape + (2,))
            out = np.empty(shape, dtype=dtype)
            out.real, out.imag = parts[..., 0], parts[..., 1]
            return out
        if dtype.kind == "m":
            return random_values(rng, np.dtype("M8[s]"), shape).view("i8").view(dtype)
        return random_values(rng, dtype, shape)

    def create_kwargs(self):
        return {} if self.dflt is None else {"dflt": self.dflt}

    def values(self, rng, n):
        return self._random(rng, self.dtype, self.shape, n)

    def filler(self, n):
        out = np.zeros((n,) + self.shape, dtype=self.dtype)
        if self.dflt is not None:
            out[...] = self.dflt
        return out

    def bad_values(self, n):
        if self.dtype.kind in "iufc" and not self.shape:     # (numpy makes any str a bool)
            return ["not a number"] * n
        return None

    def check(self, got, expected, what):
        got = np.asarray(got)
        assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype} != {expected.dtype}"
        assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
        if got.tobytes() != expected.tobytes():
            diff = np.flatnonzero(got.reshape(len(got), -1).view(np.uint8).reshape(len(got), -1)
                                  != expected.reshape(len(expected), -1).view(np.uint8)
                                  .reshape(len(expected), -1)) if len(got) else []
            raise AssertionError(f"{what}: bytes differ (first differing byte {diff[:1]});\n"
                                 f"got      {got!r}\nexpected {expected!r}")

    def check_item(self, got, expected, what):
        got = np.asarray(got, dtype=self.dtype)
        expected = np.asarray(expected, dtype=self.dtype)
        assert got.shape == expected.shape, f"{what}: shape {got.shape} != {expected.shape}"
        assert got.tobytes() == expected.tobytes(), f"{what}: {got!r} != {expected!r}"

    def frame_values(self, series):
        return series.to_numpy(dtype=self.dtype)


class Vlen(Kind):
    """Variable-length str or bytes items, some missing."""

    itemwise = True
    where_ok = False

    def __init__(self, kind: str, dflt):
        self.kind = kind
        self.dflt = dflt
        self.label = f"vlen-{kind}"

    @classmethod
    def draw(cls, rng, kind, with_dflt):
        dflt = None
        if with_dflt:
            dflt = _random_str(rng, _TEXT, 4) if kind == "str" else b"d\x00"
        return cls(kind, dflt)

    def create_kwargs(self):
        out = {"dtype": bcolz_store.vlen(self.kind, nullable=True)}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def item(self, rng):
        if rng.random() < 0.1:
            return None
        if self.kind == "str":
            return _random_str(rng, _TEXT, 12 if rng.random() < 0.9 else 300)
        n = int(rng.integers(0, 13))
        return b"".join(rng.choice(_BYTES, n)) if n else b""

    def values(self, rng, n):
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = self.item(rng)
        return out

    def filler(self, n):
        out = np.empty(n, dtype=object)
        out[:] = [self.dflt if self.dflt is not None else ("" if self.kind == "str" else b"")] \
            * n
        return out

    def as_input(self, values, rng):
        return values.tolist() if rng.random() < 0.5 else values

    def bad_values(self, n):
        return [3.5] * n if n else None

    def as_carray(self, values, rng):
        return bcolz_store.carray(values, dtype=bcolz_store.vlen(self.kind, nullable=True))

    def other_kind_carray(self):
        other = "bytes" if self.kind == "str" else "str"
        return bcolz_store.carray([b"x" if other == "bytes" else "x"],
                                  dtype=bcolz_store.vlen(other))

    def check(self, got, expected, what):
        got_items = list(np.asarray(got, dtype=object).ravel()) if not isinstance(got, list) \
            else got
        want = list(expected)
        assert len(got_items) == len(want), f"{what}: {len(got_items)} items != {len(want)}"
        for i, (g, w) in enumerate(zip(got_items, want)):
            if type(g) is not type(w) or g != w:
                raise AssertionError(f"{what}: item {i} is {g!r}, expected {w!r}")

    def frame_values(self, series):
        values = series.astype(object).to_numpy()
        return np.array([None if _is_missing(v) else v for v in values] or [], dtype=object)


class Categorical(Vlen):
    """Items from a fixed set of categories, some missing."""

    def __init__(self, kind: str, categories: list, explicit: bool, dflt=None):
        super().__init__(kind, dflt)
        self.categories = categories
        self.explicit = explicit
        self.label = f"category-{kind}"

    @classmethod
    def draw(cls, rng, kind, explicit):
        n = int(rng.integers(1, 6))
        pool = ["buy", "sell", "", "é\x00x", "zz", "a b", "😀"]
        cats = list(dict.fromkeys(rng.choice(pool, n).tolist()))
        if kind == "bytes":
            cats = [c.encode("utf-8") for c in cats]
        dflt = cats[int(rng.integers(0, len(cats)))] if rng.random() < 0.4 else None
        return cls(kind, cats, explicit, dflt)

    def create_kwargs(self):
        out = {"dtype": bcolz_store.category(self.categories if self.explicit else None)}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def item(self, rng):
        if rng.random() < 0.15:
            return None
        return self.categories[int(rng.integers(0, len(self.categories)))]

    def initial(self, rng, n):
        """Initial values holding every category (implicit categories are the
        distinct initial items)."""
        out = self.values(rng, n)
        if not self.explicit:
            extra = np.empty(len(self.categories), dtype=object)
            extra[:] = list(self.categories)
            out = np.concatenate([extra, out])
        return out

    def filler(self, n):
        return np.full(n, self.dflt, dtype=object)

    def bad_values(self, n):
        if not n:
            return None
        return ["not a category" if self.kind == "str" else b"not a category"] * n

    def as_carray(self, values, rng):
        """A categorical carray of the values' own categories (none when all
        are missing: no kind either), of these categories in another order
        and one more, unused; or a vlen carray."""
        pick = int(rng.integers(0, 3))
        if pick == 0:
            dtype = bcolz_store.category()
        elif pick == 1:
            extra = "unused" if self.kind == "str" else b"unused"
            order = rng.permutation(len(self.categories))
            dtype = bcolz_store.category([self.categories[i] for i in order] + [extra])
        else:
            dtype = bcolz_store.vlen(self.kind, nullable=True)
        return bcolz_store.carray(values, dtype=dtype)

    def other_kind_carray(self):
        item = b"x" if self.kind == "str" else "x"
        return bcolz_store.carray([item, None], dtype=bcolz_store.category())


#: the dtypes of the nullable kinds the machines draw (docs/nulls.md).
NULLABLE = ["int32", "float64", "bool", "datetime64[ns]", "S4", "uint8", "V16", "uuid"]


class Nullable(Kind):
    """Items of one fixed numpy dtype, some null: the model holds numpy scalars
    and None (a null); reads are masked arrays (``numpy.ma.masked`` for one
    null item)."""

    itemwise = True
    where_ok = False
    frame_ok = False

    def __init__(self, dtype, dflt):
        self.dtype = np.dtype(dtype)
        self.dflt = dflt
        self.label = f"nullable-{self.dtype.str}"
        self.fixed = Fixed(self.dtype, (), None)

    @classmethod
    def draw(cls, rng, spec, with_dflt):
        kind = Uuid(None) if spec == "uuid" else cls(spec, None)
        if with_dflt:
            kind.dflt = kind.values(rng, 8)[-1]     # (None, sometimes: grows with nulls)
        return kind

    def create_kwargs(self):
        out = {"dtype": self.dtype, "nullable": True}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def _raw(self, rng, n):
        if self.dtype.kind == "V":      # fixed bytes (as a decimal's V16)
            return np.frombuffer(rng.bytes(self.dtype.itemsize * n), dtype=self.dtype).copy()
        return self.fixed.values(rng, n)

    def values(self, rng, n):
        raw = self._raw(rng, n)
        if self.dtype.kind in "Mm":       # NaT is written as a null
            raw[np.isnat(raw)] = np.array(0, dtype=self.dtype)
        out = np.empty(n, dtype=object)
        out[:] = [None if rng.random() < 0.2 else v for v in raw]
        return out

    def filler(self, n):
        out = np.empty(n, dtype=object)
        out[:] = [self.dflt] * n
        return out

    def masked(self, values):
        """``values`` as a masked array of the dtype (None: masked)."""
        data = np.array([np.zeros((), self.dtype)[()] if v is None else v for v in values],
                        dtype=self.dtype).reshape(len(values))
        return np.ma.MaskedArray(data, mask=np.array([v is None for v in values], dtype=bool))

    def as_input(self, values, rng):
        pick = rng.random()
        if pick < 0.3:
            return values.tolist()
        if pick < 0.6:
            return self.masked(values)
        return values

    def bad_values(self, n):
        return self.fixed.bad_values(n)

    def as_carray(self, values, rng):
        return bcolz_store.carray(values, dtype=self.dtype, nullable=True)

    def _items(self, got):
        if isinstance(got, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(got)
            return [None if m else v for v, m in zip(got.data, mask)]
        return [None if _null(v) else v for v in np.asarray(got, dtype=object)]

    def check(self, got, expected, what):
        if isinstance(got, np.ma.MaskedArray):
            assert got.dtype == self.dtype, f"{what}: dtype {got.dtype} != {self.dtype}"
        items = self._items(got)
        assert len(items) == len(expected), f"{what}: {len(items)} items != {len(expected)}"
        for i, (g, w) in enumerate(zip(items, expected)):
            self.check_item(g, w, f"{what} item {i}")

    def check_item(self, got, expected, what):
        if _null(got):
            got = None
        if expected is None or got is None:
            if not (expected is None and got is None):
                raise AssertionError(f"{what}: {got!r} != {expected!r}")
            return
        self.fixed.check_item(got, expected, what)


class Uuid(Nullable):
    """UUIDs (the uuid kind: V16 items plus its entry, nullable): the nullable
    V16 model, made with ``dtype="uuid"``."""

    def __init__(self, dflt):
        super().__init__("V16", dflt)
        self.label = "uuid"

    def create_kwargs(self):
        out = {"dtype": "uuid"}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def as_carray(self, values, rng):
        return bcolz_store.carray(values, dtype="uuid")


def _null(value) -> bool:
    """A null item read: ``numpy.ma.masked`` (or a masked array all masked)."""
    return value is np.ma.masked or (isinstance(value, np.ma.MaskedArray)
                                      and bool(np.ma.getmaskarray(value).all()))


def _is_missing(value) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd
        return bool(pd.isna(value)) if not isinstance(value, (str, bytes)) else False
    except (TypeError, ValueError):
        return False


def draw_kind(rng, allow=("fixed", "vlen", "category", "list"), structured=True) -> Kind:
    """A random column kind (``structured``: structured dtypes too, which a
    carray may have but a ctable column may not, as in bcolz)."""
    family = allow[int(rng.integers(0, len(allow)))]
    if family in ("decimal", "struct"):
        from tests.machine.kinds_nested import draw_nested
        return draw_nested(rng, family)
    if family == "nullable":        # (a ctable column may not be V<n>, as in bcolz)
        specs = [s for s in NULLABLE if structured or not s.startswith("V")]
        return Nullable.draw(rng, specs[int(rng.integers(0, len(specs)))],
                             bool(rng.random() < 0.3))
    if family == "fixed":
        specs = [s for s in FIXED if structured or isinstance(s[0], str)]
        spec = specs[int(rng.integers(0, len(specs)))]
        return Fixed.draw(rng, spec, bool(rng.random() < 0.4))
    if family == "map":
        return Maps()
    if family == "list":
        return Lists.draw(rng, "int32" if rng.random() < 0.5 else "str",
                          bool(rng.random() < 0.3))
    kind = "str" if rng.random() < 0.6 else "bytes"
    if family == "vlen":
        return Vlen.draw(rng, kind, bool(rng.random() < 0.4))
    return Categorical.draw(rng, kind, bool(rng.random() < 0.5))


def initial_values(kind: Kind, rng, n: int) -> np.ndarray:
    if isinstance(kind, Categorical):
        return kind.initial(rng, n)
    return kind.values(rng, n)


def concat(*parts: np.ndarray) -> np.ndarray:
    """``parts`` end to end, in the first one's dtype (numpy's concatenate
    makes the byte order native)."""
    first = parts[0]
    out = np.empty((sum(len(p) for p in parts),) + first.shape[1:], dtype=first.dtype)
    pos = 0
    for part in parts:
        out[pos:pos + len(part)] = part
        pos += len(part)
    return out


class Lists(Kind):
    """List items (``bcolz_store.list_``) of int32 or str elements, some lists
    and some elements missing.  The model holds the items as reads give them:
    int32 arrays (masked where elements are missing) or object arrays of str
    and None, and None for a missing list."""

    itemwise = True
    where_ok = False
    frame_ok = False

    def __init__(self, item: str, dflt):
        self.item_kind = item
        self.dflt = dflt
        self.label = f"list-{item}"

    @classmethod
    def draw(cls, rng, item, with_dflt):
        dflt = None
        if with_dflt:
            dflt = np.array([7, -1], dtype="int32") if item == "int32" else \
                np.array(["d", None], dtype=object)
        return cls(item, dflt)

    @property
    def dtype(self):
        return bcolz_store.list_(self.item_kind)

    def create_kwargs(self):
        out = {"dtype": self.dtype}
        if self.dflt is not None:
            out["dflt"] = self.dflt
        return out

    def item(self, rng):
        if rng.random() < 0.1:
            return None
        n = int(rng.integers(0, 6 if rng.random() < 0.9 else 40))
        if self.item_kind == "int32":
            data = rng.integers(-2 ** 31, 2 ** 31, n).astype("int32")
            missing = rng.random(n) < 0.1
            return np.ma.MaskedArray(data, mask=missing) if missing.any() else data
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = None if rng.random() < 0.1 else _random_str(rng, _TEXT, 6)
        return out

    def values(self, rng, n):
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = self.item(rng)
        return out

    def filler(self, n):
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = self.dflt
        return out

    def one(self, item):
        return [item]         # one item, wrapped: [] or [None] alone read as no/missing items

    def as_input(self, values, rng):
        return values.tolist() if rng.random() < 0.5 else values

    def bad_values(self, n):
        if not n:
            return None
        return [["not a number"]] * n if self.item_kind == "int32" else [[3.5]] * n

    def as_carray(self, values, rng):
        return bcolz_store.carray(values, dtype=self.dtype)

    def _same(self, got, want) -> bool:
        if want is None or got is None:
            return got is None and want is None
        if type(got) is not type(want) or got.dtype != want.dtype or got.shape != want.shape:
            return False
        if isinstance(want, np.ma.MaskedArray):
            return bool((np.ma.getmaskarray(got) == np.ma.getmaskarray(want)).all()) and \
                got.data.tobytes() == want.filled(0).tobytes()
        if want.dtype == object:
            return all(type(a) is type(b) and a == b for a, b in zip(got.tolist(), want.tolist()))
        return got.tobytes() == want.tobytes()

    def check(self, got, expected, what):
        got_items = list(got) if not isinstance(got, list) else got
        assert len(got_items) == len(expected), \
            f"{what}: {len(got_items)} items != {len(expected)}"
        for i, (g, w) in enumerate(zip(got_items, expected)):
            if not self._same(g, w):
                raise AssertionError(f"{what}: item {i} is {g!r}, expected {w!r}")

    def check_item(self, got, expected, what):
        if not self._same(got, expected):
            raise AssertionError(f"{what}: {got!r} != {expected!r}")


class Maps(Lists):
    """Map items (``bcolz_store.map_('str', 'int64')``): lists of ``(key,
    value)`` tuples, some values and some maps missing.  The model holds the
    items as reads give them: a list of tuples of str and ``numpy.int64`` (or
    None), None for a missing map; growing appends missing maps."""

    def __init__(self):
        super().__init__("map", None)
        self.label = "map-str-int64"

    @property
    def dtype(self):
        return bcolz_store.map_("str", "int64")

    def item(self, rng):
        if rng.random() < 0.1:
            return None
        n = int(rng.integers(0, 6 if rng.random() < 0.9 else 30))
        return [(_random_str(rng, _TEXT, 5),
                 None if rng.random() < 0.1 else np.int64(rng.integers(-2 ** 62, 2 ** 62)))
                for _ in range(n)]

    def bad_values(self, n):
        return [[("k", "not a number")]] * n if n else None

    def _same(self, got, want) -> bool:
        if want is None or got is None:
            return got is None and want is None
        return type(got) is list and len(got) == len(want) and all(
            type(g) is tuple and len(g) == 2 and type(g[0]) is str and g[0] == w[0]
            and type(g[1]) is type(w[1]) and g[1] == w[1] for g, w in zip(got, want))
