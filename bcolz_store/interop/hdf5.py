"""HDF5 (PyTables Table) <-> ctable.

PyTables is an optional extra (``pip install 'bcolz_store[hdf5]'``); it is
imported only when these functions run, and its absence gives an
``ImportError`` that names the extra.

Rows travel in blocks (the Table's chunkshape when reading, the columns'
chunklen when writing), never one by one.  User attributes are copied both
ways.

HDF5 Tables have no unicode type, so unicode (``U``) columns are stored as
UTF-8 bytes (``S``, as wide as their longest value), which any HDF5 reader
can decode, and the Table's attribute ``bcolz_store_utf8`` (JSON,
``{column: numpy dtype str}``) lets :func:`fromhdf5` give them back with
their dtype, exactly (lone surrogates travel with 'surrogatepass').  bcolz
instead let PyTables cast them to ASCII bytes, which fails or loses text.
datetime64, timedelta64 and object columns cannot be written at all.

A PyTables Table holds one byte order: columns of the other one (big-endian
on most machines) are stored in native order, and the attribute
``bcolz_store_byteorder`` (JSON, ``{column: numpy dtype str}``) gives them
back their dtype.  Attributes travel both ways; one that JSON cannot hold
(bytes, for instance) is refused, naming it, rather than changed.

Source: bcolz 1.x ``ctable.fromhdf5`` / ``tohdf5``.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import struct
import threading

import numpy as np

from ..errors import (DatasetExistsError, FormatError, MissingDependencyError, NodeKindError,
                      raised_in)

__all__ = ["BYTEORDER_ATTR", "PickledAttribute", "UTF8_ATTR", "fromhdf5", "hdf5_attrs",
           "no_unpickling", "plain_attr", "reading_hdf5", "tohdf5"]

HDF5_EXTRA = "bcolz_store[hdf5]"
#: The Table attribute naming the unicode columns stored as UTF-8 bytes.
UTF8_ATTR = "bcolz_store_utf8"
#: The Table attribute naming the columns stored in the other byte order.
BYTEORDER_ATTR = "bcolz_store_byteorder"
#: The Table attribute listing the attributes stored as JSON text (dicts, lists,
#: None: values PyTables would otherwise pickle).
JSON_ATTR = "bcolz_store_json"
_OWN_ATTRS = (UTF8_ATTR, BYTEORDER_ATTR, JSON_ATTR)
MAX_CODE_POINT = 0x10FFFF


def _import_tables():
    try:
        import tables
    except ImportError as err:
        raise MissingDependencyError(f"PyTables is needed for HDF5 conversions; install it, "
                                     f"e.g. `pip install '{HDF5_EXTRA}'`") from err
    return tables


# --- attributes PyTables would unpickle ---------------------------------------------
#
# PyTables stores an attribute value that HDF5 cannot hold natively as a pickle
# (a string ending in '.'), and tables.attributeset unpickles every such string
# as soon as a node's attribute set is read: opening a file reads the root's,
# getting a node reads the node's.  Unpickling runs code, so while bcolz_store
# reads an HDF5 file, the ``pickle`` that tables.attributeset calls is one whose
# ``loads`` gives back the raw bytes wrapped in :class:`PickledAttribute`
# instead (in this thread only; elsewhere PyTables unpickles as it always did).

class PickledAttribute:
    """An HDF5 attribute that PyTables would have unpickled: its raw bytes."""

    __slots__ = ("raw",)

    def __init__(self, raw: bytes):
        self.raw = bytes(raw)

    def __repr__(self) -> str:
        return f"<pickled attribute of {len(self.raw)} bytes, not unpickled>"


_refusing = threading.local()


class _PickleGate:
    """Stands in for the ``pickle`` module inside tables.attributeset."""

    def __getattr__(self, name):
        return getattr(pickle, name)

    @staticmethod
    def loads(data, *args, **kwargs):
        if getattr(_refusing, "depth", 0):
            return PickledAttribute(data)
        return pickle.loads(data, *args, **kwargs)


@contextlib.contextmanager
def no_unpickling(tables=None):
    """While inside, PyTables (in this thread) gives pickled attributes back as
    :class:`PickledAttribute` instead of unpickling them.

    Parameters
    ----------
    tables : module, optional
        PyTables (imported when not given).

    Raises
    ------
    ImportError
        When PyTables is not installed.
    """
    tables = tables or _import_tables()
    attributeset = tables.attributeset
    if not isinstance(attributeset.pickle, _PickleGate):
        attributeset.pickle = _PickleGate()
    _refusing.depth = getattr(_refusing, "depth", 0) + 1
    try:
        yield
    finally:
        _refusing.depth -= 1


@contextlib.contextmanager
def reading_hdf5(filepath, tables=None):
    """Read an HDF5 file: no unpickling, and PyTables' and libhdf5's complaints
    about the file (``HDF5ExtError``, the ``RecursionError`` of deep JSON, a
    built-in exception raised inside PyTables by a damaged node...) as
    :class:`~bcolz_store.errors.FormatError` naming it; ``NoSuchNodeError``
    passes.

    Raises
    ------
    FormatError
        For those complaints.
    """
    tables = tables or _import_tables()
    with no_unpickling(tables):
        try:
            yield
        except tables.HDF5ExtError as err:
            raise FormatError(f"HDF5 file '{filepath}': not a readable HDF5 file: "
                              f"{' '.join(str(err).split())[:300]}") from None
        except RecursionError:
            raise FormatError(f"HDF5 file '{filepath}': holds values nested too deeply to "
                              f"read") from None
        except tables.NoSuchNodeError:
            raise                       # documented: the node asked for is not there
        except (TypeError, ValueError, LookupError, AttributeError, struct.error) as err:
            # PyTables' own code tripping over a damaged file (a node whose
            # class attribute names another kind, a malformed attribute)
            if not raised_in(err).startswith(os.path.dirname(os.path.abspath(tables.__file__))
                                             + os.sep):
                raise
            raise FormatError(f"HDF5 file '{filepath}': damaged, PyTables cannot read it "
                              f"({type(err).__name__}: {' '.join(str(err).split())[:300]})") \
                from err


def fromhdf5(table_class, filepath, nodepath="/ctable", **kwargs):
    """A ctable holding a PyTables Table (a compound HDF5 dataset).

    Parameters
    ----------
    table_class : type
        The ctable class to make (``ctable.fromhdf5`` passes its own).
    filepath : str
        The HDF5 file.
    nodepath : str, default '/ctable'
        The Table inside the file.
    names : list of str, optional
        Columns to take (default all, in the Table's order).
    drop_attrs : bool, default False
        Leave the node's attributes behind (needed when one holds a value
        JSON cannot hold, such as bytes).
    kwargs
        Other ctable constructor parameters; ``expectedlen`` defaults to the
        number of rows.

    Returns
    -------
    ctable

    Raises
    ------
    ImportError
        When PyTables is not installed.
    OSError
        When the file cannot be opened.
    tables.NoSuchNodeError
        When ``nodepath`` is not in the file.
    NodeKindError
        When the node is not a Table (an Array, CArray, EArray or a group;
        a TypeError): the message names it and the file's Tables.
    ValueError
        When an attribute holds a value JSON cannot hold (the message names
        it), unless ``drop_attrs``.
    FormatError
        When the file is not a readable HDF5 file, an attribute holds a
        pickle (never unpickled; a user attribute is left behind with
        ``drop_attrs``), the ``bcolz_store_utf8`` or
        ``bcolz_store_byteorder`` attribute does not fit the Table, or a
        column the first names holds bytes that are not UTF-8 or too long.
    """
    tb = _import_tables()
    filepath = os.fspath(filepath)
    drop_attrs = bool(kwargs.pop("drop_attrs", False))
    with reading_hdf5(filepath, tb), tb.open_file(filepath, mode="r") as h5:
        node = h5.get_node(nodepath)
        if not isinstance(node, tb.Table):
            raise NodeKindError(_not_a_table(tb, h5, node, filepath))
        names = list(kwargs.pop("names", None) or node.colnames)
        kwargs.setdefault("expectedlen", max(len(node), 1))
        stored = {name: node.dtype.fields[name][0] for name in node.colnames}
        text = _read_marker(node, stored, filepath)
        swapped = _read_byteorder(node, stored, filepath)
        attrs = {} if drop_attrs else hdf5_attrs(node, filepath)
        atoms = {name: np.dtype((text[name], stored[name].shape)) if name in text
                 else swapped.get(name, stored[name]) for name in names}
        empty = [np.zeros(0, dtype=atoms[name]) for name in names]
        table = table_class(empty, names, **kwargs)
        blen = node.chunkshape[0] if node.chunkshape else 65536
        for start in range(0, len(node), blen):
            block = node.read(start, min(start + blen, len(node)))
            table.append([_decode(block[name], text[name], name, filepath)
                          if name in text else block[name].astype(atoms[name].base)
                          for name in names])
        table.attrs.update(attrs)
    table.flush()
    return table


def _not_a_table(tb, h5, node, filepath) -> str:
    """Why ``node`` gives no ctable: its kind, the Tables the file holds, and
    how an array is read."""
    kind = type(node).__name__
    article = "an" if kind[:1] in "AEIOU" else "a"
    found = [n._v_pathname for n in h5.walk_nodes("/", classname="Table")]
    shown = ", ".join(found[:20]) + (", ..." if len(found) > 20 else "")
    text = (f"HDF5 file '{filepath}': node '{node._v_pathname}' is {article} {kind}, not a "
            f"Table; a ctable is read from a Table (this file holds "
            f"{shown or 'no Table'})")
    if isinstance(node, tb.Array):
        text += (f"; read an {kind} as a carray with bcolz_store.converters.convert(file, "
                 f"rootdir, nodepath='{node._v_pathname}') or bcolz-store convert --node")
    return text


def hdf5_attrs(node, filepath) -> dict:
    """The user attributes of an HDF5 node as attrs (JSON values).

    Parameters
    ----------
    node : tables.Node
    filepath : str
        The file, for messages.

    Returns
    -------
    dict
        Every attribute but bcolz_store's own (``bcolz_store_utf8``,
        ``bcolz_store_byteorder``); numpy scalars and arrays as Python values.

    Raises
    ------
    FormatError
        When an attribute holds a pickle (PyTables' way to store other
        Python objects), naming it and the file: unpickling runs code, so it
        is never unpickled (pass ``drop_attrs=True`` to read the data
        without attrs).  The node must have been got inside
        :func:`no_unpickling`.
    ValueError
        When an attribute holds a value JSON cannot hold (bytes, say),
        naming it: it is refused rather than changed (pass
        ``drop_attrs=True`` to read the data without attrs).
    """
    out = {}
    as_json = _json_names(node, filepath)
    for key in node.attrs._f_list():
        if key in _OWN_ATTRS:
            continue
        value = _jsonable(plain_attr(node, key, filepath))
        if key in as_json:
            try:
                value = json.loads(value)
            except RecursionError:
                raise FormatError(f"HDF5 file '{filepath}', node '{node._v_pathname}': "
                                  f"attribute {key!r} is JSON nested too deeply") from None
            except (TypeError, ValueError) as err:
                raise FormatError(f"HDF5 file '{filepath}', node '{node._v_pathname}': "
                                  f"attribute {key!r} is not JSON ({err})") from None
        try:
            json.dumps(value, allow_nan=True)
        except (TypeError, ValueError) as err:
            raise ValueError(f"HDF5 file '{filepath}', node '{node._v_pathname}': attribute "
                             f"{key!r} holds {type(value).__name__} {value!r:.60}, which "
                             f"attrs (JSON) cannot hold exactly ({err}); pass "
                             f"drop_attrs=True (bcolz-store convert --drop-attrs) to read "
                             f"the data without the attributes") from None
        out[key] = value
    return out


def _json_names(node, filepath: str) -> set:
    """The attributes that :data:`JSON_ATTR` says are stored as JSON text."""
    if JSON_ATTR not in node.attrs._f_list():
        return set()
    try:
        names = json.loads(_jsonable(plain_attr(node, JSON_ATTR, filepath)))
    except FormatError:
        raise
    except (TypeError, ValueError, RecursionError):
        names = None
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise FormatError(f"HDF5 file '{filepath}', node '{node._v_pathname}': attribute "
                          f"{JSON_ATTR} must be a JSON list of attribute names")
    return set(names)


def _native(value) -> bool:
    """True for values PyTables stores as HDF5 attributes (not as pickles)."""
    return isinstance(value, (bool, int, float, str)) and not (
        isinstance(value, int) and not isinstance(value, bool) and
        not -2**63 <= value < 2**64)


def plain_attr(node, key: str, filepath: str):
    """The value of attribute ``key`` of a PyTables ``node``.

    Raises
    ------
    FormatError
        When the attribute holds a pickle (never unpickled).
    """
    value = node.attrs[key]
    if isinstance(value, PickledAttribute) or (
            isinstance(value, np.ndarray) and value.dtype.hasobject):
        raise FormatError(f"HDF5 file '{filepath}', node '{node._v_pathname}': attribute "
                          f"{key!r} holds a Python pickle, which is never unpickled "
                          f"(unpickling runs code); pass drop_attrs=True (bcolz-store convert "
                          f"--drop-attrs) to read the data without the attributes")
    return value


def _json_attr(node, attr: str, filepath: str):
    """``(the JSON object in attribute attr, where)``: ``({}, where)`` when the
    node has no such attribute; FormatError naming the file when it is not a
    JSON object."""
    where = f"HDF5 file '{filepath}', node '{node._v_pathname}'"
    if attr not in node.attrs._f_list():
        return {}, where
    try:
        marker = json.loads(_jsonable(plain_attr(node, attr, filepath)))
    except RecursionError:
        raise FormatError(f"{where}: attribute {attr} is JSON nested too deeply") from None
    except FormatError:
        raise
    except (TypeError, ValueError) as err:
        raise FormatError(f"{where}: attribute {attr} is not JSON ({err})") from None
    if not isinstance(marker, dict):
        raise FormatError(f"{where}: attribute {attr} must be a JSON object")
    return marker, where


def _read_byteorder(node, stored: dict, filepath: str) -> dict:
    """``{column: dtype}`` of the columns the byte-order attribute gives back
    their own byte order (empty without one); FormatError when it does not
    fit the Table."""
    marker, where = _json_attr(node, BYTEORDER_ATTR, filepath)
    out = {}
    for name, spec in marker.items():
        try:
            dtype = np.dtype(spec) if isinstance(spec, str) and name in stored else None
        except TypeError:
            dtype = None
        atom = stored.get(name)
        if dtype is None or dtype.kind != atom.base.kind or \
                dtype.itemsize != atom.base.itemsize or dtype.hasobject:
            raise FormatError(f"{where}: attribute {BYTEORDER_ATTR} gives column {name!r} "
                              f"{spec!r}; the same type in another byte order is expected")
        out[name] = np.dtype((dtype, atom.shape)) if atom.shape else dtype
    return out


def _read_marker(node, stored: dict, filepath: str) -> dict:
    """``{column: unicode dtype}`` from the Table's UTF-8 marker (empty without
    one); FormatError naming the file when it does not fit the Table."""
    marker, where = _json_attr(node, UTF8_ATTR, filepath)
    text = {}
    for name, spec in marker.items():
        if name not in stored:
            raise FormatError(f"{where}: attribute {UTF8_ATTR} names '{name}', "
                              f"which is no column")
        try:
            dtype = np.dtype(spec) if isinstance(spec, str) else None
        except TypeError:
            dtype = None
        if dtype is None or dtype.kind != "U" or stored[name].base.kind != "S":
            raise FormatError(f"{where}: attribute {UTF8_ATTR} gives column '{name}' "
                              f"{spec!r}; a unicode dtype over a bytes column is expected")
        text[name] = dtype
    return text


def _decode(values: np.ndarray, dtype: np.dtype, name: str, filepath: str) -> np.ndarray:
    """UTF-8 bytes back to the unicode ``dtype`` (the shape is kept)."""
    try:
        decoded = np.char.decode(values, "utf-8", "surrogatepass")
    except UnicodeDecodeError as err:
        raise FormatError(f"HDF5 file '{filepath}': column '{name}' holds bytes that "
                          f"are not UTF-8 ({err.reason})") from None
    if decoded.dtype.itemsize > dtype.itemsize:
        raise FormatError(f"HDF5 file '{filepath}': column '{name}' holds text longer "
                          f"than its dtype {dtype.str} allows")
    return decoded.astype(dtype)


def _utf8_columns(table) -> dict:
    """``{column: byte width}`` of the unicode columns, checking every value
    (a ValueError for code points past U+10FFFF, which UTF-8 cannot hold)."""
    widths = {}
    for name in table.names:
        col = table.cols[name]
        if col.dtype.kind != "U":
            continue
        width = 1
        for block in iterblocks_of(col):
            points = np.ascontiguousarray(block).view(block.dtype.byteorder + "u4"
                                                      if block.dtype.byteorder in "<>"
                                                      else "=u4")
            if points.size and int(points.max()) > MAX_CODE_POINT:
                raise ValueError(f"column '{name}' holds code points past U+10FFFF, "
                                 f"which UTF-8 (and so HDF5) cannot store")
            encoded = np.char.encode(block, "utf-8", "surrogatepass")
            width = max(width, encoded.dtype.itemsize)
        widths[name] = width
    return widths


def iterblocks_of(col, blen: int | None = None):
    """The column's values, chunk by chunk."""
    blen = blen or col.chunklen
    for start in range(0, len(col), blen):
        yield col[start:start + blen]


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def tohdf5(table, filepath, nodepath="/ctable", mode="w", cparams=None, cname=None):
    """Write ``table`` into an HDF5 file as a PyTables Table.

    Parameters
    ----------
    table : ctable
    filepath : str
        The HDF5 file.
    nodepath : str, default '/ctable'
        Where the Table goes (parent groups are created).
    mode : {'w', 'a'}, default 'w'
        'w' creates the file (refusing an existing one, as bcolz); 'a' adds
        the node to a file that may exist.
    cparams : cparams or dict, optional
        Compression level, shuffle and Blosc compressor (default
        ``bcolz_store.defaults.cparams``).
    cname : str, optional
        A PyTables compressor name (e.g. 'zlib'); default
        ``'blosc:' + cparams cname``.

    Raises
    ------
    ImportError
        When PyTables is not installed.
    DatasetExistsError
        With mode 'w' when ``filepath`` exists (an OSError, as bcolz's IOError).
    TypeError
        For datetime64, timedelta64 or object columns, which PyTables Tables
        cannot hold (nothing is written).
    ValueError
        When a unicode column holds code points past U+10FFFF, or the table
        has an attribute named ``bcolz_store_utf8``, ``bcolz_store_byteorder``
        or ``bcolz_store_json`` (nothing is written).

    Attributes that are not a bool, int, float or str (dicts, lists, None),
    which PyTables would pickle, are written as JSON text and listed in the
    attribute ``bcolz_store_json``, which :func:`fromhdf5` reads back.

    Notes
    -----
    Compatibility: bcolz passed the compression level as the shuffle flag;
    the shuffle setting of ``cparams`` is used here.
    """
    tb = _import_tables()
    from ..cparams import cparams as cparams_cls
    filepath = os.fspath(filepath)
    unsupported = [n for n in table.names if table.cols[n].dtype.kind in "MmOT"]
    if unsupported:
        raise TypeError(f"PyTables Tables cannot hold the datetime64/timedelta64/object/vlen "
                        f"columns {unsupported}; convert or drop them first (vlen columns: "
                        f"tofixed())")
    if mode == "w" and os.path.exists(filepath):
        raise DatasetExistsError(f"path '{filepath}' already exists")
    if UTF8_ATTR in dict(table.attrs):
        raise ValueError(f"the attribute name {UTF8_ATTR} is reserved for the HDF5 "
                         f"Table's unicode columns; rename it first")
    if JSON_ATTR in dict(table.attrs):
        raise ValueError(f"the attribute name {JSON_ATTR} is reserved for the HDF5 "
                         f"Table's attributes stored as JSON; rename it first")
    if BYTEORDER_ATTR in dict(table.attrs):
        raise ValueError(f"the attribute name {BYTEORDER_ATTR} is reserved for the HDF5 "
                         f"Table's columns of the other byte order; rename it first")
    widths = _utf8_columns(table)
    fields, swapped = [], {}
    for name in table.names:
        atom = table.dtype.fields[name][0]
        if name in widths:
            atom = np.dtype((f"S{widths[name]}", atom.shape))
        elif not atom.base.isnative:
            swapped[name] = atom.base.str
            atom = np.dtype((atom.base.newbyteorder("="), atom.shape))
        fields.append((name, atom))
    stored = np.dtype(fields)
    params = cparams_cls.from_any(cparams).to_dict() if not isinstance(cparams, dict) \
        else {**cparams_cls().to_dict(), **cparams}
    filters = tb.Filters(complevel=params["clevel"], shuffle=bool(params["shuffle"]),
                         complib=cname if cname is not None else "blosc:" + params["cname"])
    parent, name = os.path.split(nodepath.rstrip("/"))
    with no_unpickling(tb), tb.open_file(filepath, mode=mode) as h5:
        node = h5.create_table(parent or "/", name, stored, filters=filters,
                               expectedrows=max(len(table), 1), createparents=True)
        as_json = []
        for key, value in table.attrs:
            if not _native(value):
                value, _ = json.dumps(value), as_json.append(key)
            node.attrs[key] = value
        if as_json:
            node.attrs[JSON_ATTR] = json.dumps(as_json)
        if widths:
            node.attrs[UTF8_ATTR] = json.dumps(
                {n: table.dtype.fields[n][0].base.str for n in widths})
        if swapped:
            node.attrs[BYTEORDER_ATTR] = json.dumps(swapped)
        blen = min((table.cols[n].chunklen for n in table.names), default=65536)
        for start in range(0, len(table), blen):
            rows = table[start:start + blen]
            if widths or swapped:
                block = np.empty(len(rows), dtype=stored)
                for n in table.names:
                    block[n] = (np.char.encode(rows[n], "utf-8", "surrogatepass")
                                if n in widths else rows[n])
                rows = block
            node.append(rows)
        node.flush()
