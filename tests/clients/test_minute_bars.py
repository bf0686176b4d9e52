"""A minute-bar bundle kept the way a backtester's minute-bar writer keeps it.

One ctable per sid (``00/00/000001.bcolz``) with uint32 open/high/low/close/volume
columns, created empty with an ``expectedlen``; every write reopens the table in
mode 'a', pads the days without data with zeros and appends whole trading days
(390 rows each) with a flush; the sid's attributes live in ``table.attrs``;
``truncate`` reopens every table with ``bcolz.open(rootdir)`` and ``resize``s it
to fewer rows (no flush: the resize itself is the write).  Readers open single
columns as ``carray(rootdir=sid/field, mode='r')`` and slice them, and read the
attributes with ``bcolz.attrs.attrs(sid, 'r')``.  Everything is compared with a
NumPy model of the columns, after every step, on every store, with 1 and 2
threads, and read back by the real bcolz where it is importable.
"""

import os

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import ReadOnlyError

from .conftest import real_bcolz

FIELDS = ("open", "high", "low", "close", "volume")
PER_DAY = 390
SIDS = (1, 2, 10203)

#: How the tables are laid out: a backtester's expectedlen (a year of minutes;
#: every row stays in the leftover), or chunks that days cut inside (1000) or on
#: their edges (780 = two days).
LAYOUTS = {
    "expectedlen": {"expectedlen": PER_DAY * 252},
    "chunks-1000": {"chunklen": 1000},
    "chunks-780": {"chunklen": 2 * PER_DAY},
}


