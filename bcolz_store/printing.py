"""Text forms of carrays and ctables: ``str()``, ``repr()`` and print options.

``str(carray)`` looks like ``str(numpy_array)``.  Long arrays are summarised
with ``...`` exactly as numpy does, and only the leading and trailing
``edgeitems`` rows are read from the container: printing a carray of a
billion rows decompresses just its first and last chunks.

The formatting itself is numpy's :func:`numpy.array2string`; this module only
decides which rows to read and keeps bcolz's own print options, which are
separate from numpy's (``bcolz_store.set_printoptions`` does not change how
numpy prints, nor the reverse).

The ``repr`` layouts are bcolz 1.x's::

    carray((5,), int64)
      nbytes := 40; cbytes := 16.00 KB; ratio: 0.00
      cparams := cparams(clevel=5, shuffle=1, cname='lz4', quantize=0)
      chunklen := 2048; chunksize: 16384; blocksize: 0
      rootdir := '/data/a'          (on-disk carrays only)
      mode    := 'a'                (on-disk carrays only)
    [0 1 2 3 4]

    ctable((5,), [('f0', '<i4'), ('f1', '<f8')])
      nbytes: 60; cbytes: 32.00 KB; ratio: 0.00
      cparams := cparams(clevel=5, shuffle=1, cname='lz4', quantize=0)
      rootdir := '/data/t'          (on-disk ctables only)
    [(0, 0.) (1, 2.) (2, 4.) (3, 6.) (4, 8.)]

Source: bcolz 1.x ``carray.__repr__`` (carray_ext.pyx) and
``ctable.__repr__`` (ctable.py); checked by tests/test_toplevel.py and by
bcolz's reprTest / reprDiskTest.
"""

from __future__ import annotations

import contextvars
import math

import numpy as np

__all__ = [
    "array2string",
    "format_carray_repr",
    "format_carray_str",
    "format_ctable_repr",
    "format_ctable_str",
    "get_printoptions",
    "human_readable_size",
    "set_printoptions",
]

# bcolz's defaults (those of numpy's arrayprint at the time of the fork).
_DEFAULT_OPTIONS = {
    "precision": 8,
    "threshold": 1000,
    "edgeitems": 3,
    "linewidth": 75,
    "suppress": False,
    "nanstr": "nan",
    "infstr": "inf",
    "formatter": None,
}
_OPTIONS: contextvars.ContextVar = contextvars.ContextVar(
    "bcolz_store_printoptions", default=_DEFAULT_OPTIONS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     suppress=None, nanstr=None, infstr=None, formatter=None):
    """Set how carrays and ctables are printed.

    Only the options passed (not None) change; the others keep their value.

    Parameters
    ----------
    precision : int, optional
        Digits of precision for floating point output (default 8).
    threshold : int, optional
        Total number of items above which the output is summarised with
        ``...`` (default 1000).
    edgeitems : int, optional
        Number of items shown at each end of a summarised axis (default 3).
    linewidth : int, optional
        Characters per line (default 75).
    suppress : bool, optional
        Print tiny floats as zero instead of in scientific notation
        (default False).
    nanstr, infstr : str, optional
        Text for floating point NaN and infinity (default 'nan', 'inf').
    formatter : dict of callables, optional
        As :func:`numpy.set_printoptions` ``formatter``.

    Raises
    ------
    ValueError
        If ``precision``, ``threshold``, ``edgeitems`` or ``linewidth`` is
        negative or not an integer.

    Notes
    -----
    Compatibility: bcolz keeps print options apart from numpy's; so does
    this module.  The options live in a :class:`contextvars.ContextVar`, so a
    change made in one thread does not leak into another that already runs.

    Examples
    --------
    >>> import bcolz_store as bcolz
    >>> bcolz.set_printoptions(threshold=5, edgeitems=2)
    >>> print(bcolz.arange(10))
    [0 1 ... 8 9]
    >>> bcolz.set_printoptions(threshold=1000, edgeitems=3)
    """
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth, "suppress": suppress, "nanstr": nanstr,
             "infstr": infstr, "formatter": formatter}
    options = dict(_OPTIONS.get())
    for name, value in given.items():
        if value is None:
            continue
        if name in ("precision", "threshold", "edgeitems", "linewidth"):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
                raise ValueError(
                    f"print option {name!r} must be a non-negative integer, got {value!r}")
            value = int(value)
        options[name] = value
    _OPTIONS.set(options)


def get_printoptions() -> dict:
    """Return the current print options.

    Returns
    -------
    dict
        Keys precision, threshold, edgeitems, linewidth, suppress, nanstr,
        infstr, formatter (see :func:`set_printoptions`).  A copy: changing
        it changes nothing.
    """
    return dict(_OPTIONS.get())


def _atom_size(shape) -> int:
    return int(math.prod(shape[1:])) if len(shape) > 1 else 1


