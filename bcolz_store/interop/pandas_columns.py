"""pandas columns that bcolz has no column kind for, kept exactly: text and bytes
of any length (vlen columns) and categoricals.

``fromdataframe(df, strings='vlen')`` stores:

=============================== ====================================== ==================
pandas column                   stored as                              ``todataframe``
=============================== ====================================== ==================
``object`` of str (None/NaN)    vlen 'str' column, missing -> None     ``object``, same
``object`` of bytes             vlen 'bytes' column                    ``object``, same
``str`` / ``string`` (any       vlen 'str' column                      the same dtype
storage, NaN or NA)
``category`` of str or bytes    categorical column: codes + categories ``category``, same
                                (kinds/category/meta.py)              categories/order
=============================== ====================================== ==================

Whatever ``strings`` says, a timezone-aware datetime column is stored as its
UTC datetime64 values with the zone in the column attr ``timezone`` (as a
zoned Arrow timestamp is read), and ``todataframe`` gives it back in that
zone; a zone with no name that pandas reads back (a ``dateutil`` file) keeps
the column as objects (``Timestamp``), as before.

Each such column gets the attribute ``bcolz_store.pandas`` (JSON) recording
the pandas dtype (and its storage and missing-value marker), which
``todataframe`` uses to give the column back as it was; columns without it
come back as ``object`` (str or bytes, None for missing).  With the default
``strings='fixed'`` str and bytes columns take bcolz's fixed-width conversion
instead; a ``category`` column of str or bytes becomes a categorical column
whatever ``strings`` says (bcolz stored it as pickled objects, a missing
value as NaN; ``tofixed`` writes a copy bcolz reads).

pandas is imported by the callers (:mod:`.pandas`); nothing here imports it.
"""

from __future__ import annotations

import datetime
import math

import numpy as np

from ..kinds.category.types import pandas_categorical
from ..kinds.struct.interop_pandas import composite_column, composite_frame_values
from ..kinds.nullable.interop_pandas import masked_column, nullable_series
from ..kinds.vlen.types import vlen
from ..kinds.list.interop_pandas import list_frame_values, list_values

__all__ = ["PANDAS_ATTR", "ZONE_ATTR", "frame_columns", "frame_data", "series_zone",
           "utc_values", "vlen_values"]

PANDAS_ATTR = "bcolz_store.pandas"
ZONE_ATTR = "timezone"
_ZONE_UNITS = ("s", "ms", "us", "ns")
_STRINGS = ("fixed", "vlen")


def _is_missing(value) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    return type(value).__name__ in ("NAType", "NaTType")


def _object_kind(values: np.ndarray):
    """'str' or 'bytes' when every present item is one, else None; and the
    missing-value marker found first ('None' or 'nan'; None when none is missing)."""
    types, marker = set(), None
    for v in values.tolist():
        if _is_missing(v):
            if marker is None:
                marker = "None" if v is None else "nan"
            continue
        types.add(type(v))
        if len(types) > 1:
            break
    if types <= {str} or (types and all(issubclass(t, str) for t in types)):
        return "str", marker
    if types and all(issubclass(t, bytes) for t in types):
        return "bytes", marker
    return None, marker


def _categorical(series):
    """``(items, category type)`` of a category column of str or bytes, else None."""
    if type(series.dtype).__name__ != "CategoricalDtype":
        return None
    cats = list(series.cat.categories)
    if not (all(isinstance(c, str) for c in cats) or all(isinstance(c, bytes) for c in cats)) \
            or not cats:
        return None
    return pandas_categorical(series)


def vlen_values(series):
    """``(items, kind, record)`` of a pandas string or object-of-str/bytes column,
    or None for any other column.

    ``items`` is an object array with None for every missing value; ``record``
    the JSON stored in the column's ``bcolz_store.pandas`` attribute.
    """
    dtype = series.dtype
    name = type(dtype).__name__
    found = _categorical(series)
    if found is not None:
        return found[0], found[1].kind, {"dtype": "category"}
    if name == "StringDtype":
        na = "NA" if type(dtype.na_value).__name__ == "NAType" else "nan"
        storage = dtype.storage
        if storage == "pyarrow_numpy":      # pandas 2.1/2.2's name for pyarrow with NaN
            storage = "pyarrow"
        record = {"dtype": "string", "storage": storage, "na_value": na}
        kind = "str"
    elif dtype == np.dtype(object):
        values = series.to_numpy(dtype=object)
        kind, marker = _object_kind(values)
        if kind is None:
            return None
        record = {"dtype": "object", "na_value": marker or "None"}
    else:
        return None
    items = series.to_numpy(dtype=object, copy=True)
    missing = np.fromiter(map(_is_missing, items.tolist()), dtype=bool, count=len(items))
    items[missing] = None
    return items, kind, record


