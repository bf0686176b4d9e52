"""The contract of a column kind, and the registry of kinds.

A *column kind* is a kind of column beyond bcolz's fixed dtypes (vlen
strings and bytes, categoricals, nullable values, decimals, lists and maps,
structs, fixed-size binary).  Each is one class deriving :class:`ColumnKind`
in its own folder ``bcolz_store/kinds/<kind>/``, registered with
:func:`register` under the key its ``meta/storage`` entry is stored with
(``"vlen"``, ``"categorical"``, ``"nullable"``, ``"decimal"``, ``"list"``,
``"struct"``, ``"fixed_binary"``).  A kind says:

* which carrays are of it (:meth:`ColumnKind.of_meta`: from the metadata read
  from ``meta/storage``) and which Arrow types it takes
  (:meth:`ColumnKind.of_arrow`);
* its Arrow type (:meth:`ColumnKind.arrow_type`) and the dtype object a
  carray of it is made with (:meth:`ColumnKind.dtype`);
* how rows encode from Arrow buffers into its engine's chunks
  (:meth:`ColumnKind.encode`) and decode from them back to Arrow buffers
  (:meth:`ColumnKind.decode`), vectorised, with no Python work per item;
* its numpy/Python form (:meth:`ColumnKind.to_python`), made only when a
  caller asks for items, and its missing rows (:meth:`ColumnKind.missing`);
* what a carray of it does that one of bcolz's dtypes does not: class-level
  hooks (:meth:`ColumnKind.holds`, :meth:`ColumnKind.isnull`,
  :meth:`ColumnKind.to_items`, :meth:`ColumnKind.filler`...), whose defaults
  are bcolz's behaviour.  The carray, its edits and reads, and the ctable
  call them on :func:`column_kind` (the class holding the carray, also where
  its codec takes no Arrow rows of it; ColumnKind itself for bcolz's dtypes)
  and so name no kind.

The contract's tests ship as :class:`bcolz_store.testing.kinds.KindTests`.

The kinds shipped with the package register themselves when the package
``bcolz_store.kinds`` is imported (its ``installed`` module imports each
kind's folder), so before any lookup here: importing this module imports
its package first.

The registry is the zarr-python 3 data-type registry's idea (one class per
kind, looked up by the key stored with the data) and numcodecs' codec
registry (keyed by id).
"""

from __future__ import annotations

import abc
from typing import ClassVar

import numpy as np

from .buffers import ArrowBuffers
from .. import threads

__all__ = ["AppendBlocks", "ColumnKind", "block_len", "check_plain_items", "column_kind",
           "item_blocks", "kind_for_arrow", "kind_for_dtype", "kind_of", "kind_request",
           "kinds_for_new", "register", "registered", "takes_items"]


class AppendBlocks:
    """The blocks that appending a carray writes, checked before anything
    changes: iterating gives them ready for the engine's ``append``
    (what :meth:`ColumnKind.prepare_carray` gives).

    Parameters
    ----------
    make : callable
        ``make()``: an iterable of the blocks, made when the append runs.
    """

    __slots__ = ("_produce",)

    def __init__(self, make):
        self._produce = make

    def __iter__(self):
        return iter(self._produce())


def block_len(source) -> int:
    """Items a block of the carray ``source`` holds (as many chunks as the
    thread pool decodes at once)."""
    return max(int(source.chunklen), 1) * threads.chunks_per_block()


def item_blocks(source):
    """``(start, items)`` of each block of the carray ``source``."""
    n, blen = len(source), block_len(source)
    for start in range(0, n, blen):
        yield start, source[start:min(start + blen, n)]


