"""pandas DataFrame <-> ctable, column by column.

pandas is an optional extra (``pip install 'bcolz_store[pandas]'``); it is
imported only when these functions run.

Each DataFrame column becomes one carray column from its numpy values (a
view where pandas allows one); rows are never copied one by one.  Object
and string columns whose values are all ``str`` become fixed-width unicode
(``U<n>``, n the longest value), all ``bytes`` fixed-width ``S<n>``; other
object columns stay ``object``.

Source: bcolz 1.x ``ctable.fromdataframe`` / ``todataframe``; checked by
bcolz's pandasConversionTest through the conformance suite and by
tests/test_interop.py.
"""

from __future__ import annotations


import numpy as np

from ..errors import MissingDependencyError
from .arrow_columns import column_arrays, column_field
from .columns import block_rows
from .optional import require
from .pandas_columns import frame_columns, frame_data, series_zone, utc_values

__all__ = ["DTYPES_ATTR", "fixed_columns", "fromdataframe", "series_values", "todataframe"]

PANDAS_EXTRA = "bcolz_store[pandas]"
DTYPES_ATTR = "bcolz_store.dtypes"


def _import_pandas():
    try:
        import pandas as pd
    except ImportError as err:
        raise MissingDependencyError(f"pandas is needed for DataFrame conversions; install "
                                     f"it, e.g. `pip install '{PANDAS_EXTRA}'`") from err
    return pd


def _recorded_dtype(recorded, kind):
    """The recorded dtype when it is a string dtype of ``kind``, else None."""
    try:
        dtype = np.dtype(recorded) if recorded is not None else None
    except TypeError:
        return None
    return dtype if dtype is not None and dtype.kind == kind else None


def _fixed_width(values: np.ndarray, recorded=None, name="?") -> np.ndarray:
    """Object values that are all str (or all bytes) as a fixed-width array;
    ValueError for a value ending in NUL, which the fixed width would cut."""
    if len(values) == 0:
        dtype = _recorded_dtype(recorded, "U") or _recorded_dtype(recorded, "S")
        return values.astype(dtype) if dtype is not None else values
    for kind, pytype in (("U", str), ("S", bytes)):
        if all(isinstance(v, pytype) for v in values):
            nul = "\x00" if kind == "U" else b"\x00"
            cut = next((i for i, v in enumerate(values) if v.endswith(nul)), None)
            if cut is not None:
                raise ValueError(f"column {name!r}: value {cut} ends in NUL, which a "
                                 f"fixed-width {kind} column would cut (numpy drops trailing "
                                 f"NULs); pass strings='vlen' to keep it exactly")
            width = max(map(len, values), default=0)
            dtype = _recorded_dtype(recorded, kind)
            if dtype is not None and width <= dtype.itemsize // (4 if kind == "U" else 1):
                return values.astype(dtype)
            return values.astype(f"{kind}{max(width, 1)}")
    return values


def _as_recorded(values: np.ndarray, recorded) -> np.ndarray:
    """``values`` in the dtype :func:`todataframe` recorded, when pandas changed
    only its byte order or its datetime unit and the values convert back
    exactly (pandas has no ``M8[D]``, and may make big-endian data native)."""
    try:
        dtype = np.dtype(recorded) if recorded is not None else None
    except TypeError:
        return values
    if dtype is None or dtype == values.dtype or dtype.kind != values.dtype.kind or \
            dtype.kind not in "biufcMm" or \
            (dtype.kind not in "Mm" and dtype.itemsize != values.dtype.itemsize):
        return values
    with np.errstate(all="ignore"):
        out = values.astype(dtype)
    same = out.astype(values.dtype)
    if dtype.kind in "Mm":
        exact = np.array_equal(same.view(np.int64), values.view(np.int64))
    else:
        exact = np.ascontiguousarray(same).tobytes() == np.ascontiguousarray(values).tobytes()
    return out if exact else values