def _zone_name(tz):
    """A name pandas and Arrow read back for the time zone ``tz``, else None."""
    for attr in ("key", "zone"):            # zoneinfo, pytz
        name = getattr(tz, attr, None)
        if isinstance(name, str) and name:
            return name
    try:
        offset = tz.utcoffset(None)         # fixed offsets only (named zones give None)
    except (TypeError, ValueError):
        return None
    if offset is None or offset.total_seconds() % 60:
        return None
    if offset == datetime.timedelta(0):
        return "UTC"
    minutes = int(offset.total_seconds() // 60)
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def series_zone(series):
    """The zone of a timezone-aware datetime column, by name, else None."""
    tz = getattr(series.dtype, "tz", None)
    return None if tz is None else _zone_name(tz)


def utc_values(series) -> np.ndarray:
    """The values of a timezone-aware datetime column as naive UTC datetime64."""
    return series.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()


def _zoned(pd, values: np.ndarray, col, key):
    """UTC datetime64 ``values`` of a column with a ``timezone`` attr, in that zone."""
    zone = col.attrs[ZONE_ATTR] if ZONE_ATTR in col.attrs else None
    unit, count = np.datetime_data(values.dtype)
    if not isinstance(zone, str) or not zone or count != 1 or unit not in _ZONE_UNITS:
        return values
    try:
        return pd.Series(values, copy=False).dt.tz_localize("UTC").dt.tz_convert(zone)
    except Exception as err:        # pandas raises several kinds for an unknown zone
        raise ValueError(f"column {key!r}: its timezone attr {zone!r} is no time zone pandas "
                         f"knows ({err}); remove or fix the attr to read it") from None


def _spec(strings, name, series=None):
    """The vlen type asked for column ``name``, or 'fixed'.  With ``strings``
    None (the default), a pandas ``StringDtype`` column whose missing value is
    ``pd.NA`` (``string[python]``, ``string[pyarrow]``) is 'vlen' (a fixed
    width can keep neither its dtype nor its missing values) and any other
    column (pandas 3's default ``str`` columns included) 'fixed'."""
    if isinstance(strings, dict):
        return strings.get(name, "fixed")
    if strings is None:
        dtype = getattr(series, "dtype", None)
        is_na_string = type(dtype).__name__ == "StringDtype" and \
            type(dtype.na_value).__name__ == "NAType"
        return "vlen" if is_na_string else "fixed"
    return strings


def frame_columns(df, names, strings, fixed):
    """The columns of a new ctable from ``df``: values, per-column dtypes and attrs.

    Parameters
    ----------
    df : pandas.DataFrame
    names : list of str
    strings : {'fixed', 'vlen'}, vlen, dict or None
        What becomes of str/bytes columns: None (pandas ``StringDtype``
        columns with ``pd.NA`` 'vlen', others 'fixed'), 'fixed' (bcolz's
        fixed width),
        'vlen', a :class:`~bcolz_store.vlen` (its level, dictionary and
        nullable, the kind from the data), or a dict of column -> one of
        those (unnamed columns 'fixed').
    fixed : callable
        ``fixed(name)``: the values of a column kept as bcolz keeps it.

    Returns
    -------
    (list, dict, dict)
        The column values; ``{name: dtype}`` for vlen columns;
        ``{name: {attr: value}}`` to set on them (and the ``timezone`` of
        zoned datetime columns).

    Raises
    ------
    ValueError
        An unknown ``strings`` value.
    """
    columns, dtypes, attrs = [], {}, {}
    for name in names:
        spec = _spec(strings, name, df[name])
        if not (isinstance(spec, vlen) or spec in _STRINGS):
            raise ValueError(f"strings must be 'fixed', 'vlen', a vlen type or a dict of them "
                             f"(column {name!r}: {spec!r})")
        found = list_values(df[name])   # lists, whatever ``strings`` says (pandas_lists.py)
        if found is not None:
            columns.append(found[0])
            dtypes[name], attrs[name] = found[1], {PANDAS_ATTR: found[2]}
            continue
        found = _categorical(df[name])
        if found is not None:           # codes + categories, whatever ``strings`` says
            dtypes[name] = found[1]
            columns.append(found[0])
            continue
        found = composite_column(df[name])     # decimal or struct (pandas_structs.py)
        if found is not None:
            columns.append(found[0])
            dtypes[name] = found[1]
            if found[2]:
                attrs[name] = found[2]
            continue
        found = masked_column(df[name])     # Int64, boolean, Float64...: nullable
        if found is not None:
            columns.append(found[0])
            attrs[name] = {PANDAS_ATTR: found[1]}
            continue
        found = vlen_values(df[name]) if spec != "fixed" else None
        if found is None:
            columns.append(fixed(name))
            zone = series_zone(df[name])
            if zone is not None:
                attrs[name] = {ZONE_ATTR: zone}
            continue
        items, kind, record = found
        given = spec if isinstance(spec, vlen) else vlen()
        if record["dtype"] == "object" and isinstance(spec, vlen) and \
                all(v is None for v in items.tolist()):
            kind = given.kind           # no item to tell: the kind asked for
        nullable = True if given.nullable is None else given.nullable
        dtypes[name] = vlen(kind, given.level, given.dictionary, nullable, given.dict_size)
        columns.append(items)
        attrs[name] = {PANDAS_ATTR: record}
    return columns, dtypes, attrs


def _string_dtype(pd, storage: str, na: str):
    """The pandas ``StringDtype`` of ``storage`` and missing value ``na`` ('NA'
    or 'nan'), or None where this pandas has none.

    pandas 2.3 and later take ``na_value``; 2.1 and 2.2 name pyarrow strings
    with NaN ``'pyarrow_numpy'``; 2.0 has strings with NA only.
    """
    if storage not in ("python", "pyarrow"):
        storage = "python"
    try:
        return pd.StringDtype(storage, na_value=pd.NA if na == "NA" else np.nan)
    except TypeError:                       # pandas < 2.3: no na_value
        pass
    if na == "NA":
        return pd.StringDtype(storage)
    if storage == "pyarrow":
        try:
            return pd.StringDtype("pyarrow_numpy")
        except (TypeError, ValueError):     # pandas 2.0
            pass
    return None


def _pandas_strings(pd, items: np.ndarray, record: dict):
    """The items of a column recorded as a pandas string column, as one again.

    Where this pandas has no string dtype of the recorded storage and missing
    value (NaN strings before pandas 2.1, python NaN strings before 2.3), the
    column is ``object`` with NaN for missing items, as pandas itself keeps
    such text; where the storage's library is missing (pyarrow), python
    storage.
    """
    na = "NA" if record.get("na_value") == "NA" else "nan"
    storage = record.get("storage", "python")
    try:
        dtype = _string_dtype(pd, storage, na)
    except ImportError:                     # pyarrow storage without pyarrow
        dtype = _string_dtype(pd, "python", na)
    if dtype is None:
        items[np.equal(items, None)] = np.nan
        return pd.Series(items, dtype=object, copy=False)
    return pd.array(items, dtype=dtype)


def frame_data(table, names, pd, rows: slice = slice(None)) -> dict:
    """``{name: values}``: rows ``rows`` of the columns ``names`` of ``table``,
    vlen and categorical columns as pandas had them.

    A column recorded by :func:`frame_columns` gets its pandas dtype back; any
    other vlen column becomes an ``object`` column (None for missing items); a
    categorical column becomes a ``pandas.Categorical`` of its codes (the
    items are not decoded); a datetime64 column with a ``timezone`` attr
    becomes timezone-aware in that zone.

    Raises
    ------
    ValueError
        When a ``timezone`` attr names a zone pandas does not know.
    """
    out = {}
    for key in names:
        col = table.cols[key]
        if getattr(col, "listtype", None) is not None:
            out[key] = list_frame_values(pd, col, rows, key, col.attrs[PANDAS_ATTR]
                                         if PANDAS_ATTR in col.attrs else None)
            continue
        if getattr(col, "category", None) is not None:
            cat = col.category
            out[key] = pd.Categorical.from_codes(col.codes[rows], categories=cat.categories,
                                                 ordered=cat.ordered)
            continue
        if getattr(col, "column_type", None) is not None:     # decimal or struct
            out[key] = composite_frame_values(pd, col, col[rows])
            continue
        values = col[rows]
        if getattr(col, "nullable", False) and isinstance(values, np.ma.MaskedArray):
            out[key] = nullable_series(pd, values, col.attrs[PANDAS_ATTR] if PANDAS_ATTR
                                       in col.attrs else {})
            continue
        if isinstance(values, np.ndarray) and values.dtype.kind == "M":
            values = _zoned(pd, values, col, key)
        if getattr(col, "vlen", None) is None or not isinstance(values, np.ndarray):
            out[key] = values
            continue
        record = col.attrs[PANDAS_ATTR] if PANDAS_ATTR in col.attrs else {}
        record = record if isinstance(record, dict) else {}
        items = values.astype(object)
        if record.get("dtype") == "string" and col.vlen.kind == "str":
            out[key] = _pandas_strings(pd, items, record)
            continue
        if record.get("na_value") == "nan":
            items[np.equal(items, None)] = np.nan
        out[key] = pd.Series(items, dtype=object, copy=False)
    return out