def _rows_to_print(obj, edgeitems: int, threshold: int):
    """Read only the rows that the printed text needs.

    Returns ``(data, summarised)``.  When summarised, ``data`` holds the first
    ``edgeitems`` rows, one filler row and the last ``edgeitems`` rows, so
    that numpy, summarising it with the same ``edgeitems``, prints what it
    would print for the whole array (the filler row is never shown).
    """
    if isinstance(obj, np.ndarray):
        nrows = obj.shape[0] if obj.ndim else 0
        shape = obj.shape
    else:
        nrows = len(obj)
        shape = tuple(obj.shape)
    size = nrows * _atom_size(shape)
    if size <= threshold:
        return _nulls_shown(obj[:]), False
    if nrows <= 2 * edgeitems:
        return _nulls_shown(obj[:]), True
    head = np.asanyarray(obj[:edgeitems])
    tail = np.asanyarray(obj[nrows - edgeitems:nrows])
    join = np.ma.concatenate if np.ma.isMaskedArray(head) or np.ma.isMaskedArray(tail) \
        else np.concatenate
    return _nulls_shown(join([head, head[:1], tail])), True


class _Null:
    """What a null item prints as: ``--``, as numpy.ma prints it."""

    def __repr__(self):
        return "--"

    __str__ = __repr__


_NULL = _Null()


def _nulls_shown(data) -> np.ndarray:
    """``data`` to print: a masked array holding nulls as objects, each null
    ``--`` (as numpy.ma prints one); anything else as it is."""
    if not np.ma.isMaskedArray(data):
        return np.asarray(data)
    mask = np.ma.getmaskarray(data)
    if not _any(mask):
        return np.ma.getdata(data)
    out = np.empty(data.shape, dtype=_as_objects(data.dtype))
    _fill(out, np.ma.getdata(data), mask)
    return out


def _any(mask) -> bool:
    if mask.dtype.names is None:
        return bool(mask.any())
    return any(_any(mask[name]) for name in mask.dtype.names)


def _as_objects(dtype: np.dtype) -> np.dtype:
    """``dtype`` with each field (or item) an object; the dict form keeps a
    field named with the empty string."""
    if dtype.names is not None:
        return np.dtype({"names": list(dtype.names),
                         "formats": [_as_objects(dtype.fields[n][0]) for n in dtype.names]})
    if dtype.subdtype is not None:
        return np.dtype((object, dtype.subdtype[1]))
    return np.dtype(object)


def _fill(out, data, mask) -> None:
    if out.dtype.names is not None:
        for name in out.dtype.names:
            _fill(out[name], data[name], mask[name])
        return
    if data.dtype.kind in "Mm":     # as numpy prints them, not as datetime objects
        text = np.datetime_as_string(data) if data.dtype.kind == "M" else data.astype(str)
        out[...] = np.frompyfunc(_Shown, 1, 1)(text)
    else:
        out[...] = data.tolist() if data.ndim else data[()]
    out[mask] = _NULL


class _Shown(str):
    """A value's text, printed as it is."""

    def __repr__(self):
        return str(self)


def array2string(a, max_line_width=None, precision=None, suppress_small=None,
                 separator=" ", prefix="", style=repr, formatter=None) -> str:
    """Return the text of a carray, ctable or numpy array, as numpy prints it.

    Parameters
    ----------
    a : carray, ctable or numpy.ndarray
        Anything with ``shape``, ``len()`` and slicing.  Only the rows shown
        are read.
    max_line_width : int, optional
        Characters per line; default the ``linewidth`` print option.
    precision : int, optional
        Float precision; default the ``precision`` print option.
    suppress_small : bool, optional
        Default the ``suppress`` print option.
    separator : str, optional
        Between elements (default ' ').
    prefix : str, optional
        As numpy: the width of continuation lines' indentation.
    style : callable, optional
        Ignored (numpy ignores it for arrays of one or more dimensions).
    formatter : dict of callables, optional
        Default the ``formatter`` print option.

    Returns
    -------
    str

    Notes
    -----
    Compatibility: bcolz prints with a fork of numpy 1.x's arrayprint
    (``[0 1 2 ..., 7 8 9]``); numpy's current layout is used here
    (``[0 1 2 ... 7 8 9]``) because the fork no longer runs on numpy 2.

    Examples
    --------
    >>> import numpy as np
    >>> from bcolz_store.printing import array2string
    >>> array2string(np.arange(2000))
    '[   0    1    2 ... 1997 1998 1999]'
    """
    options = _OPTIONS.get()
    edgeitems, threshold = options["edgeitems"], options["threshold"]
    data, summarised = _rows_to_print(a, edgeitems, threshold)
    numpy_options = {
        "precision": options["precision"] if precision is None else precision,
        "suppress": options["suppress"] if suppress_small is None else suppress_small,
        "linewidth": options["linewidth"] if max_line_width is None else max_line_width,
        "nanstr": options["nanstr"],
        "infstr": options["infstr"],
        "formatter": options["formatter"] if formatter is None else formatter,
        "edgeitems": edgeitems,
        # Summarise when the whole container exceeds the threshold, whatever
        # the size of the rows actually read.
        "threshold": 0 if summarised else max(threshold, data.size),
    }
    with np.printoptions(**numpy_options):
        return np.array2string(data, separator=separator, prefix=prefix)