def bars(rng, ndays):
    """``ndays`` of minute bars: prices * 1000 and volumes as uint32, with minutes
    without trades (all zero) and the uint32 extremes."""
    n = ndays * PER_DAY
    close = rng.integers(1_000, 400_000, n, dtype=np.uint32)
    spread = rng.integers(0, 500, n, dtype=np.uint32)
    cols = {
        "open": close - spread // 2,
        "high": close + spread,
        "low": close - spread,
        "close": close,
        "volume": rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32),
    }
    quiet = rng.random(n) < 0.1
    for col in cols.values():
        col[quiet] = 0
    cols["volume"][n // 2] = np.iinfo(np.uint32).max
    return cols


class MinuteBarWriter:
    """Writes sids the way a minute-bar writer does (one ctable per sid)."""

    def __init__(self, place, layout):
        self.place = place
        self.layout = layout

    def sidpath(self, sid):
        name = f"{sid:06d}"
        return self.place.path(name[0:2], name[2:4], f"{name}.bcolz")

    def ensure(self, sid):
        path = self.sidpath(sid)
        if self.place.exists(path):
            return bcolz.ctable(rootdir=path, mode="a")
        self.place.makedirs(os.path.dirname(path))
        empty = np.empty(0, np.uint32)
        table = bcolz.ctable(rootdir=path, columns=[empty] * len(FIELDS), names=list(FIELDS),
                             mode="w", **self.layout)
        table.flush()
        return table

    def set_attrs(self, sid, **attrs):
        table = self.ensure(sid)
        for key, value in attrs.items():
            table.attrs[key] = value

    def write(self, sid, first_day, cols):
        """Append whole days from ``first_day`` on, padding the days before with zeros."""
        table = self.ensure(sid)
        start = first_day * PER_DAY
        assert table.size <= start, "overlapping data"
        if table.size < start:
            zeros = np.zeros(start - table.size, np.uint32)
            table.append([zeros] * len(FIELDS))
            table.flush()
            table = self.ensure(sid)
        assert table.size == start
        table.append([cols[f] for f in FIELDS])
        table.flush()

    def truncate(self, ndays):
        """Cut every sid to ``ndays`` days; returns the tables it resized (still open)."""
        end = ndays * PER_DAY
        resized = []
        for sid in SIDS:
            path = self.sidpath(sid)
            if not self.place.exists(path):
                continue
            table = bcolz.open(rootdir=path)
            if table.len <= end:
                continue
            table.resize(end)
            resized.append(table)
        return resized


class Model:
    """The columns and attributes every sid must have."""

    def __init__(self):
        self.cols = {}
        self.attrs = {}

    def write(self, sid, first_day, cols):
        have = self.cols.setdefault(sid, {f: np.empty(0, np.uint32) for f in FIELDS})
        pad = first_day * PER_DAY - len(have["close"])
        for f in FIELDS:
            have[f] = np.concatenate([have[f], np.zeros(pad, np.uint32), cols[f]])

    def truncate(self, ndays):
        for have in self.cols.values():
            for f in FIELDS:
                have[f] = have[f][:ndays * PER_DAY]


def windows(n, chunklen):
    """Slices at the edges that matter: chunks, days, both ends, past the end."""
    edges = {0, n}
    for step in (chunklen, PER_DAY):
        for k in range(0, n + step, step):
            edges.update(x for x in (k - 1, k, k + 1) if 0 <= x <= n)
    edges = sorted(edges)
    out = [(0, n), (n, n + 10), (n // 3, n + 500)]
    out += list(zip(edges, edges[1:]))           # between neighbouring edges
    out += list(zip(edges, edges[3:]))           # across an edge
    out += [(a, a + 1) for a in edges]           # single rows
    rng = np.random.default_rng(n)
    out += [tuple(sorted(rng.integers(0, n + 1, 2))) for _ in range(10)]
    return out


def check(place, writer, model):
    """Readers see exactly the model: whole columns, slices, rows and attributes."""
    for sid, cols in model.cols.items():
        path = writer.sidpath(sid)
        n = len(cols["close"])
        src = place.published(path)
        table = bcolz.ctable(rootdir=src, mode="r")
        assert table.names == list(FIELDS)
        assert len(table) == table.len == n
        chunklen = table["close"].chunklen
        for f in FIELDS:
            col = table[f]
            assert col.dtype == np.uint32 and len(col) == n
            assert_array_equal(col[:], cols[f], err_msg=f"sid {sid} {f}")
            for a, b in windows(n, chunklen):
                got = col[a:b]
                assert got.dtype == np.uint32
                assert_array_equal(got, cols[f][a:b], err_msg=f"sid {sid} {f}[{a}:{b}]")
        if n:
            for i in (0, n // 2, n - 1):
                assert tuple(table[i]) == tuple(cols[f][i] for f in FIELDS)
        assert table.attrs.getall() == model.attrs.get(sid, {})
        if not place.read_only:
            # the reader's way in: one carray per column, the attributes on their own
            for f in FIELDS:
                col = bcolz.carray(rootdir=place.join(path, f), mode="r")
                assert len(col) == n
                assert_array_equal(col[n // 4:n - 7], cols[f][n // 4:n - 7])
            attrs = bcolz.attrs.attrs(path, "r")
            for key, value in model.attrs.get(sid, {}).items():
                assert attrs[key] == value
            with pytest.raises(KeyError):
                attrs["no such attribute"]
        if real_bcolz is not None and place.folder:
            ref = real_bcolz.open(path, mode="r")
            assert list(ref.names) == list(FIELDS) and len(ref) == n
            for f in FIELDS:
                assert_array_equal(ref[f][:], cols[f], err_msg=f"real bcolz: sid {sid} {f}")
            assert dict(ref.attrs) == model.attrs.get(sid, {})


@pytest.mark.parametrize("layout", list(LAYOUTS), ids=list(LAYOUTS))
def test_minute_bar_writer_flow(place, nthreads, layout):
    rng = np.random.default_rng(42)
    writer = MinuteBarWriter(place, LAYOUTS[layout])
    model = Model()

    def write(sid, first_day, ndays):
        cols = bars(rng, ndays)
        writer.write(sid, first_day, cols)
        model.write(sid, first_day, cols)

    # sid 1 day by day, sid 2 from its third day in one block, 10203 one day only
    for day in range(6):
        write(1, day, 1)
    write(2, 2, 3)
    write(10203, 0, 1)
    for sid in SIDS:
        attrs = {"ohlc_ratio": 1000, "first_trading_day": "2016-01-04", "country": "US"}
        writer.set_attrs(sid, **attrs)
        model.attrs[sid] = attrs
    check(place, writer, model)

    # truncate to 4 days: reopened from disk in mode 'a', then resized to fewer rows
    resized = writer.truncate(4)
    model.truncate(4)
    assert sorted(t.len for t in resized) == [4 * PER_DAY, 4 * PER_DAY]    # sids 1 and 2
    check(place, writer, model)          # while the writer still holds the tables
    del resized

    # new days after the truncation, with a padded gap for sid 2
    write(1, 4, 3)
    write(2, 5, 1)
    check(place, writer, model)

    # truncate everything, then start again
    for sid in SIDS:
        table = bcolz.open(rootdir=writer.sidpath(sid))
        table.resize(0)
        assert table.len == 0 and table["close"][:].dtype == np.uint32
    model.truncate(0)
    check(place, writer, model)          # attributes survive an empty table
    write(1, 0, 2)
    write(10203, 1, 1)
    check(place, writer, model)


def test_packed_minute_bars_are_read_only(tmp_path):
    from .conftest import Place
    place = Place("pack", tmp_path)
    writer = MinuteBarWriter(place, LAYOUTS["chunks-1000"])
    writer.write(1, 0, bars(np.random.default_rng(1), 3))
    packed = place.published(writer.sidpath(1))
    for table in (bcolz.open(packed), bcolz.ctable(rootdir=packed, mode="r")):
        assert len(table) == 3 * PER_DAY
        with pytest.raises(ReadOnlyError):
            table.resize(PER_DAY)
        with pytest.raises(ReadOnlyError):
            table.append([np.zeros(PER_DAY, np.uint32)] * len(FIELDS))
        with pytest.raises(ReadOnlyError):
            table.attrs["ohlc_ratio"] = 1
    assert len(bcolz.open(packed)) == 3 * PER_DAY


def test_a_pack_opened_in_the_default_mode_says_it_is_read_only(tmp_path):
    from .conftest import Place
    place = Place("pack", tmp_path)
    writer = MinuteBarWriter(place, LAYOUTS["chunks-1000"])
    writer.write(1, 0, bars(np.random.default_rng(2), 1))
    table = bcolz.open(place.published(writer.sidpath(1)))
    # a client decides whether it may write from .mode, as with a folder opened in 'r'
    assert table.mode == "r" and table["close"].mode == "r"
