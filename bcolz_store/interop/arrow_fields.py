"""The Arrow field a column came from, kept so that it goes back out as it came in.

A column read from Arrow data (a Parquet file, a stream) whose Arrow field is
not what the column would be written as by default (``large_string`` where
``string`` would do, a dictionary's ``int32`` indices where the codes are
``int8``, ``time32``/``time64`` kept as ``timedelta64``, a field marked
non-nullable, field metadata, a list's item name...) records that field in its
attrs, under :data:`FIELD_ATTR`: the Arrow IPC serialization of a one-field
schema, as base64.  Writing the column to Arrow again casts its arrays to the
recorded type and declares the recorded field, so the file comes back with
the same schema.  A column whose default field is the source's records
nothing.

Source: this library's own metadata (docs/format.md, "Column attrs from
Arrow"); the IPC schema encoding is Arrow's (pyarrow ``Schema.serialize``).
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["FIELD_ATTR", "cast_to", "dump_field", "load_field", "recorded_field"]

FIELD_ATTR = "bcolz_store.arrow"


def dump_field(pa, field) -> str:
    """``field`` (a pyarrow Field) as the text :data:`FIELD_ATTR` holds."""
    return base64.b64encode(pa.schema([field]).serialize().to_pybytes()).decode("ascii")


def load_field(pa, text, name: str = "?"):
    """The pyarrow Field :func:`dump_field` wrote, or None when ``text`` is not one
    (a damaged attr is ignored: the column is then written with its default
    type, never refused)."""
    if not isinstance(text, str):
        return None
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
        schema = pa.ipc.read_schema(pa.py_buffer(raw))
    except (binascii.Error, UnicodeEncodeError, ValueError, pa.ArrowException):
        return None
    if len(schema) != 1:
        return None
    return schema.field(0).with_name(name)


def recorded_field(pa, col, name: str):
    """The recorded Arrow field of column ``col`` (renamed ``name``), or None."""
    attrs = getattr(col, "attrs", None)
    if attrs is None or FIELD_ATTR not in attrs:
        return None
    return load_field(pa, attrs[FIELD_ATTR], name)


def _time_cast(pa, arr, typ):
    """``arr`` (durations, or int64 counts) as the time32/time64 ``typ``: the
    counts of its unit, reinterpreted (Arrow casts durations to times no way)."""
    ints = arr.cast(pa.int64()) if not pa.types.is_integer(arr.type) else arr
    width = pa.int32() if pa.types.is_time32(typ) else pa.int64()
    return ints.cast(width).view(typ)


def cast_to(pa, arr, typ, name: str):
    """``arr`` as Arrow type ``typ`` (the recorded one).

    Raises
    ------
    ValueError
        When the values do not fit ``typ`` (the column changed since it was
        read): the message names the column and the attr to delete.
    """
    if arr.type.equals(typ):
        return arr
    try:
        if (pa.types.is_time32(typ) or pa.types.is_time64(typ)) and \
                not (pa.types.is_time32(arr.type) or pa.types.is_time64(arr.type)):
            return _time_cast(pa, arr, typ)
        return arr.cast(typ)
    except (pa.ArrowException, TypeError, ValueError) as err:
        raise ValueError(f"column {name!r}: its values cannot be written as the Arrow type "
                         f"{typ} it was read as ({err}); delete its attr {FIELD_ATTR!r} to "
                         f"write it as {arr.type}") from None