class ColumnKind(abc.ABC):
    """One kind of column: its metadata, its Arrow form, its chunks.

    An instance describes one column's type (a vlen kind of ``str``, a
    decimal's precision and scale, a list's element type...); the class is
    the kind.  Instances compare equal when they describe the same type.
    """

    #: The key of the kind's entry in ``meta/storage``; the registry's key.
    key: ClassVar[str] = ""

    #: Where the kind stands when a carray's, an Arrow type's or a dtype's
    #: kind is looked up (lower first; then in the order registered): a kind
    #: stored in another kind's layout plus an entry of its own (an Arrow
    #: extension type over its storage type) stands before that kind.
    lookup_rank: ClassVar[int] = 100

    # ------------------------------------------------------------ which columns

    @classmethod
    @abc.abstractmethod
    def of_meta(cls, meta) -> "ColumnKind | None":
        """The kind of the carray whose metadata is ``meta`` (a ``CarrayMeta``),
        or None when it is not of this kind."""

    @classmethod
    def of_arrow(cls, pa, typ) -> "ColumnKind | None":
        """The kind with which an Arrow column of type ``typ`` is written, or
        None when this kind does not take it (the default)."""
        return None

    @classmethod
    def of_dtype(cls, dtype) -> "ColumnKind | None":
        """The kind of a carray made with ``dtype`` (what :meth:`dtype` gives; a
        numpy dtype, a str or a dtype object of the package), so that Python
        items given with it may be built by pyarrow; None when this kind is
        not made so (the default)."""
        return None

    # ------------------------------------------------------------ its types

    @abc.abstractmethod
    def arrow_type(self, pa):
        """The pyarrow DataType of the column's rows."""

    @abc.abstractmethod
    def dtype(self):
        """What a carray of this kind is made with (``bcolz_store.carray(...,
        dtype=kind.dtype())``): a dtype object of the package, or a numpy dtype."""

    def accepts(self, pa, typ) -> bool:
        """Whether :meth:`encode` takes buffers of the Arrow type ``typ`` as they
        are (default: ``typ`` is :meth:`arrow_type`)."""
        return typ == self.arrow_type(pa)

    #: Whether :meth:`arrow_type` is an Arrow extension type over the Arrow type
    #: of the kind's atom (its columns' Arrow fields are then of the extension
    #: type, not of the type the Arrow converters give that atom).
    extension_type: ClassVar[bool] = False

    #: Whether carrays of the kind are made with ``nullable=True`` as well.
    nullable_carray: ClassVar[bool] = False

    # ------------------------------------------------------------ its rows

    @abc.abstractmethod
    def encode(self, engine, buffers: ArrowBuffers) -> None:
        """Append ``buffers`` (rows of :meth:`arrow_type`'s layout) to ``engine``,
        the carray's engine.

        Raises
        ------
        ValueError
            Rows the column cannot hold (a missing row in a column without
            nulls, a value out of the type's range), before anything changes.
        """

    @abc.abstractmethod
    def decode(self, engine, start: int, stop: int) -> ArrowBuffers:
        """Rows ``[start, stop)`` of ``engine`` (``0 <= start <= stop <= length``)
        in :meth:`arrow_type`'s layout."""

    def to_python(self, buffers: ArrowBuffers) -> np.ndarray:
        """The rows of ``buffers`` as the carray's reads give them (numpy
        items, or Python objects in an object array)."""
        raise NotImplementedError(f"{type(self).__name__}.to_python")

    def missing(self, buffers: ArrowBuffers) -> np.ndarray:
        """``bool`` array of ``buffers.length``: True where a row is missing."""
        return buffers.missing()

    def read_python(self, engine, start: int, stop: int) -> np.ndarray | None:
        """Rows ``[start, stop)`` of ``engine`` as the carray's reads give them,
        read by the kind itself, or None (the default): the engine reads them."""
        return None

    # ------------------------------------------------------------ its carrays
    #
    # What a carray of the kind does that one of bcolz's fixed dtypes does not.
    # Called on the class that holds the carray (:func:`column_kind`; the
    # class ColumnKind itself for bcolz's dtypes), with its metadata (a
    # ``CarrayMeta``) and engine; the defaults are bcolz's behaviour.

    #: Whether items are vlen ``str`` or ``bytes`` (a ``vlen`` entry: vlen and
    #: categorical carrays): one-dimensional, no sum, ``nbytes`` the engine's.
    vlen_items: ClassVar[bool] = False

    #: Whether items have any length (vlen, categorical and list carrays):
    #: one-dimensional, appended and copied block by block.
    variable_items: ClassVar[bool] = False

    #: Whether items are Python objects the engine encodes (decimals, structs):
    #: checked by the engine before a write, copied block by block.
    python_items: ClassVar[bool] = False

    #: Whether rows have named fields (a struct): ``c['name']`` is the field,
    #: not a query (:meth:`field_of`).
    has_fields: ClassVar[bool] = False

    @classmethod
    def field_of(cls, meta, engine, name: str):
        """``(engine, meta)`` of field ``name`` of a carray of this kind, sharing
        ``engine``'s rows (``carray.field``).

        Raises
        ------
        TypeError
            A kind without fields (the default).
        KeyError
            No such field.
        """
        raise TypeError("only struct carrays have fields")

    @classmethod
    def column_type(cls, meta, engine):
        """The dtype object of the package that describes a carray of this kind
        (``carray.column_type``: a decimal's or a struct's type, with its
        categorical fields' categories read from ``engine``), or None (the
        default)."""
        return None

    #: Whether items are codes of categories (a list given becomes an object
    #: array of references to its items).
    coded_items: ClassVar[bool] = False

    #: Whether reads give masked arrays of the atom's dtype (a copy rebuilt
    #: from them keeps the dtype).
    masked_items: ClassVar[bool] = False

    #: Whether numpy rows of the atom's dtype go straight into the leftover.
    direct_appends: ClassVar[bool] = True

    #: Whether items have an order (a table may be sorted by them).
    ordered_items: ClassVar[bool] = True

    #: Whether a stored carray of the kind may be indexed (when its items'
    #: engine keeps chunk statistics: :meth:`item_engine`).
    indexable: ClassVar[bool] = True

    @classmethod
    def item_engine(cls, engine):
        """The engine of the items whose statistics and index the carray keeps
        (default: ``engine``, the carray's)."""
        return engine

    @classmethod
    def refuse_plain(cls, value, meta, where: str) -> None:
        """Refuse ``value`` written to a carray held by no kind's hooks of
        conversion (``meta``: one of bcolz's dtypes) when it holds items only
        this kind's carrays hold (default: none is refused).

        Raises
        ------
        ValueError
            Such items (for the nullable kind: null items).
        """
        return None

    # ------------------------------------------------------------ new carrays

    #: Where the kind stands when a new carray's arguments are offered to the
    #: kinds (:func:`kinds_for_new`): lower first; None (the default): the
    #: kind makes no carray from constructor arguments.
    new_rank: ClassVar[int | None] = None

    @classmethod
    def new_request(cls, array, dtype, nullable):
        """What a new carray of initial data ``array``, ``dtype`` and
        ``nullable`` (the constructor's arguments) asks of this kind (a dtype
        object, a type, True...), or None when it is not of this kind.

        Raises
        ------
        TypeError, ValueError
            Arguments of this kind that contradict each other.
        """
        return None

    @classmethod
    def takes_items(cls, dtype) -> bool:
        """Whether ``dtype`` asks for a new column of this kind that takes its
        items as they are given, not converted by numpy first (default False)."""
        return False

    @classmethod
    def holds(cls, meta) -> bool:
        """Whether the carray of metadata ``meta`` is of this kind, whether or
        not the kind encodes its Arrow rows (default: :meth:`of_meta` gives one)."""
        return cls.of_meta(meta) is not None

    @classmethod
    def may_hold_nulls(cls, meta) -> bool:
        """Whether items may be null (default False)."""
        return False

    @classmethod
    def grows_null(cls, meta) -> bool:
        """Whether growing (``resize``) adds null items (default False: ``dflt``)."""
        return False

    @classmethod
    def vlen_type(cls, meta):
        """The :class:`~bcolz_store.vlen` type of the items, or None (the default)."""
        return None

    @classmethod
    def list_type(cls, meta):
        """The list or map type of the items, or None (the default)."""
        return None

    @classmethod
    def category(cls, meta, engine):
        """The :class:`~bcolz_store.category` of the items, or None (the default)."""
        return None

    @classmethod
    def codes_view(cls, meta, engine, length: int):
        """A view reading the items' codes by ``codes[key]``.

        Raises
        ------
        TypeError
            For a kind without codes (the default).
        """
        raise TypeError("only categorical carrays have codes")

    @classmethod
    def dflt(cls, meta, engine) -> np.ndarray:
        """0-d array: the fill value for growing (default: the metadata's)."""
        return meta.dflt

    @classmethod
    def isnull(cls, engine, meta, length: int, items) -> np.ndarray:
        """``bool`` array of ``length``: True where an item is null (``items()``:
        every item as the carray reads them); default: none is."""
        return np.zeros(length, dtype=bool)

    @classmethod
    def filler(cls, meta, fill, n: int):
        """``n`` atoms holding ``fill`` as ``resize`` appends them (default: an
        array of the atom's dtype)."""
        atom = meta.atom
        out = np.empty((n,) + atom.shape, dtype=atom.base)
        out[...] = fill
        return out

    @classmethod
    def to_items(cls, value, dtype, meta, arrlen, where):
        """``value`` as the items the engine takes (``carray_edit.to_ndarray``),
        or None (the default): converted as a numpy array of ``dtype``.

        Raises
        ------
        ValueError
            Values the kind cannot hold, or not broadcast to ``arrlen``.
        """
        return None

    @classmethod
    def prepare_carray(cls, meta, engine, source, convert):
        """The carray ``source`` made ready to append (every refusal raised
        before anything changes), or None (the default): appended as numpy
        blocks.

        Raises
        ------
        ValueError, KindMismatchError
            Items the kind refuses.
        """
        return None

    @classmethod
    def new_meta(cls, request, making):
        """``(CarrayMeta, data)``: the metadata of a new carray of this kind for
        ``request`` (what :meth:`new_request` returned) and its initial data,
        to be appended (an empty array when ``making.array`` is a carray, whose
        rows the caller appends).

        ``making`` holds the constructor's arguments (``array``, ``cparams``,
        ``dtype``, ``dflt``, ``expectedlen``, ``chunklen``, ``to_ndarray``,
        ``nullable``, ``item_nbytes``) and the two makers a kind may build
        on: ``making.fixed(array, dtype)`` (a carray of fixed-size atoms) and
        ``making.any(array, dtype, nullable, expectedlen, chunklen)`` (a carray of any kind:
        a struct's fields).

        Raises
        ------
        TypeError, ValueError, LimitError
            Data or arguments the kind cannot hold.
        """
        raise NotImplementedError(f"{cls.__name__}.new_meta")

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash((type(self), repr(sorted(vars(self).items()))))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({args})"


