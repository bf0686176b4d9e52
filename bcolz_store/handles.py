"""What a pickled carray or ctable carries, so that copies in other threads,
processes or machines (dask's schedulers) read the same data.

**Unpickling a handle is unpickling.**  Load pickles of carrays and ctables
only from a source you trust (your own dask scheduler and workers): a pickle
can call any function, and even one built from bcolz_store's own names alone
opens whatever path or URL it names, with the rights of the process that
loads it.  What is below keeps a handle from carrying more than it needs; it
does not make an untrusted pickle safe.

* A stored carray or ctable pickles as where it is: its rootdir (a path, or a
  URL with its ``storage_options``) and the options that decide how it is
  read (``allow_pickle``, ``verify``, ``consolidated``).  Unpickled, it is
  opened afresh in mode ``'r'``: a reader of the state committed at that
  moment, never a second writer (appends not yet flushed are not in it).
* A column of a stored ctable pickles as its table's rootdir and its name,
  and is unpickled as that column opened in mode ``'r'`` through its
  table's dataset, on one committed state of the table (the table's journal
  is what tells its readers about commits).
* An in-memory carray pickles its compressed chunks as they are (with its
  dtype, cparams, chunklen, expectedlen, dflt, leftover and attrs), so the
  copy holds the same chunks, byte for byte; an in-memory vlen or categorical
  carray pickles its items and its type (``vlen`` with its level, dictionary
  and nullability; ``category`` with its categories and order), and its
  cparams, chunklen, expectedlen, dflt and attrs; an in-memory ctable pickles
  its columns.  An in-memory object carray pickles its objects (the pickle
  holds them, so its copy reads them as its original does).

**Credentials are not pickled.**  The ``storage_options`` a handle carries
lose every entry that looks like a credential (see
:func:`strip_credentials`: ``key``, ``secret``, ``token``, ``password``,
session tokens, and such entries nested in ``client_kwargs`` or
``config_kwargs``); the others (``endpoint_url``, ``anon``, ``region_name``,
``profile``, ...) are kept.  The process that unpickles a handle finds its
credentials the way fsspec and s3fs find them there: environment variables
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
``FSSPEC_S3_KEY``...), ``~/.aws`` files or the ``profile`` named, an
instance role.  To put them in the pickles anyway (workers with no
credentials of their own, on a network you trust), pickle inside
``with credentials_in_pickles():``.

**allow_pickle is the user's.**  A handle carries ``allow_pickle=True`` only
when the carray or ctable was opened or created with ``allow_pickle=True``.
A carray created from Python objects reads them in its own process; a stored
copy of it opened elsewhere refuses them (UnsafeDataError) unless it was
created with ``allow_pickle=True``.

The functions that rebuild a handle refuse (FormatError) what no handle
holds: a class other than carray and ctable (or their subclasses), a mode
other than ``'r'``, arguments of the wrong kinds.

A carray or ctable whose store keeps its bytes in this process only (a
:class:`~bcolz_store.storage.memory.MemoryStore`) cannot be pickled.

The classes travel in the handle (``type(obj)``): this module does not import
:mod:`bcolz_store.carray` or :mod:`bcolz_store.ctable` (they call it); a
rebuilt handle's class must say it is one (``_handle_kind``).
"""

from __future__ import annotations

import uuid

import numpy as np

from .chunks.chunk import chunk
from .cparams import cparams as cparams_cls
from .errors import DatasetNotFoundError, FormatError
from .options import OpenOptions
from .storage.credentials import carried_options, credentials_in_pickles, strip_credentials
from .storage.dataset import DatasetStore
from .storage.urls import open_store, portable_rootdir

__all__ = ["carried_options", "credentials_in_pickles", "dask_token", "open_stored",
           "open_table_column", "rebuild_carray", "rebuild_ctable", "rebuild_items",
           "reduce_carray", "reduce_ctable", "strip_credentials"]


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
    root, options = found
    return root, carried_options(options)


