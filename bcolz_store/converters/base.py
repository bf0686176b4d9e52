"""The converter protocol: what a file format declares, and the registry.

A format is one class: a :class:`Converter` subclass that declares, by class
attributes, its ``name``, the ``suffixes`` of its paths, the pip ``extra``
(and the library, ``requires``) it needs, whether it reaches ``remote`` URLs,
and what it keeps (attrs, vlen and categorical columns...); and that
implements :meth:`Converter.read` (a file into a carray or ctable) and
:meth:`Converter.write` (a carray or ctable into a file).  Decorated with
:func:`register_converter`, it is found by name (:func:`get_converter`) and by
suffix (:func:`converter_for_suffix`), and :func:`bcolz_store.converters.convert`,
the ``bcolz-store convert`` command and the table of formats all list it::

    @register_converter
    class CsvConverter(Converter):
        name = "csv"
        suffixes = (".csv",)
        description = "comma-separated text"

        def read(self, src, rootdir=None, mode="w", *, progress=None):
            ...

        def write(self, obj, path, *, overwrite=False, progress=None):
            ...

The options a ``read`` or ``write`` names in its signature are the options
:func:`~bcolz_store.converters.convert` passes on to it.
"""

from __future__ import annotations

import abc
import os
from pathlib import Path
from typing import ClassVar

from ..interop.optional import require
from ..errors import (DuplicateConverterError, MissingDependencyError, RemoteFormatError,
                      UnknownFormatError)

__all__ = ["Converter", "ConverterRegistry", "DuplicateConverterError",
           "MissingDependencyError", "RemoteFormatError", "UnknownFormatError",
           "converter_for_suffix", "get_converter", "register_converter",
           "registered_converters", "registry", "require"]


class Converter(abc.ABC):
    """A file format that carrays and ctables convert to and from.

    Attributes
    ----------
    name : str
        The format's name (``'parquet'``), as ``convert(to=...)`` and
        ``bcolz-store convert --to`` take it.
    suffixes : tuple of str
        Lower-case path suffixes that mean this format (``('.parquet',
        '.pq')``); no two converters share one.
    description : str
        A few words for the table of formats (``'Apache Parquet'``).
    extra : str or None
        The pip extra of bcolz_store that installs ``requires``.
    requires : str or None
        The optional library the format needs (imported only when used).
    remote : bool
        Whether :meth:`read` and :meth:`write` take URLs (``s3://...``) and
        ``storage_options``.
    folder_names : tuple of str
        For formats written as a folder: the names of files whose presence
        makes a folder (or a store at a URL) one of this format.  Empty for
        single-file formats.
    noun : str
        What one of its outputs is called in messages (``'zarr store'``);
        '' means ``'<name> file'``.
    keeps_kind : bool
        Whether a carray comes back as a carray (else as a ctable with one
        column ``data``).
    keeps_attrs, keeps_column_attrs : bool
        Whether the attrs of the container, and of a ctable's columns, come
        back (a format that has no place for them refuses them unless
        ``drop_attrs=True``).
    vlen, categorical : bool
        Whether vlen columns, and categorical columns, come back with their
        type.
    """

    name: ClassVar[str] = ""
    suffixes: ClassVar[tuple] = ()
    description: ClassVar[str] = ""
    extra: ClassVar[str | None] = None
    requires: ClassVar[str | None] = None
    remote: ClassVar[bool] = False
    folder_names: ClassVar[tuple] = ()
    noun: ClassVar[str] = ""
    keeps_kind: ClassVar[bool] = True
    keeps_attrs: ClassVar[bool] = True
    keeps_column_attrs: ClassVar[bool] = True
    vlen: ClassVar[bool] = False
    categorical: ClassVar[bool] = False

    @abc.abstractmethod
    def read(self, src, rootdir=None, mode="w", *, progress=None, **options):
        """Read a file of this format into a carray or ctable.

        Parameters
        ----------
        src : str or os.PathLike
            The file (or folder, or URL where :attr:`remote`).
        rootdir : str, os.PathLike or Store, optional
            Where to build the container (None: in memory).
        mode : {'w', 'a'}, default 'w'
            'w' replaces what is at ``rootdir``; 'a' refuses an existing one.
        progress : bool or None, default None
            Progress bars on stderr (None: when stderr is a terminal).
        **options
            The format's own options, named in the subclass's signature.

        Returns
        -------
        carray or ctable

        Raises
        ------
        DatasetNotFoundError
            When ``src`` does not exist.
        FormatError
            When ``src`` is not what the format says.
        MissingDependencyError
            When :attr:`requires` is not installed.
        """

    @abc.abstractmethod
    def write(self, obj, path, *, overwrite=False, progress=None, **options):
        """Write a carray or ctable as a file of this format.

        Parameters
        ----------
        obj : carray or ctable
        path : str or os.PathLike
            Where to write (a URL where :attr:`remote`).
        overwrite : bool, default False
            Replace an existing file of this format.
        progress : bool or None, default None
            Progress bars on stderr (None: when stderr is a terminal).
        **options
            The format's own options, named in the subclass's signature.

        Returns
        -------
        object
            Whatever the format tells of what it wrote (may be None).

        Raises
        ------
        DatasetExistsError
            When ``path`` exists and ``overwrite`` is False; nothing of it
            changes.
        MissingDependencyError
            When :attr:`requires` is not installed.
        """

    def outputs(self, path) -> list:
        """The paths that writing to ``path`` makes (and would replace).

        Parameters
        ----------
        path : str or os.PathLike

        Returns
        -------
        list of pathlib.Path
            ``[path]``, unless the format writes files beside it.
        """
        return [Path(os.fspath(path))]

    def holds(self, path) -> bool:
        """Whether an existing local ``path`` is what this format writes.

        Parameters
        ----------
        path : pathlib.Path

        Returns
        -------
        bool
            For a folder format, a folder (not a link) with one of
            :attr:`folder_names`; else a regular file (a device, a FIFO or
            a socket is never one: a conversion would replace it).
        """
        path = Path(path)
        if self.folder_names:
            return path.is_dir() and not path.is_symlink() and \
                any((path / name).is_file() for name in self.folder_names)
        return path.is_file()

    def check_available(self) -> None:
        """Import :attr:`requires`, if any.

        Raises
        ------
        MissingDependencyError
            When it is not installed; the message names :attr:`extra`.
        """
        if self.requires:
            require(self.requires, self.extra, f"{self.name} conversions")