def human_readable_size(nbytes) -> str:
    """Format a byte count as bcolz does: ``'40'``, ``'16.00 KB'``, ``'1.50 MB'``...

    Parameters
    ----------
    nbytes : int
        A count of bytes, >= 0.

    Returns
    -------
    str
        Below 1024 the plain number; else two decimals and KB, MB, GB or TB
        (powers of 1024).
    """
    if nbytes < 2 ** 10:
        return f"{nbytes}"
    for power, unit in ((2, "KB"), (3, "MB"), (4, "GB")):
        if nbytes < 2 ** (10 * power):
            return f"{nbytes / 2 ** (10 * (power - 1)):.2f} {unit}"
    return f"{nbytes / 2 ** 40:.2f} TB"


def _ratio(nbytes, cbytes) -> str:
    ratio = nbytes / float(cbytes) if cbytes else float("nan")
    return f"{ratio:.2f}"


def format_carray_str(obj) -> str:
    """``str(carray)``: the values, as numpy prints them (see :func:`array2string`)."""
    return array2string(obj)


def format_ctable_str(obj) -> str:
    """``str(ctable)``: its rows as a numpy structured array; '' for a table without columns."""
    if obj.dtype == np.dtype([]):
        return ""
    return array2string(obj)


def _carray_blocksize(obj) -> int:
    chunks = getattr(obj, "chunks", None)
    if chunks is None or len(chunks) == 0 or not hasattr(chunks, "__getitem__"):
        return 0
    return int(getattr(chunks[0], "blocksize", 0))


def format_carray_repr(obj) -> str:
    """``repr(carray)`` in bcolz's layout (see the module docstring).

    Parameters
    ----------
    obj : carray
        Reads ``shape``, ``dtype``, ``nbytes``, ``cbytes``, ``cparams``,
        ``chunklen``, ``rootdir``, ``mode`` and, when it has full chunks,
        ``chunks[0].blocksize``.  ``chunksize`` is ``chunklen`` times the
        bytes of one row (the atom).

    Returns
    -------
    str
    """
    shape, dtype = tuple(obj.shape), np.dtype(obj.dtype)
    chunksize = obj.chunklen * dtype.itemsize * _atom_size(shape)
    lines = [
        f"carray({shape}, {dtype})",
        f"  nbytes := {human_readable_size(obj.nbytes)}; cbytes := "
        f"{human_readable_size(obj.cbytes)}; ratio: {_ratio(obj.nbytes, obj.cbytes)}",
        f"  cparams := {obj.cparams!r}",
        f"  chunklen := {obj.chunklen}; chunksize: {chunksize}; "
        f"blocksize: {_carray_blocksize(obj)}",
    ]
    if getattr(obj, "category", None) is not None:    # codes + categories
        lines[2:4] = [f"  category := {obj.category!r}", f"  chunklen := {obj.chunklen}"]
    elif getattr(obj, "vlen", None) is not None:      # items of any length, zstd chunks
        lines[2:4] = [f"  vlen := {obj.vlen!r}", f"  chunklen := {obj.chunklen}"]
    elif getattr(obj, "listtype", None) is not None:  # encoded lists, zstd chunks
        lines[2:4] = [f"  listtype := {obj.listtype!r}", f"  chunklen := {obj.chunklen}"]
    if obj.rootdir:
        lines.append(f"  rootdir := '{obj.rootdir}'")
        lines.append(f"  mode    := '{obj.mode}'")
    lines.append(format_carray_str(obj))
    return "\n".join(lines)


def format_ctable_repr(obj) -> str:
    """``repr(ctable)`` in bcolz's layout (see the module docstring).

    Parameters
    ----------
    obj : ctable
        Reads ``shape``, ``dtype``, ``nbytes``, ``cbytes``, ``cparams`` and
        ``rootdir``.

    Returns
    -------
    str
    """
    lines = [
        f"ctable({tuple(obj.shape)}, {np.dtype(obj.dtype)})",
        f"  nbytes: {human_readable_size(obj.nbytes)}; cbytes: "
        f"{human_readable_size(obj.cbytes)}; ratio: {_ratio(obj.nbytes, obj.cbytes)}",
        f"  cparams := {obj.cparams!r}",
    ]
    if obj.rootdir:
        lines.append(f"  rootdir := '{obj.rootdir}'")
    lines.append(format_ctable_str(obj))
    return "\n".join(lines)