_REGISTRY: dict = {}


def register(cls: type) -> type:
    """Register the ColumnKind subclass ``cls`` under ``cls.key`` (a class decorator).

    Raises
    ------
    TypeError
        ``cls`` is not a ColumnKind subclass.
    ValueError
        An empty key, or a key another class holds.
    """
    if not (isinstance(cls, type) and issubclass(cls, ColumnKind)):
        raise TypeError(f"{cls!r} is not a ColumnKind subclass")
    if not cls.key:
        raise ValueError(f"{cls.__name__} has no key")
    held = _REGISTRY.get(cls.key)
    if held is not None and held is not cls:
        raise ValueError(f"kind key {cls.key!r} is held by {held.__name__}")
    _REGISTRY[cls.key] = cls
    return cls


def _lookup_order() -> list:
    """The registered kinds in the order lookups ask them: by
    :attr:`ColumnKind.lookup_rank` (a kind over another's layout first), then
    as registered (sorted again when the registry changes)."""
    kinds = tuple(_REGISTRY.values())
    if _ORDER[0] != kinds:
        _ORDER[:] = [kinds, sorted(kinds, key=lambda cls: getattr(cls, "lookup_rank", 100))]
    return _ORDER[1]


_ORDER: list = [(), []]         # (the registry's classes, their lookup order)