class ConverterRegistry:
    """Converter classes by name and by suffix.

    Parameters
    ----------
    converters : iterable of type, optional
        Classes to register at once.
    """

    def __init__(self, converters=()):
        self._by_name = {}
        self._by_suffix = {}
        for cls in converters:
            self.register(cls)

    def register(self, cls):
        """Register a :class:`Converter` subclass.

        Parameters
        ----------
        cls : type
            A concrete subclass of :class:`Converter` with a ``name``.

        Returns
        -------
        type
            ``cls`` (so that this serves as a class decorator).

        Raises
        ------
        TypeError
            When ``cls`` is not a concrete :class:`Converter` subclass.
        ValueError
            A missing name, or a suffix not lower case starting with a dot.
        DuplicateConverterError
            When its name or one of its suffixes is taken.
        """
        if not (isinstance(cls, type) and issubclass(cls, Converter)) or \
                getattr(cls, "__abstractmethods__", None):
            raise TypeError(f"{cls!r} is not a concrete Converter subclass")
        if not cls.name or not isinstance(cls.name, str):
            raise ValueError(f"{cls.__name__} has no name")
        bad = [s for s in cls.suffixes if not (s.startswith(".") and s == s.lower())]
        if bad:
            raise ValueError(f"{cls.__name__}: suffixes must be lower case and start with a "
                             f"dot: {bad}")
        if cls.name in self._by_name:
            raise DuplicateConverterError(f"a converter named {cls.name!r} is registered "
                                          f"({self._by_name[cls.name].__qualname__})")
        taken = {s: self._by_suffix[s] for s in cls.suffixes if s in self._by_suffix}
        if taken or len(set(cls.suffixes)) != len(cls.suffixes):
            raise DuplicateConverterError(f"{cls.__name__}: suffixes taken: "
                                          f"{sorted(taken) or list(cls.suffixes)}")
        self._by_name[cls.name] = cls
        self._by_suffix.update(dict.fromkeys(cls.suffixes, cls))
        return cls

    def get(self, name: str):
        """The converter class named ``name``.

        Parameters
        ----------
        name : str

        Returns
        -------
        type

        Raises
        ------
        UnknownFormatError
            When no converter has that name.
        """
        try:
            return self._by_name[name]
        except (KeyError, TypeError):
            raise UnknownFormatError(f"unknown format {name!r}; expected one of "
                                     f"{', '.join(self.names())}") from None

    def for_suffix(self, suffix: str):
        """The converter class of a path suffix (``'.pq'``; any case).

        Parameters
        ----------
        suffix : str

        Returns
        -------
        type

        Raises
        ------
        UnknownFormatError
            When no converter declares that suffix.
        """
        try:
            return self._by_suffix[suffix.lower()]
        except KeyError:
            raise UnknownFormatError(f"no format has the suffix {suffix!r} (known suffixes: "
                                     f"{', '.join(self.suffixes())})") from None

    def names(self) -> tuple:
        """The registered formats' names, sorted."""
        return tuple(sorted(self._by_name))

    def suffixes(self) -> tuple:
        """The registered suffixes, sorted."""
        return tuple(sorted(self._by_suffix))

    def __iter__(self):
        """The registered classes, sorted by name."""
        return iter([self._by_name[name] for name in self.names()])

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name) -> bool:
        return name in self._by_name


#: The converters of :func:`bcolz_store.converters.convert`.
registry = ConverterRegistry()


def register_converter(cls):
    """Register a converter class in :data:`registry` (a class decorator).

    Parameters
    ----------
    cls : type
        A concrete :class:`Converter` subclass.

    Returns
    -------
    type
        ``cls``.

    Raises
    ------
    DuplicateConverterError
        When its name or a suffix is taken.
    TypeError
        When ``cls`` is not a concrete :class:`Converter` subclass.
    """
    return registry.register(cls)


def get_converter(name: str):
    """The registered converter class named ``name``.

    Parameters
    ----------
    name : str

    Returns
    -------
    type

    Raises
    ------
    UnknownFormatError
        When no converter has that name.
    """
    return registry.get(name)


def converter_for_suffix(suffix: str):
    """The registered converter class of a path suffix.

    Parameters
    ----------
    suffix : str
        With its dot (``'.parquet'``); any case.

    Returns
    -------
    type

    Raises
    ------
    UnknownFormatError
        When no converter declares it.
    """
    return registry.for_suffix(suffix)


def registered_converters() -> list:
    """The registered converter classes, sorted by name.

    Returns
    -------
    list of type
    """
    return list(registry)