def series_values(series, recorded=None) -> np.ndarray:
    """The values of one DataFrame column as a numpy array fit for a carray.

    Parameters
    ----------
    series : pandas.Series
    recorded : str, optional
        The dtype recorded by :func:`todataframe`; used for str/bytes
        columns when every value fits, and for numbers and datetimes whose
        byte order or unit pandas changed, when the values convert back
        exactly.

    Returns
    -------
    numpy.ndarray, shape (len(series),)
        Numeric, bool and naive datetime columns as they are (no copy where
        pandas allows); timezone-aware datetime columns as their UTC
        datetime64 values; str/bytes columns fixed-width; other object
        columns as objects.

    Raises
    ------
    ValueError
        When a str or bytes value ends in NUL, which a fixed width would
        cut (the message names the column).
    """
    if series_zone(series) is not None:
        values = utc_values(series)
    else:
        values = series.to_numpy()
    if values.dtype == object:
        values = _fixed_width(values, recorded, series.name)
    else:
        values = _as_recorded(values, recorded)
    return values


def fixed_columns(df, names):
    """The columns ``names`` of ``df`` kept as bcolz keeps them (for
    ``fromdataframe`` and ``ctable.append``).

    Returns
    -------
    callable
        ``fixed(name)``: column ``name`` as :func:`series_values` makes it,
        with the dtype :func:`todataframe` recorded for it.

    Raises
    ------
    ValueError
        If a name is not a column of ``df`` (at once, before any column is
        converted).
    """
    missing = [n for n in names if n not in df.columns]
    if missing:
        raise ValueError(f"the DataFrame lacks the columns {missing}")
    recorded = df.attrs.get(DTYPES_ATTR) if isinstance(df.attrs, dict) else None
    recorded = recorded if isinstance(recorded, dict) else {}
    return lambda name: series_values(df[name], recorded.get(name))


def fromdataframe(table_class, df, **kwargs):
    """A ctable holding the columns of a pandas DataFrame.

    Parameters
    ----------
    table_class : type
        The ctable class to make (``ctable.fromdataframe`` passes its own).
    df : pandas.DataFrame
    names : list of str, optional
        Columns to take, in this order (default all, as in ``df.columns``).
    strings : {'fixed', 'vlen'}, vlen or dict, optional
        What str and bytes columns become.  Default: pandas ``StringDtype``
        columns whose missing value is ``pd.NA`` (``string[python]``,
        ``string[pyarrow]``) 'vlen', so that they come back with their dtype
        and missing values, and other columns (pandas 3's default ``str``
        columns included) 'fixed'.  'fixed' (bcolz's way: fixed-width
        ``U``/``S``), 'vlen' (columns of items of any length, which bcolz
        cannot read; missing values kept as None), a
        :class:`~bcolz_store.vlen` (its zstd level, dictionary and nullable;
        the kind from the data), or a dict of column -> one of those (other
        columns 'fixed').  A ``category`` column of str or bytes becomes a
        categorical column in every case.  See :mod:`.pandas_columns`.
    kwargs
        Other ctable constructor parameters (``rootdir``, ``cparams``...).

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        When pandas is not installed.
    ValueError
        Column labels that are not valid column names, an unknown ``strings``,
        both ``strings`` columns and ``dtype``, a str or bytes value ending in
        NUL in a column made fixed-width (a fixed width would cut it; pass
        ``strings='vlen'``), or as :class:`ctable`.

    Notes
    -----
    Compatibility: bcolz turned str columns into ``U<n>`` too, but kept
    bytes columns as objects; here they become ``S<n>``, so an ``S`` column
    survives a round trip.  The index is not stored, as in bcolz.
    """
    _import_pandas()
    names = kwargs.pop("names", None)
    strings = kwargs.pop("strings", None)
    if names is None:
        names = list(df.columns)
    columns, dtypes, col_attrs = frame_columns(df, names, strings, fixed_columns(df, names))
    if dtypes and "dtype" in kwargs:
        raise ValueError("pass either dtype or strings (not both) to fromdataframe")
    table = table_class(columns, list(names), **({"dtype": dtypes} if dtypes else {}), **kwargs)
    for name, values in col_attrs.items():
        for key, value in values.items():
            table.cols[name].attrs[key] = value
    if col_attrs:
        table.flush()
    return table