def registered() -> dict:
    """``{key: ColumnKind subclass}`` of every registered kind."""
    return dict(_REGISTRY)


def kind_of(meta) -> ColumnKind | None:
    """The kind of a carray's metadata (a ``CarrayMeta``), or None for bcolz's own
    fixed dtypes and the kinds not registered."""
    for cls in _lookup_order():
        found = cls.of_meta(meta)
        if found is not None:
            return found
    return None


def column_kind(meta) -> type:
    """The ColumnKind subclass that holds the carray of metadata ``meta``
    (:meth:`ColumnKind.holds`), or ColumnKind itself for bcolz's own dtypes:
    the class whose hooks say how the carray differs from bcolz's."""
    for cls in _lookup_order():
        if cls.holds(meta):
            return cls
    return ColumnKind


def check_plain_items(value, meta, where: str) -> None:
    """Let every kind refuse ``value`` written to the carray of metadata
    ``meta`` that converts it as numpy does (:meth:`ColumnKind.refuse_plain`).

    Raises
    ------
    ValueError
        Items a kind refuses there (null items: the nullable kind).
    """
    for cls in _lookup_order():
        cls.refuse_plain(value, meta, where)


def takes_items(dtype) -> bool:
    """Whether ``dtype`` asks for a new column of a kind that takes its items
    as they are given (:meth:`ColumnKind.takes_items`)."""
    return any(cls.takes_items(dtype) for cls in _lookup_order())


