"""What a pickled carray or ctable carries, so that copies in other threads,
processes or machines (dask's schedulers) read the same data.

* A stored carray or ctable pickles as where it is: its rootdir (a path, or a
  URL with its ``storage_options``) and the options that decide how it is
  read (``allow_pickle``, ``verify``, ``consolidated``).  Unpickled, it is
  opened afresh in mode ``'r'``: a reader of the state committed at that
  moment, never a second writer (appends not yet flushed are not in it).
* A column of a stored ctable pickles as its table's rootdir and its name,
  and is unpickled as that column of the table opened in mode ``'r'`` (the
  table's journal is what tells its readers about commits).
* An in-memory carray pickles its compressed chunks as they are (with its
  dtype, cparams, chunklen, expectedlen, dflt, leftover and attrs), so the
  copy holds the same chunks, byte for byte; an in-memory vlen or categorical
  carray pickles its items and its type (``vlen`` with its level, dictionary
  and nullability; ``category`` with its categories and order), and its
  cparams, chunklen, expectedlen, dflt and attrs; an in-memory ctable pickles
  its columns.

A carray or ctable whose store keeps its bytes in this process only (a
:class:`~bcolz_store.storage.memory.MemoryStore`) cannot be pickled.

The classes are handed in (``type(obj)``): this module imports neither
:mod:`bcolz_store.carray` nor :mod:`bcolz_store.ctable`, whose ``__reduce__``
call it.
"""

from __future__ import annotations

import uuid

import numpy as np

from .category_type import category_of
from .chunks.chunk import chunk
from .chunks.cparams import cparams as cparams_cls
from .storage.urls import portable_rootdir
from .vlen_type import vlen_of

__all__ = ["dask_token", "open_column", "open_stored", "reduce_carray",
           "reduce_ctable", "rebuild_carray", "rebuild_ctable", "rebuild_items"]


def _portable(root_arg, storage_options, what: str):
    """(rootdir, storage_options) reopening ``root_arg`` elsewhere.

    Raises
    ------
    TypeError
        When the store keeps its bytes in this process only.
    """
    found = portable_rootdir(root_arg, storage_options)
    if found is None:
        raise TypeError(f"cannot pickle {what}: its store keeps its bytes in this "
                        f"process only ({root_arg!r})")
    return found


def reduce_carray(c):
    """``__reduce__`` of a carray (see the module's description).

    Raises
    ------
    TypeError
        For a carray on a store of this process only.
    """
    cls = type(c)
    given = c._given_store
    if c._rootdir and given is not None and given.prefix:
        root, options = _portable(given.store, None, f"column {c._rootdir}")
        return (open_column, (root, options, given.prefix.rstrip("/"), c._allow_pickle,
                              c._verify, c._consolidated))
    if c._rootdir:
        root, options = _portable(c._root_arg, c._storage_options, f"carray {c._rootdir}")
        return (open_stored, (cls, root, options, c._allow_pickle, c._verify,
                              c._consolidated))
    engine = c._engine
    meta = c._meta
    request = category_of(meta, engine) or vlen_of(getattr(meta, "vlen", None))
    if request is not None:             # vlen or categorical: its items and its type
        return (rebuild_items, (cls, c[:], request, meta.cparams.to_dict(), meta.chunklen,
                                meta.expectedlen, c.dflt, dict(c.attrs)))
    if meta.atom.kind == "O":
        data = (None, engine.read_range(0, engine.length))
    else:
        data = ([None if ch.isconstant else bytes(ch.getdata()) for ch in engine.chunks],
                engine.leftover[:engine.nleft].copy())
    return (rebuild_carray, (cls, meta.atom, meta.cparams.to_dict(), meta.chunklen,
                             meta.expectedlen, meta.dflt, data, dict(c.attrs)))


def rebuild_carray(cls, atom, cparams, chunklen, expectedlen, dflt, data, attrs):
    """An in-memory carray holding the pickled chunks."""
    chunks, rest = data
    out = cls(np.empty((0,) + atom.shape, dtype=atom.base), cparams=cparams_cls(**cparams),
              dtype=atom.base, chunklen=chunklen, expectedlen=expectedlen, dflt=dflt[()])
    engine = out._engine
    if chunks is None:                  # pickled objects: appended as values
        engine.append(rest)
    else:
        zeros = None
        for cdata in chunks:
            if cdata is None:               # a constant all-zero chunk
                if zeros is None:
                    zeros = np.zeros(chunklen, dtype=atom)
                engine.push_chunk(zeros)
            else:
                made = chunk(cdata, atom, out.cparams, _compr=True)
                engine.chunks.append(made)
                engine.cbytes += made.cbytes
        engine.append(rest)
    for key, value in attrs.items():
        out.attrs[key] = value
    return out


def rebuild_items(cls, items, request, cparams, chunklen, expectedlen, dflt, attrs):
    """An in-memory vlen or categorical carray of ``items`` (its type ``request``)."""
    kwargs = {} if getattr(request, "categories", None) is not None else {"dflt": dflt}
    out = cls(items, dtype=request, cparams=cparams_cls(**cparams), chunklen=chunklen,
              expectedlen=expectedlen, **kwargs)
    for key, value in attrs.items():
        out.attrs[key] = value
    return out


def open_stored(cls, rootdir, storage_options, allow_pickle, verify, consolidated):
    """A stored carray or ctable (``cls``), opened in mode 'r'."""
    return cls(rootdir=rootdir, mode="r", storage_options=storage_options,
               allow_pickle=allow_pickle, verify=verify, consolidated=consolidated)


def reduce_ctable(t):
    """``__reduce__`` of a ctable (see the module's description).

    Raises
    ------
    TypeError
        For a ctable on a store of this process only.
    """
    cls = type(t)
    if t.rootdir:
        root, options = _portable(t._store.store, None, f"ctable {t.rootdir}")
        return (open_stored, (cls, root, options, t.cols.allow_pickle, t._store.verify,
                             t._store.journal.use_consolidated))
    return (rebuild_ctable, (cls, [t.cols[n] for n in t.names], list(t.names),
                             t._cparams.to_dict(), dict(t.attrs)))


def rebuild_ctable(cls, columns, names, cparams, attrs=None):
    """An in-memory ctable of the pickled columns."""
    out = cls(columns, names, cparams=cparams)
    for key, value in (attrs or {}).items():
        out.attrs[key] = value
    return out


# The ctable class, registered by bcolz_store.ctable when it is imported (a
# column's carray does not know its table's class).
TABLE_CLASS = []


def open_column(rootdir, storage_options, name, allow_pickle, verify, consolidated):
    """Column ``name`` of the stored ctable at ``rootdir``, opened in mode 'r'."""
    table = open_stored(TABLE_CLASS[0], rootdir, storage_options, allow_pickle, verify,
                       consolidated)
    return table.cols[name]


def dask_token(obj) -> tuple:
    """What identifies the data of a carray or ctable for dask's names.

    Stored: where it is, the committed generation it holds and its length
    (a commit gives new names).  In memory: a name drawn once per object.
    """
    store = getattr(obj, "_store", None)
    if store is not None:
        journal = store.journal
        return (type(obj).__name__, store.root, journal._generation, journal.loaded_marker,
                len(obj))
    token = obj.__dict__.get("_dask_token")
    if token is None:
        token = obj.__dict__.setdefault("_dask_token", uuid.uuid4().hex)
    return (type(obj).__name__, token, len(obj))
