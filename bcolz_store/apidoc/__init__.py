"""The reference docstrings of carray's and ctable's public methods.

bcolz's API is large (carray and ctable have about 45 public methods each),
and each method's numpydoc (parameters, returns, every error raised) is
longer than the code that delegates it to the parts.  As numpy keeps the
docstrings of its array methods in a module of their own (``add_newdoc``),
the classes here stay short enough to read in one sitting, and their
reference lives beside them: :mod:`bcolz_store.apidoc.carray` and
:mod:`bcolz_store.apidoc.ctable`, one entry per method, applied when the
class is created by :func:`documented`.  ``help(bcolz_store.carray.append)``
and the docs show them as any docstring.  :func:`public_signature` keeps the
``_private`` parameters that the package's own modules pass to a constructor
out of its signature and ``help()``.
"""

from __future__ import annotations

import inspect

__all__ = ["documented", "public_signature"]


def documented(docs: dict):
    """A class decorator giving the class and its members the docstrings
    ``docs`` (member name -> numpydoc text; ``""``: the class itself).

    Raises
    ------
    AttributeError
        An entry names no member of the class (a method renamed or removed).
    ValueError
        A member documented both in the class and in ``docs``.
    """
    def apply(cls):
        for name, text in docs.items():
            if name == "":
                if cls.__doc__:
                    raise ValueError(f"{cls.__name__} is documented twice")
                cls.__doc__ = inspect.cleandoc(text)
                continue
            member = cls.__dict__.get(name)
            if member is None:
                raise AttributeError(f"{cls.__name__} has no member {name!r} to document")
            target = member.fget if isinstance(member, property) else \
                member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if target.__doc__:
                raise ValueError(f"{cls.__name__}.{name} is documented twice")
            target.__doc__ = inspect.cleandoc(text)
        return public_signature(cls)
    return apply


def public_signature(cls):
    """A class decorator: ``inspect.signature`` and ``help()`` of the class
    and of its ``__init__`` show only the public parameters.

    The ``_private`` parameters, which only the package's own modules pass
    (a store, a dataset or a lock already opened), stay accepted; they are
    not part of the API, so the signature users see leaves them out.
    """
    init = cls.__dict__.get("__init__")
    if init is None:
        return cls
    full = inspect.signature(init)
    shown = full.replace(parameters=[p for name, p in full.parameters.items()
                                     if not name.startswith("_")])
    init.__signature__ = shown
    cls.__signature__ = shown.replace(parameters=list(shown.parameters.values())[1:])
    return cls