def kind_for_arrow(pa, typ) -> ColumnKind | None:
    """The kind an Arrow column of type ``typ`` is written as, or None (then the
    numpy path takes it)."""
    for cls in _lookup_order():
        found = cls.of_arrow(pa, typ)
        if found is not None:
            return found
    return None


def kind_for_dtype(dtype) -> ColumnKind | None:
    """The kind of a carray made with ``dtype`` (:meth:`ColumnKind.of_dtype`), or None."""
    for cls in _lookup_order():
        found = cls.of_dtype(dtype)
        if found is not None:
            return found
    return None


def kinds_for_new() -> list:
    """The registered kinds that make carrays from constructor arguments
    (:attr:`ColumnKind.new_rank` not None), in the order they are asked."""
    making = [cls for cls in _REGISTRY.values() if getattr(cls, "new_rank", None) is not None]
    return sorted(making, key=lambda cls: cls.new_rank)


def kind_request(buffers: ArrowBuffers, dtype, nullable, expectedlen):
    """``(dtype, nullable, expectedlen)`` with which a carray is made whose first
    rows are the Arrow ``buffers``: ``dtype`` as given, else the kind's
    (:meth:`ColumnKind.dtype`), ``nullable`` True for a kind made so, and
    ``expectedlen`` the rows' count when not given.

    Raises
    ------
    TypeError
        Buffers of an Arrow type no kind takes, with no ``dtype`` given.
    """
    kind = None
    if buffers.type is not None:
        import pyarrow as pa        # (buffers with a type were made by pyarrow)
        kind = kind_for_arrow(pa, buffers.type)
    if dtype is None:
        if kind is None:
            raise TypeError(f"Arrow rows of type {buffers.type} are not of a column kind; "
                            f"give the carray's dtype")
        dtype = kind.dtype()
    if kind is not None and kind.nullable_carray and nullable is None:
        nullable = True
    return dtype, nullable, buffers.length if expectedlen is None else expectedlen
