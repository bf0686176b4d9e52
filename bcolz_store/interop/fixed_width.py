"""A copy of a carray or ctable that the real bcolz reads: vlen columns become
fixed-width ``U`` (str) or ``S`` (bytes) columns, as wide as their longest item.

The data is read twice, block by block: once to find each column's width
(and to refuse what a fixed width cannot hold), once to write the copy, so
memory stays bounded by one block.  Everything else is copied as it is:
dtypes, cparams, attrs and column attrs.

A fixed width cannot hold a missing item (None), nor a str ending in NUL
(``U`` drops trailing NULs); such columns are refused unless ``missing``
gives the value to write for a missing item.

Source: bcolz 1.x's own conversion of object columns in ``fromdataframe``
(fixed-width ``U``/``S``, as wide as the longest value).
"""

from __future__ import annotations

import contextlib
import os
import shutil

import numpy as np

from ..errors import DatasetExistsError
from ..storage.base import Store
from .columns import atom_of, block_rows, columns_of, kind_of

__all__ = ["fixed_atoms", "tofixed"]


def _is_variable(col) -> bool:
    return getattr(col, "vlen", None) is not None


def _as_fixed(block: np.ndarray, kind: str, missing, name: str):
    """A block of a vlen column as a list of str/bytes, missing items replaced."""
    items = block.tolist()
    if any(v is None for v in items):
        if missing is None:
            raise ValueError(f"column {name!r} has missing items (None), which a fixed-width "
                             f"column cannot hold; pass missing='' (bcolz-store convert "
                             f"--missing '') to write a value in their place")
        fill = missing.encode("utf-8") if kind == "bytes" and isinstance(missing, str) \
            else missing
        items = [fill if v is None else v for v in items]
    return items


def fixed_atoms(obj, missing=None, blen=None) -> dict:
    """``{name: dtype}``: the fixed-width dtype of every vlen column of ``obj``.

    Parameters
    ----------
    obj : carray or ctable
    missing : str or bytes, optional
        What a missing item becomes (None: a missing item is refused).
    blen : int, optional
        Rows read at a time.

    Returns
    -------
    dict
        ``U<n>`` for str columns (n characters), ``S<n>`` for bytes (n bytes);
        n the longest item (at least 1).

    Raises
    ------
    ValueError
        A missing item with ``missing`` None, or a str item ending in NUL
        (which ``U`` would drop).
    """
    out = {}
    blen = blen or block_rows(obj)
    for name, col in columns_of(obj):
        if not _is_variable(col):
            continue
        kind = col.vlen.kind
        width = 1
        for start in range(0, len(col), blen):
            items = _as_fixed(col[start:start + blen], kind, missing, name)
            if kind == "str" and any(s.endswith("\0") for s in items):
                raise ValueError(f"column {name!r} has a str item ending in NUL, which a "
                                 f"fixed-width U column would drop")
            width = max(width, max(map(len, items), default=0))
        out[name] = np.dtype(f"{'U' if kind == 'str' else 'S'}{width}")
    return out


def tofixed(obj, rootdir=None, mode="w", *, missing=None, bar=None, **kwargs):
    """A copy of ``obj`` whose vlen columns are fixed-width, for the real bcolz.

    Parameters
    ----------
    obj : carray or ctable
    rootdir : str, os.PathLike or Store, optional
        Where to write the copy (None: in memory): a path, a URL or a store.
    mode : {'w', 'a'}, default 'w'
        'w' replaces what is at ``rootdir``.
    missing : str or bytes, optional
        The value written for a missing item (default: refuse them).
    bar : object with ``update(n)``, optional
        Told of every block of rows written (a progress bar).
    **kwargs
        Other carray/ctable parameters for the copy (``cparams``,
        ``chunklen``...; default those of ``obj``'s columns).

    Returns
    -------
    carray or ctable

    Raises
    ------
    ValueError
        As :func:`fixed_atoms`; a local copy is not left behind.
    DatasetExistsError
        With mode 'a' when ``rootdir`` exists.
    """
    atoms = fixed_atoms(obj, missing)
    blen = block_rows(obj)
    table = kind_of(obj) == "ctable"
    columns = columns_of(obj)
    if rootdir is not None and not isinstance(rootdir, Store):
        rootdir = os.fspath(rootdir)
    local = rootdir if isinstance(rootdir, str) and "://" not in rootdir else None
    if local is not None and mode == "a" and os.path.lexists(local):
        raise DatasetExistsError(f"{rootdir}: exists; use mode 'w' to replace it")
    empty = [np.empty(0, dtype=atoms.get(name, atom_of(col))) for name, col in columns]
    kwargs.setdefault("expectedlen", max(len(obj), 1))
    kwargs.setdefault("cparams", columns[0][1].cparams if columns else None)
    if rootdir is not None:
        kwargs.update(rootdir=rootdir, mode="w")
    if table:
        kwargs.setdefault("auto_flush", False)
        out = type(obj)(empty, [name for name, _ in columns], **kwargs)
    else:
        out = type(obj)(empty[0], **kwargs)
    try:
        for start in range(0, len(obj), blen):
            blocks = []
            for name, col in columns:
                block = col[start:start + blen]
                if name in atoms:
                    block = np.array(_as_fixed(block, col.vlen.kind, missing, name),
                                     dtype=atoms[name])
                blocks.append(block)
            out.append(blocks if table else blocks[0])
            if bar is not None:
                bar.update(len(blocks[0]))
        for key, value in obj.attrs:
            out.attrs[key] = value
        if table:
            for name, col in columns:
                for key, value in col.attrs:
                    out.cols[name].attrs[key] = value
        out.flush()
    except BaseException:
        if local is not None:
            with contextlib.suppress(Exception):
                out.close()
            shutil.rmtree(local, ignore_errors=True)
        raise
    return out

