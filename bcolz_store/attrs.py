"""User attributes of a carray or ctable, kept in its ``__attrs__`` file.

The file is ``json.dumps(attrs, ensure_ascii=True)`` plus a newline, rewritten
whole at each change, each change one commit of the dataset's journal.  Source: bcolz 1.x ``attrs``; bytes checked
by tests/format/test_meta.py against the fixtures.
"""

from __future__ import annotations


from .params import public_signature
from .errors import ReadOnlyError
from .format.meta import dump_attrs, load_attrs

__all__ = ["ATTRS_FILE", "attrs"]

ATTRS_FILE = "__attrs__"


@public_signature
class attrs:
    """A dict-like accessor for the attributes of a carray or ctable.

    ``a['key'] = value`` stores (and, on disk, persists) a JSON-serialisable
    value; ``a['key']``, ``del a['key']``, ``len(a)``, iteration over
    ``(name, value)`` pairs and ``getall()`` read them.

    Parameters
    ----------
    rootdir : str or None
        The dataset's rootdir; None keeps attributes in memory only.
    mode : {'r', 'w', 'a'}

    Raises
    ------
    ReadOnlyError
        When setting or deleting in mode 'r' (bcolz raised IOError; this is an
        IOError subclass too).
    TypeError
        When a value cannot be serialised to JSON.
    FormatError
        When an existing ``__attrs__`` file is not a JSON object.
    """

    def __init__(self, rootdir, mode, _new=False, _store=None):
        # (the package's own: _new, the dataset is being created, which writes an
        # empty file; _store, the dataset's DatasetStore)
        self.rootdir = rootdir
        self.mode = mode
        self.attrs = {}
        if _store is None and rootdir:
            from .storage.dataset import DatasetStore
            from .storage.urls import open_store
            _store = DatasetStore(open_store(rootdir, mode == "r"), readonly=(mode == "r"))
        self._store = _store
        if self._store is None:
            return
        if _new:
            if mode != "r":
                self._store.set(ATTRS_FILE, dump_attrs({}))
        else:
            self.reload()

    def reload(self) -> None:
        """Re-read the attributes from disk (after another writer's commit)."""
        if self._store is None:
            return
        if self._store.exists(ATTRS_FILE):
            self.attrs = load_attrs(self._store.get(ATTRS_FILE),
                                    f"{self._store.path(ATTRS_FILE)}")
        else:
            self.attrs = {}

    def _check(self, what: str) -> None:
        if self.rootdir and self.mode == "r":
            raise ReadOnlyError(f"{self.rootdir}: cannot {what} an attribute because mode "
                                f"is 'r'")

    def _commit(self, attrs: dict) -> None:
        """Make ``attrs`` the attributes: on disk one commit, then in memory."""
        if self._store is not None:
            with self._store.operation("attrs"):
                self._store.set(ATTRS_FILE, dump_attrs(attrs))
                self._store.commit()
        self.attrs = attrs

    def __setitem__(self, name, obj):
        self._check("modify")
        if not isinstance(name, str):
            raise TypeError(f"attribute names must be strings, not {type(name).__name__}")
        attrs = dict(self.attrs)
        attrs[name] = obj
        dump_attrs(attrs)  # TypeError (not JSON-serialisable) before anything changes
        self._commit(attrs)

    def update(self, other=(), /, **kwargs) -> None:
        """Set several attributes in one commit (``dict.update`` semantics).

        Setting n attributes one by one rewrites the file n times; this
        writes it once.

        Parameters
        ----------
        other : mapping or iterable of (name, value) pairs, optional
        **kwargs
            More attributes.

        Raises
        ------
        ReadOnlyError
            In mode 'r'.
        TypeError
            When a name is not a str or a value cannot be serialised to JSON;
            nothing is changed then.
        """
        self._check("modify")
        new = dict(other, **kwargs)
        for name in new:
            if not isinstance(name, str):
                raise TypeError(f"attribute names must be strings, not {type(name).__name__}")
        if not new:
            return
        attrs = dict(self.attrs)
        attrs.update(new)
        dump_attrs(attrs)
        self._commit(attrs)

    def __delitem__(self, name):
        self._check("remove")
        attrs = dict(self.attrs)
        del attrs[name]
        self._commit(attrs)

    def __getitem__(self, name):
        return self.attrs[name]

    def __contains__(self, name):
        return name in self.attrs

    def getall(self) -> dict:
        """A copy of all attributes as a dict."""
        return self.attrs.copy()

    def __iter__(self):
        return iter(self.attrs.items())

    def __len__(self):
        return len(self.attrs)

    def __str__(self):
        if not self.attrs:
            return "*no attrs*"
        return "".join(f"{name} : {value}" for name, value in self.attrs.items())

    def __repr__(self):
        if not self.attrs:
            return str(self)
        return "".join(f"{name} : {value!r}\n" for name, value in self.attrs.items())