def todataframe(table, columns=None, orient="columns", rows=None, dtype_backend=None):
    """A pandas DataFrame holding the columns of ``table``.

    Parameters
    ----------
    table : ctable
    columns : sequence of str, optional
        With ``orient='columns'``: the columns to take (default all).  With
        ``orient='index'``: the labels of the DataFrame's columns (one per
        row of the table).
    orient : {'columns', 'index'}, default 'columns'
        'index' puts each table column in a row of the DataFrame.
    rows : numpy.ndarray of int, optional
        Only these rows (sorted positions), which index the DataFrame
        (``orient='columns'`` only).
    dtype_backend : {None, 'pyarrow'}, default None
        None: numpy dtypes (object columns for strings and nested items,
        pandas' masked dtypes for nullable ones). 'pyarrow': every column
        an ``ArrowDtype`` column over the Arrow arrays the table's columns
        give (``pyarrow.table(table)``'s), with no Python object per item
        (``orient='columns'`` only).

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    ImportError
        When pandas is not installed (or pyarrow, for ``dtype_backend='pyarrow'``).
    ValueError
        An unknown ``orient`` or ``dtype_backend``, a column of items that are
        arrays (atoms of more than one value), a ``timezone`` column attr
        naming a zone pandas does not know, ``rows`` with ``orient='index'``,
        or ``dtype_backend='pyarrow'`` with ``orient='index'``.
    KeyError
        An unknown column name.
    """
    pd = _import_pandas()
    if dtype_backend not in (None, "pyarrow"):
        raise ValueError(f"dtype_backend must be None or 'pyarrow', not {dtype_backend!r}")
    if dtype_backend == "pyarrow":
        return _arrow_frame(pd, table, columns, orient, rows)
    if orient == "index":
        keys = table.names
    elif orient == "columns":
        keys = table.names if columns is None else list(columns)
        columns = None
    else:
        raise ValueError(f"orient must be 'columns' or 'index', not {orient!r}")
    if rows is not None and orient == "index":
        raise ValueError("rows (a where condition) can only be taken with orient='columns'")
    for key in keys:
        shape = table.cols[key].shape[1:]
        if shape:
            raise ValueError(f"column {key!r} holds items of shape {shape}; a DataFrame "
                             f"column holds one value per row (leave it out with columns=)")
    data = frame_data(table, keys, pd, slice(None) if rows is None else rows)
    df = pd.DataFrame.from_dict(data, columns=columns, orient=orient)   # (vlen: as pandas had)
    if rows is not None:
        df.index = pd.Index(rows, dtype=np.int64)
    if orient == "columns":
        df.attrs[DTYPES_ATTR] = {key: table.cols[key].dtype.str for key in keys}
    return df


def _arrow_frame(pd, table, columns, orient, rows):
    """:func:`todataframe` with ``dtype_backend='pyarrow'``."""
    if orient != "columns":
        raise ValueError("dtype_backend='pyarrow' makes a DataFrame of orient='columns' only")
    pa = require("pyarrow", "arrow", "todataframe(dtype_backend='pyarrow')")
    keys = table.names if columns is None else list(columns)
    cols = {key: table.cols[key] for key in keys}       # (KeyError for an unknown name)
    arrays = {key: pa.chunked_array(list(column_arrays(pa, key, col, block_rows(col))),
                                    type=column_field(pa, key, col).type)
              for key, col in cols.items()}
    frame = pa.table(arrays) if arrays else pa.table({})
    if rows is not None:
        frame = frame.take(pa.array(np.asarray(rows, dtype=np.int64)))
    df = frame.to_pandas(types_mapper=pd.ArrowDtype)
    if rows is not None:
        df.index = pd.Index(rows, dtype=np.int64)
    return df