def _refuse(what: str):
    raise FormatError(f"not a bcolz_store handle: {what} (handles are made by pickling a "
                      f"carray or ctable; unpickle only what you trust)")


def _check_class(cls, kinds: tuple):
    """``cls`` when it is the carray or ctable class (or a subclass), as its
    ``_handle_kind`` says, of one of ``kinds``."""
    if not (isinstance(cls, type) and getattr(cls, "_handle_kind", None) in kinds):
        _refuse(f"class {cls!r}")
    return cls


def _plain(value, depth: int = 0) -> bool:
    """Whether ``value`` is JSON-like (what storage options are)."""
    if depth > 16:
        return False
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _check_open(rootdir, storage_options, allow_pickle, verify, consolidated):
    if not isinstance(rootdir, str) or not rootdir:
        _refuse(f"rootdir {rootdir!r:.100}")
    if storage_options is not None and not (isinstance(storage_options, dict)
                                            and _plain(storage_options)):
        _refuse(f"storage_options of type {type(storage_options).__name__}")
    for name, value in (("allow_pickle", allow_pickle), ("verify", verify)):
        if not isinstance(value, (bool, np.bool_)):
            _refuse(f"{name}={value!r:.100}")
    if consolidated is not None and not isinstance(consolidated, (bool, np.bool_)):
        _refuse(f"consolidated={consolidated!r:.100}")


def reduce_carray(c):
    """``__reduce__`` of a carray (see the module's description).

    Raises
    ------
    TypeError
        For a carray on a store of this process only.
    """
    cls = type(c)
    files, options = c._files, c._options
    if files.rootdir and files.given is not None and files.given.prefix:
        root, storage = _portable(files.given.store, None, f"column {files.rootdir}")
        return (open_table_column, (cls, root, storage, files.given.prefix.rstrip("/"),
                                    options.allow_pickle, options.verify, options.consolidated))
    if files.rootdir:
        root, storage = _portable(files.root_arg, options.storage_options,
                                  f"carray {files.rootdir}")
        return (open_stored, (cls, root, storage, options.allow_pickle, options.verify,
                              options.consolidated))
    engine = c._engine
    meta = c._meta
    column = c._column                  # (the kind's hooks: kinds/base.py)
    request = column.category(meta, engine) or column.vlen_type(meta) or \
        column.list_type(meta)
    if column.masked_items:             # nullable: its items (a masked array), its dtype
        dflt = None if column.grows_null(meta) else c.dflt
        return (rebuild_items, (cls, c[:], meta.atom.base, meta.cparams.to_dict(),
                                meta.chunklen, meta.expectedlen, dflt, dict(c.attrs)))
    if request is not None:             # vlen, categorical or list: its items and its type
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
    """An in-memory carray holding the pickled chunks.

    Raises
    ------
    FormatError
        For arguments no handle holds (a class other than carray).
    """
    _check_class(cls, ("carray",))
    if not (isinstance(atom, np.dtype) and isinstance(cparams, dict)
            and isinstance(data, tuple) and len(data) == 2
            and isinstance(attrs, dict)):
        _refuse("the arguments of an in-memory carray")
    chunks, rest = data
    if not (chunks is None or (isinstance(chunks, list) and all(
            ch is None or isinstance(ch, bytes) for ch in chunks))) or \
            not isinstance(rest, np.ndarray):
        _refuse("the chunks of an in-memory carray")
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
    """An in-memory vlen, categorical or nullable carray of ``items`` (its type
    ``request``; a masked array of a numpy dtype makes a nullable one).

    Raises
    ------
    FormatError
        For arguments no handle holds (a class other than carray).
    """
    _check_class(cls, ("carray",))
    if not (isinstance(cparams, dict) and isinstance(attrs, dict)):
        _refuse("the arguments of an in-memory carray")
    kwargs = {} if getattr(request, "categories", None) is not None else {"dflt": dflt}
    out = cls(items, dtype=request, cparams=cparams_cls(**cparams), chunklen=chunklen,
              expectedlen=expectedlen, **kwargs)
    for key, value in attrs.items():
        out.attrs[key] = value
    return out


