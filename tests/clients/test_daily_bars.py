"""A daily-bar bundle written and read the way a backtester's daily-bar writer does.

Each sid's bars (a DataFrame) become a ctable with ``ctable.fromdataframe``; their
columns are appended to in-memory carrays, which become one ctable on disk
(``ctable(columns=..., names=..., rootdir=..., mode='w')``), or the whole frame
goes straight to disk with ``ctable.fromdataframe(df, rootdir=...)``.  The table's
``attrs`` hold where each sid's rows start and end (``first_row``/``last_row``,
dicts keyed by the sid as a string), its offset in the calendar
(``calendar_offset``) and the calendar's bounds in nanoseconds.  Readers open the
table with ``ctable(rootdir, mode='r')`` or ``bcolz.open(root)``, single columns
with ``carray(rootdir=os.path.join(root, 'close'), mode='r')``, and read whole
columns, each sid's rows and single values.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import bcolz_store as bcolz
from bcolz_store.errors import ReadOnlyError

from .conftest import real_bcolz

pd = pytest.importorskip("pandas")

PRICES = ("open", "high", "low", "close")
NAMES = ("open", "high", "low", "close", "volume", "day", "id")
DTYPES = {"open": np.uint32, "high": np.uint32, "low": np.uint32, "close": np.uint32,
          "volume": np.uint32, "day": np.int64, "id": np.uint32}
SESSIONS = pd.bdate_range("2014-01-02", periods=700)


def sid_bars(rng, sid):
    """One sid's bars over a stretch of the calendar, as the writer stores them:
    prices * 1000 and volumes as uint32, the session as int64 seconds."""
    first = int(rng.integers(0, 100))
    n = int(rng.integers(200, len(SESSIONS) - first + 1)) if sid % 7 else 1
    days = SESSIONS[first:first + n]
    close = rng.uniform(1.0, 4000.0, n)
    frame = pd.DataFrame({
        "open": close * rng.uniform(0.98, 1.02, n),
        "high": close * 1.03,
        "low": close * 0.97,
        "close": close,
        "volume": rng.integers(0, 2 ** 32 - 1, n).astype(np.float64),
    })
    out = pd.DataFrame({name: (np.round(frame[name] * 1000)).astype(np.uint32)
                        for name in PRICES})
    out["volume"] = frame["volume"].astype(np.uint32)
    out["day"] = days.values.astype("datetime64[s]").astype(np.int64)
    return first, out


def bundle(seed, nsids=200):
    rng = np.random.default_rng(seed)
    return [(sid, *sid_bars(rng, sid)) for sid in rng.choice(10_000, nsids, replace=False)]


def bundle_attrs(sids):
    """The attributes a daily-bar writer stores, and the rows every sid has."""
    first_row, last_row, offset, total = {}, {}, {}, 0
    for sid, first, frame in sids:
        first_row[str(sid)] = total
        last_row[str(sid)] = total + len(frame) - 1
        offset[str(sid)] = first
        total += len(frame)
    return {
        "first_trading_day": int(SESSIONS[0].value // 10 ** 9),
        "first_row": first_row,
        "last_row": last_row,
        "calendar_offset": offset,
        "calendar_name": "XNYS",
        "start_session_ns": int(SESSIONS[0].value),
        "end_session_ns": int(SESSIONS[-1].value),
    }


def expected_frame(sids):
    frames = [frame.assign(id=np.uint32(sid)) for sid, _, frame in sids]
    return pd.concat(frames, ignore_index=True)[list(NAMES)].astype(DTYPES)


def write_by_columns(root, sids):
    """Per-sid ctables in memory, appended column by column, then one ctable on disk."""
    columns = {name: bcolz.carray(np.array([], dtype=DTYPES[name])) for name in NAMES}
    for sid, _, frame in sids:
        table = bcolz.ctable.fromdataframe(frame)
        assert len(table) == len(frame) and table["day"].dtype == np.int64
        for name in NAMES:
            if name == "id":
                columns["id"].append(np.full(len(table), sid, dtype=np.uint32))
            else:
                columns[name].append(table[name])
    table = bcolz.ctable(columns=[columns[name] for name in NAMES], names=list(NAMES),
                         rootdir=root, mode="w")
    return table


def write_from_dataframe(root, sids):
    return bcolz.ctable.fromdataframe(expected_frame(sids), rootdir=root, mode="w")


WRITERS = {"by-columns": write_by_columns, "fromdataframe": write_from_dataframe}


def check_table(table, attrs, frame):
    assert list(table.names) == list(NAMES) and len(table) == len(frame)
    assert table.attrs["calendar_name"] == "XNYS"
    assert "calendar_name" in table.attrs.attrs and "calendar" not in table.attrs.attrs
    for key, value in attrs.items():
        assert table.attrs[key] == value, key
    for key in ("start_session_ns", "end_session_ns", "first_trading_day"):
        assert type(table.attrs[key]) is int     # nanoseconds do not go through a float
    for name in NAMES:
        col = table[name]
        assert col.dtype == DTYPES[name]
        assert_array_equal(col[:], frame[name].to_numpy(), err_msg=name)
    # each sid's rows, found through the attributes
    first_row = {int(k): v for k, v in table.attrs["first_row"].items()}
    last_row = {int(k): v for k, v in table.attrs["last_row"].items()}
    close, day, ids = table["close"], table["day"], table["id"]
    for sid, start in first_row.items():
        stop = last_row[sid] + 1
        assert (ids[start:stop] == sid).all()
        want = frame.iloc[start:stop]
        assert_array_equal(close[start:stop], want["close"].to_numpy())
        assert day[start] == SESSIONS[attrs["calendar_offset"][str(sid)]].value // 10 ** 9
    rows = table[[0, len(frame) // 2, len(frame) - 1]]
    for row, i in zip(rows, (0, len(frame) // 2, len(frame) - 1)):
        assert tuple(row) == tuple(frame.iloc[i][list(NAMES)])


@pytest.mark.parametrize("writer", list(WRITERS))
def test_daily_bar_writer_flow(place, nthreads, writer):
    sids = bundle(seed=len(writer))
    attrs = bundle_attrs(sids)
    frame = expected_frame(sids)
    root = place.path("daily_equities.bcolz")

    table = WRITERS[writer](root, sids)
    for key, value in attrs.items():
        table.attrs[key] = value
    table.flush()
    assert table["close"].nchunks >= 1 and table["close"].leftover   # a chunk and a leftover
    del table

    src = place.published(root)
    check_table(bcolz.ctable(rootdir=src, mode="r"), attrs, frame)
    opened = bcolz.open(src)
    assert isinstance(opened, bcolz.ctable)
    check_table(opened, attrs, frame)
    pd.testing.assert_frame_equal(opened.todataframe(), frame)
    if place.read_only:
        with pytest.raises(ReadOnlyError):
            opened.attrs["calendar_name"] = "XLON"
    else:
        # the readers of single columns, and their spot reads
        for name in NAMES:
            col = bcolz.carray(rootdir=place.join(root, name), mode="r")
            assert col.dtype == DTYPES[name] and len(col) == len(frame)
            assert_array_equal(col[:], frame[name].to_numpy(), err_msg=name)
            for ix in (0, col.chunklen - 1, col.chunklen, len(frame) - 1):
                value = col[ix]                 # a Python int, as bcolz gives
                assert type(value) is int and value == frame[name].iat[ix]
        with pytest.raises(ReadOnlyError):
            bcolz.carray(rootdir=place.join(root, "close"), mode="r")[0] = 1

    if real_bcolz is not None and place.folder:
        ref = real_bcolz.ctable(rootdir=root, mode="r")
        assert list(ref.names) == list(NAMES) and len(ref) == len(frame)
        for name in NAMES:
            assert_array_equal(ref[name][:], frame[name].to_numpy(), err_msg=name)
        for key, value in attrs.items():
            assert ref.attrs[key] == value, key
        close = real_bcolz.carray(rootdir=place.join(root, "close"), mode="r")
        assert_array_equal(close[:], frame["close"].to_numpy())
        assert_array_equal(real_bcolz.open(root)["day"][:], frame["day"].to_numpy())
