"""Credentials in pickled handles: a handle of a carray or ctable on a remote
store carries its ``storage_options`` without the credentials, unless the
process asks for them (:func:`credentials_in_pickles`).

``bcolz_store.handles`` exports these names as well (where docs/durability.md
names them).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["carried_options", "credentials_in_pickles", "strip_credentials"]

# Names of storage options that are credentials (compared in lower case):
# these exactly, and any name holding one of the words after them.
_SECRET_NAMES = frozenset({"key", "access_key", "access_key_id", "aws_access_key_id",
                           "account_key", "session", "sas", "connection_string"})
_SECRET_WORDS = ("secret", "password", "passwd", "token", "credential", "auth",
                 "private_key", "api_key", "apikey", "signature")

_KEEP = {"depth": 0}
_KEEP_LOCK = threading.Lock()


@contextmanager
def credentials_in_pickles():
    """Pickle credentials with handles while the block runs (process-wide).

    Handles pickled inside carry their ``storage_options`` whole, key and
    secret included: anyone who reads such a pickle has them.  Meant for
    workers that have no credentials of their own, on a network you trust.
    Process-wide, so that the threads dask pickles in see it too.
    """
    with _KEEP_LOCK:
        _KEEP["depth"] += 1
    try:
        yield
    finally:
        with _KEEP_LOCK:
            _KEEP["depth"] -= 1


def _is_secret(name) -> bool:
    if not isinstance(name, str):
        return False
    low = name.lower()
    return low in _SECRET_NAMES or any(word in low for word in _SECRET_WORDS)


def strip_credentials(options):
    """``storage_options`` without their credentials, as a handle carries them.

    Drops, at any depth of nested dicts and lists, the entries named ``key``,
    ``access_key``, ``access_key_id``, ``aws_access_key_id``,
    ``account_key``, ``session``, ``sas``, ``connection_string`` or holding
    ``secret``, ``password``, ``passwd``, ``token``, ``credential``,
    ``auth``, ``private_key``, ``api_key``, ``apikey`` or ``signature`` in
    their name (any case); keeps the rest.

    Parameters
    ----------
    options : dict or None

    Returns
    -------
    dict or None
        A new dict (None for None or when nothing is left).
    """
    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if not _is_secret(k)}
        if isinstance(value, (list, tuple)):
            return type(value)(clean(v) for v in value)
        return value
    if options is None:
        return None
    return clean(dict(options)) or None


def carried_options(options):
    """``storage_options`` as a pickle carries them: without credentials
    (:func:`strip_credentials`) unless :func:`credentials_in_pickles` is active."""
    return options if _KEEP["depth"] else strip_credentials(options)