def open_stored(cls, rootdir, storage_options, allow_pickle, verify, consolidated):
    """A stored carray or ctable (``cls``), opened in mode 'r'.

    Raises
    ------
    FormatError
        For arguments no handle holds (a class other than carray or ctable,
        a rootdir that is not a string, options of the wrong kinds).
    """
    _check_class(cls, ("carray", "ctable"))
    _check_open(rootdir, storage_options, allow_pickle, verify, consolidated)
    return cls(rootdir=rootdir, mode="r", options=_options(storage_options, allow_pickle,
                                                            verify, consolidated))


def _options(storage_options, allow_pickle, verify, consolidated) -> OpenOptions:
    return OpenOptions(verify=bool(verify), allow_pickle=bool(allow_pickle),
                       storage_options=storage_options,
                       consolidated=None if consolidated is None else bool(consolidated))


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
        return (open_stored, (cls, root, options, bool(t.cols.allow_pickle), t._store.verify,
                             t._store.consolidated))
    return (rebuild_ctable, (cls, [t.cols[n] for n in t.names], list(t.names),
                             t.stored_cparams.to_dict(), dict(t.attrs)))


def rebuild_ctable(cls, columns, names, cparams, attrs=None):
    """An in-memory ctable of the pickled columns.

    Raises
    ------
    FormatError
        For arguments no handle holds (a class other than ctable, columns
        that are not in-memory carrays).
    """
    _check_class(cls, ("ctable",))
    if not (isinstance(columns, list) and isinstance(names, list)
            and all(getattr(type(c), "_handle_kind", None) == "carray" and not c.rootdir
                    for c in columns)
            and all(isinstance(n, str) for n in names) and isinstance(cparams, dict)
            and (attrs is None or isinstance(attrs, dict))):
        _refuse("the arguments of an in-memory ctable")
    out = cls(columns, names, cparams=cparams)
    for key, value in (attrs or {}).items():
        out.attrs[key] = value
    return out


def open_table_column(cls, rootdir, storage_options, name, allow_pickle, verify, consolidated):
    """Column ``name`` (a ``cls``, the carray class) of the stored ctable at
    ``rootdir``, opened in mode 'r' on one committed state of the table.

    Raises
    ------
    FormatError
        For arguments no handle holds.
    DatasetNotFoundError
        No such table or column.
    """
    _check_class(cls, ("carray",))
    if not isinstance(name, str) or not name:
        _refuse(f"column name {name!r:.100}")
    _check_open(rootdir, storage_options, allow_pickle, verify, consolidated)
    options = _options(storage_options, allow_pickle, verify, consolidated)
    table = DatasetStore(open_store(rootdir, True, storage_options), readonly=True,
                         verify=options.verify, consolidated=options.consolidated)
    if table.state() != "folder":
        raise DatasetNotFoundError(f"{rootdir}: no ctable here (the path does not exist)")
    found = []

    def load():
        found[:] = [cls(rootdir=table.path(name), mode="r", options=options,
                        _store=table.sub(name))]
    table.read_consistently(load, False)
    return found[0]


def dask_token(obj) -> tuple:
    """What identifies the data of a carray or ctable for dask's names.

    Stored: where it is, the committed generation it holds and its length
    (a commit gives new names).  In memory: a name drawn once per object.
    """
    store = obj.dataset
    if store is not None:
        return (type(obj).__name__, store.root, store.generation, store.loaded_marker,
                len(obj))
    token = obj.__dict__.get("_dask_token")
    if token is None:
        token = obj.__dict__.setdefault("_dask_token", uuid.uuid4().hex)
    return (type(obj).__name__, token, len(obj))
