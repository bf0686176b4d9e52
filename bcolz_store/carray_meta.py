"""The metadata of a new carray: its atom, chunklen and dflt, from what the
user passes to the constructor.

A carray of a column kind (bcolz_store/kinds/) gets its metadata from that
kind (:meth:`~bcolz_store.kinds.base.ColumnKind.new_meta`), the kinds asked
in their order (:func:`~bcolz_store.kinds.base.kinds_for_new`); a carray of
bcolz's fixed-size atoms (or pickled objects) from :func:`new_fixed_meta`.

Source: bcolz 1.x ``carray.__init__`` (the dtype, chunklen and dflt rules).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .chunks.codec import typesize_for
from .cparams import cparams as cparams_cls
from .datasets.carray_files import MAX_CHUNK_BYTES, CarrayMeta
from .errors import LimitError
from .format.meta import MAX_NDIM, storage_kind
from .indexing import calc_chunklen, is_carray, is_int
from .items import masked_to_objects
from .kinds.base import kind_request, kinds_for_new
from .kinds.buffers import ArrowBuffers

__all__ = ["Making", "atom_of", "new_fixed_meta", "new_meta"]


def _item_nbytes(buffers: ArrowBuffers):
    """The average bytes of the present rows of Arrow buffers of items of any
    length (strings, binary), or None for other buffers or no present row."""
    if buffers.offsets is None or buffers.values is None or buffers.children:
        return None
    present = buffers.length - buffers.null_count
    if present <= 0:
        return None
    lengths = np.diff(buffers.offsets)
    if buffers.validity is not None:
        lengths = lengths[buffers.validity]
    return float(lengths.sum()) / present


@dataclasses.dataclass
class Making:
    """The arguments a new carray is made from, as a column kind's
    :meth:`~bcolz_store.kinds.base.ColumnKind.new_meta` gets them.

    Attributes
    ----------
    array : array_like, carray or list
        The initial data (empty when the carray is made from Arrow rows,
        which the kind encodes after).
    cparams : cparams
    dtype : numpy dtype, str, a dtype object of a kind, or None
    dflt : scalar, 0-d array or None
    expectedlen, chunklen : int or None
    to_ndarray : callable
        ``to_ndarray(value, dtype)``: the carray's conversion of input data.
    nullable : bool or None
    item_nbytes : float or None
        The average bytes of an item of the Arrow rows it is made from
        (strings, binary), to size the chunks of items of any length.
    """

    array: object
    cparams: object
    dtype: object
    dflt: object
    expectedlen: int | None
    chunklen: int | None
    to_ndarray: object
    nullable: bool | None = None
    item_nbytes: float | None = None

    def fixed(self, array, dtype, to_ndarray=None):
        """``(CarrayMeta, numpy.ndarray)`` of a carray of fixed-size atoms of
        ``array`` and ``dtype``, with these arguments' cparams, dflt,
        expectedlen and chunklen (:func:`new_fixed_meta`)."""
        return new_fixed_meta(array, self.cparams, dtype, self.dflt, self.expectedlen,
                              self.chunklen, to_ndarray or self.to_ndarray)

    def any(self, array, dtype, nullable, expectedlen, chunklen):
        """``(CarrayMeta, data)`` of a carray of any kind of ``array``, ``dtype``
        and ``nullable``, with these arguments' cparams and conversion and no
        dflt (a struct's field)."""
        return new_meta(array, self.cparams, dtype, None, expectedlen, chunklen,
                        self.to_ndarray, nullable)


def new_meta(array, cparams, dtype, dflt, expectedlen, chunklen, to_ndarray, nullable=None):
    """The metadata of a new carray of any kind, and its initial data.

    The arguments are offered to the column kinds in their order
    (:func:`~bcolz_store.kinds.base.kinds_for_new`: struct, decimal, list or
    map, categorical, vlen, nullable); the first that takes them
    (:meth:`~bcolz_store.kinds.base.ColumnKind.new_request`) makes the
    metadata; when none does, the carray holds fixed-size atoms
    (:func:`new_fixed_meta`).

    Parameters
    ----------
    array : array_like, carray or ArrowBuffers
        The initial data: Arrow rows (:class:`~bcolz_store.kinds.buffers.ArrowBuffers`)
        are encoded by their kind after the carray is made.
    dtype, dflt, expectedlen, chunklen, to_ndarray
        As :func:`new_fixed_meta`.
    cparams : cparams, dict or None
        None: ``bcolz_store.defaults.cparams``.
    nullable : bool or None
        Whether the carray is nullable (a validity beside fixed-size atoms);
        None: when ``array`` asks for it (a masked array, a pandas masked
        array, a list holding None with a fixed ``dtype`` given).

    Returns
    -------
    (CarrayMeta, numpy.ndarray)

    Raises
    ------
    ValueError
        ``cparams`` of another type; as the kind's own function.
    TypeError, LimitError
        As the kind's own function.
    """
    item_nbytes = None                      # (the Arrow rows' bytes an item, for a vlen chunklen)
    if isinstance(array, ArrowBuffers):      # Arrow rows, encoded by the kind after
        dtype, nullable, expectedlen = kind_request(array, dtype, nullable, expectedlen)
        item_nbytes = _item_nbytes(array)
        array = []
    if cparams is None or isinstance(cparams, (cparams_cls, dict)):
        cparams = cparams_cls.from_any(cparams)
    else:
        raise ValueError("`cparams` param must be an instance of `cparams` class")
    if isinstance(array, np.ma.MaskedArray) and array.dtype == object:
        array = masked_to_objects(array)        # a null is None, as object items hold it
    for kind in kinds_for_new():
        request = kind.new_request(array, dtype, nullable)
        if request is not None:
            making = Making(array, cparams, dtype, dflt, expectedlen, chunklen, to_ndarray,
                            nullable, item_nbytes)
            return kind.new_meta(request, making)
    return new_fixed_meta(array, cparams, dtype, dflt, expectedlen, chunklen, to_ndarray)


def new_fixed_meta(array, cparams, dtype, dflt, expectedlen, chunklen, to_ndarray):
    """The metadata of a new carray of fixed-size atoms, and its initial data.

    Parameters
    ----------
    array : array_like or carray
        The initial data (a carray's rows are appended by the caller; then
        the returned data is empty).
    cparams : cparams
    dtype : numpy dtype, str or None
    dflt : scalar, 0-d array or None
    expectedlen, chunklen : int or None
    to_ndarray : callable
        ``to_ndarray(value, dtype)``: the carray's conversion of input data.

    Returns
    -------
    (CarrayMeta, numpy.ndarray)

    Raises
    ------
    TypeError, ValueError
        As :func:`atom_of`; a chunklen that is not a positive integer.
    LimitError
        As :func:`atom_of`; a chunklen whose chunks would exceed Blosc's 2 GiB.
    """
    if isinstance(dtype, str):
        dtype = np.dtype(dtype)
    if is_carray(array):
        source_len = len(array)
        dtype = array.dtype if dtype is None else dtype
        array_ = np.empty((0,) + array.shape[1:], dtype=array.dtype)
    else:
        array_ = to_ndarray(array, None if dtype is None else np.dtype(dtype).base)
        source_len = len(array_)
        if dtype is not None and np.dtype(dtype).kind in "SUV" and \
                np.dtype(dtype).itemsize == 0 and array_.dtype.kind == np.dtype(dtype).kind:
            dtype = array_.dtype        # ('str', 'U', 'S': as wide as the widest item)
    atom = atom_of(np.dtype(array_.dtype.base if dtype is None else dtype), array_)
    fill = np.zeros((), dtype=atom.base)
    if dflt is not None:
        if isinstance(dflt, np.ndarray) and dflt.ndim == 0:
            dflt = dflt[()]       # a carray's own dflt (a 0-d array)
        fill[()] = dflt
    expectedlen = int(source_len if expectedlen is None else expectedlen)
    if chunklen is None:
        chunklen = calc_chunklen(expectedlen, atom.itemsize)
    elif not is_int(chunklen) or chunklen < 1:
        raise ValueError("chunklen must be a positive integer")
    if storage_kind(atom) != "pickle" and int(chunklen) * atom.itemsize > MAX_CHUNK_BYTES:
        raise LimitError(f"chunklen {chunklen} of {atom.itemsize}-byte atoms makes chunks of "
                         f"{int(chunklen) * atom.itemsize} bytes, more than Blosc's "
                         f"{MAX_CHUNK_BYTES} (and than any reader accepts)")
    return CarrayMeta(atom, cparams, int(chunklen), expectedlen, fill), array_


def atom_of(dtype: np.dtype, array: np.ndarray) -> np.dtype:
    """The atom dtype of a new carray of ``dtype`` from ``array`` (its rows' shape).

    Raises
    ------
    TypeError
        For dtypes that cannot be stored (objects inside a structure, zero
        bytes, a typesize Blosc refuses).
    ValueError
        For atoms of 2 GB or more.
    LimitError
        For atoms of more than 31 dimensions (``MAX_NDIM``, 32, counts the
        carray's length too; the reader refuses more).
    """
    if storage_kind(dtype) == "pickle":
        if array.ndim > 1:
            raise TypeError("object carrays are one-dimensional (each item is pickled)")
        return dtype
    atom = np.dtype((dtype.base, dtype.shape + array.shape[1:]))
    if 1 + len(atom.shape) > MAX_NDIM:      # meta/sizes' shape: the length, then the atom's
        raise LimitError(f"an atom of {len(atom.shape)} dimensions {atom.shape} makes a carray "
                         f"of {1 + len(atom.shape)}, more than the {MAX_NDIM} a carray may have "
                         f"(numpy 1.x's limit, kept so that every reader can open it)")
    storage_kind(atom)
    if atom.itemsize >= 2 ** 31:
        raise ValueError("atomic size is too large (>= 2 GB)")
    if atom.itemsize == 0:
        raise TypeError("atomic size cannot be zero")
    typesize_for(atom)  # TypeError for > 255-byte items bcolz refuses too
    return atom
