"""An Arrow C stream of arrays (not record batches) whose arrays are made on demand.

pyarrow makes a lazy C stream of record batches
(``RecordBatchReader.from_batches``) but none of plain arrays; a carray's
``__arrow_c_stream__``, asked for a type that is not a struct, streams arrays
of that type, one block at a time,
through the ``ArrowArrayStream`` C struct built here with :mod:`ctypes`
(Arrow's C stream interface, docs/format/CStreamInterface.html, and its
PyCapsule interface, docs/format/CDataInterface/PyCapsuleInterface.html, at
https://arrow.apache.org).

Each ``get_next`` call takes the next array from a Python iterator and
exports it with pyarrow (``Array._export_to_c``); ``get_schema`` exports the
type; an exception becomes the error code ``EIO`` and the message
``get_last_error`` returns.  The consumer may move the struct (pyarrow and
polars do); the state stays registered under ``private_data`` until the
consumer calls ``release``.
"""

from __future__ import annotations

import ctypes
import errno
import itertools
import threading

__all__ = ["array_stream_capsule"]


class _ArrowArrayStream(ctypes.Structure):
    pass


_GET_SCHEMA = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_ArrowArrayStream), ctypes.c_void_p)
_GET_NEXT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(_ArrowArrayStream), ctypes.c_void_p)
_GET_LAST_ERROR = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(_ArrowArrayStream))
_RELEASE = ctypes.CFUNCTYPE(None, ctypes.POINTER(_ArrowArrayStream))

_ArrowArrayStream._fields_ = [("get_schema", _GET_SCHEMA), ("get_next", _GET_NEXT),
                              ("get_last_error", _GET_LAST_ERROR), ("release", _RELEASE),
                              ("private_data", ctypes.c_void_p)]

_NAME = b"arrow_array_stream"
_lock = threading.Lock()
_keys = itertools.count(1)
_streams: dict = {}        # private_data -> _State, until the consumer releases it
_structs: dict = {}        # address -> struct, until its capsule is freed


class _State:
    def __init__(self, export_schema, arrays):
        self.export_schema = export_schema
        self.arrays = arrays
        self.error = None       # ctypes.c_char_p of the last error, kept alive here


def _state(stream):
    return _streams[stream.contents.private_data]


def _failed(state, err) -> int:
    state.error = ctypes.c_char_p(f"{type(err).__name__}: {err}".encode("utf-8", "replace"))
    return errno.EIO


@_GET_SCHEMA
def _get_schema(stream, out):
    state = _state(stream)
    try:
        state.export_schema(out)
    except Exception as err:  # noqa: BLE001 - handed to the consumer as an error code
        return _failed(state, err)
    return 0


@_GET_NEXT
def _get_next(stream, out):
    state = _state(stream)
    try:
        array = next(state.arrays, None)
        if array is None:               # the end: a released (zeroed) ArrowArray
            ctypes.memset(out, 0, 80)
        else:
            array._export_to_c(out)
    except Exception as err:  # noqa: BLE001 - handed to the consumer as an error code
        return _failed(state, err)
    return 0


@_GET_LAST_ERROR
def _get_last_error(stream):
    error = _state(stream).error
    return None if error is None else ctypes.cast(error, ctypes.c_void_p).value


@_RELEASE
def _release(stream):
    with _lock:
        _streams.pop(stream.contents.private_data, None)
    stream.contents.release = _RELEASE()


_PyCapsule_New = ctypes.pythonapi.PyCapsule_New
_PyCapsule_New.restype = ctypes.py_object
_PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
# (a prototype of its own: the capsule arrives as an address in the destructor)
_PyCapsule_GetPointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _free_capsule(capsule):
    address = _PyCapsule_GetPointer(capsule, _NAME)
    with _lock:
        struct = _structs.pop(address, None)
    if struct is not None and struct.release:     # never moved out: release it here
        struct.release(ctypes.pointer(struct))


def array_stream_capsule(export_schema, arrays):
    """A PyCapsule ``"arrow_array_stream"`` streaming ``arrays``.

    Parameters
    ----------
    export_schema : callable
        ``export_schema(address)`` writes the stream's ArrowSchema at
        ``address`` (e.g. ``pyarrow.DataType._export_to_c``).
    arrays : iterator of pyarrow.Array
        The arrays, all of that type, drawn one per ``get_next`` call.

    Returns
    -------
    PyCapsule
        Holding an ``ArrowArrayStream``; freeing the capsule releases a stream
        the consumer did not move out.
    """
    with _lock:
        key = next(_keys)
        _streams[key] = _State(export_schema, iter(arrays))
        struct = _ArrowArrayStream(_get_schema, _get_next, _get_last_error, _release, key)
        address = ctypes.addressof(struct)
        _structs[address] = struct
    return _PyCapsule_New(address, _NAME, ctypes.cast(_free_capsule, ctypes.c_void_p))
