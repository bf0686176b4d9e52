"""Pickled handles carry no credentials, carry ``allow_pickle=True`` only when the
user set it, and the functions that rebuild them refuse what no handle holds."""

import pickle
import pickletools

import numpy as np
import pytest

import bcolz_store
from bcolz_store import handles
from bcolz_store.errors import FormatError, UnsafeDataError

SECRET = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"


def _strings(data: bytes) -> list:
    """Every string a pickle holds."""
    return [arg for op, arg, _ in pickletools.genops(data) if isinstance(arg, str)]


class _Url:
    """A stored carray on an fsspec URL whose storage options hold credentials."""

    OPTIONS = {"key": "AKIAEXAMPLE", "secret": SECRET, "token": "session-" + SECRET,
               "anon": False, "use_listings_cache": False,
               "client_kwargs": {"endpoint_url": "http://127.0.0.1:1", "region_name": "x",
                                 "aws_access_key_id": "AKIAEXAMPLE",
                                 "aws_secret_access_key": SECRET,
                                 "aws_session_token": "t-" + SECRET},
               "config_kwargs": {"signature_version": "s3v4", "retries": {"max_attempts": 2}},
               "headers": {"Authorization": "Bearer " + SECRET, "X-Trace": "1"},
               "password": SECRET, "client_secret": SECRET, "profile": "research"}


def test_strip_credentials_keeps_endpoint_anon_region_profile():
    kept = handles.strip_credentials(_Url.OPTIONS)
    assert kept == {"anon": False, "use_listings_cache": False, "profile": "research",
                    "client_kwargs": {"endpoint_url": "http://127.0.0.1:1", "region_name": "x"},
                    "config_kwargs": {"retries": {"max_attempts": 2}},
                    "headers": {"X-Trace": "1"}}
    assert handles.strip_credentials(None) is None
    assert handles.strip_credentials({"key": "k", "secret": "s"}) is None
    assert "secret" in _Url.OPTIONS                      # the caller's dict is left as it was


def test_a_stored_handle_carries_no_secrets(monkeypatch, tmp_path):
    c = bcolz_store.carray(np.arange(10), rootdir="memory://handles/c.bcolz", mode="w")
    # memory:// cannot be pickled (its bytes are in this process): as if on S3
    monkeypatch.setattr(handles, "portable_rootdir",
                        lambda root, options: ("s3://bucket/c.bcolz", dict(_Url.OPTIONS)))
    data = pickle.dumps(c)
    assert not [s for s in _strings(data) if SECRET in s or "AKIAEXAMPLE" in s]
    func, args = c.__reduce__()
    assert func is handles.open_stored and args[2]["client_kwargs"] == {
        "endpoint_url": "http://127.0.0.1:1", "region_name": "x"}
    with handles.credentials_in_pickles():              # the explicit opt-in
        assert SECRET in "".join(_strings(pickle.dumps(c)))
    assert SECRET not in "".join(_strings(pickle.dumps(c)))   # only inside the block


def test_a_column_handle_carries_no_secrets(monkeypatch):
    t = bcolz_store.ctable([np.arange(5), np.arange(5.0)], names=["a", "b"],
                           rootdir="memory://handles/t.bcolz", mode="w")
    monkeypatch.setattr(handles, "portable_rootdir",
                        lambda root, options: ("s3://bucket/t.bcolz", dict(_Url.OPTIONS)))
    for obj in (t, t.cols["a"]):
        assert not [s for s in _strings(pickle.dumps(obj)) if SECRET in s]


def test_a_handle_carries_allow_pickle_only_when_the_user_set_it(tmp_path):
    objs = np.array([{"a": 1}, None, "x"], dtype=object)
    made = bcolz_store.carray(objs, rootdir=str(tmp_path / "o"), mode="w")
    assert list(made[:]) == [{"a": 1}, None, "x"]         # its own objects: readable here
    assert made.__reduce__()[1][3] is False
    copy = pickle.loads(pickle.dumps(made))
    with pytest.raises(UnsafeDataError):
        copy[:]
    plain = bcolz_store.carray(np.arange(3), rootdir=str(tmp_path / "p"), mode="w")
    assert plain.__reduce__()[1][3] is False
    trusted = bcolz_store.open(str(tmp_path / "o"), mode="r", allow_pickle=True)
    assert trusted.__reduce__()[1][3] is True
    assert list(pickle.loads(pickle.dumps(trusted))[:]) == [{"a": 1}, None, "x"]
    made_trusted = bcolz_store.carray(objs, rootdir=str(tmp_path / "q"), mode="w",
                                      allow_pickle=True)
    assert list(pickle.loads(pickle.dumps(made_trusted))[:]) == [{"a": 1}, None, "x"]
    # in memory the objects travel in the pickle itself, readable in the copy
    assert list(pickle.loads(pickle.dumps(bcolz_store.carray(objs)))[:]) == \
        [{"a": 1}, None, "x"]


class _NotACarray:
    def __init__(self, *args, **kwargs):
        raise AssertionError("called")


@pytest.mark.parametrize("call", [
    lambda root: handles.open_stored(_NotACarray, root, None, False, False, None),
    lambda root: handles.open_stored(dict, root, None, False, False, None),
    lambda root: handles.open_stored(bcolz_store.open, root, None, False, False, None),
    lambda root: handles.open_stored(bcolz_store.carray, 7, None, False, False, None),
    lambda root: handles.open_stored(bcolz_store.carray, root, None, "yes", False, None),
    lambda root: handles.open_stored(bcolz_store.carray, root, {"session": object()},
                                     False, False, None),
    lambda root: handles.open_table_column(bcolz_store.carray, root, None, ["a"], False, False,
                                         None),
    lambda root: handles.rebuild_carray(_NotACarray, np.dtype("i8"), {}, 10, 10,
                                        np.zeros((), "i8"), (None, np.zeros(0)), {}),
    lambda root: handles.rebuild_items(bcolz_store.ctable, ["x"], None, {}, 10, 10, None, {}),
    lambda root: handles.rebuild_ctable(bcolz_store.carray, [], [], {}, None),
    lambda root: handles.rebuild_ctable(bcolz_store.ctable, [bcolz_store.open(root)], ["a"],
                                        {}, None),
], ids=["unknown class", "dict", "a function", "rootdir not a str", "allow_pickle not a bool",
        "an object in storage_options", "column name not a str", "rebuild_carray class",
        "rebuild_items class", "rebuild_ctable class", "a stored column in memory"])
def test_rebuild_functions_refuse_what_no_handle_holds(tmp_path, call):
    root = str(tmp_path / "c")
    bcolz_store.carray(np.arange(3), rootdir=root, mode="w")
    with pytest.raises(FormatError, match="not a bcolz_store handle"):
        call(root)


def test_no_pickle_of_bcolz_store_names_opens_a_writer(tmp_path):
    """The pickles of earlier versions reopen readers; mode 'w' (which would empty
    the dataset) is refused."""
    from bcolz_store.carray import _rebuild_carray
    from bcolz_store.ctable import _reopen
    root = str(tmp_path / "t")
    bcolz_store.ctable([np.arange(5)], names=["a"], rootdir=root, mode="w")
    with pytest.raises(FormatError, match="mode 'w'"):
        _reopen(root, "w")
    assert list(bcolz_store.open(root, mode="r")["a"][:]) == [0, 1, 2, 3, 4]
    assert _reopen(root, "a").mode == "r"
    croot = str(tmp_path / "c")
    bcolz_store.carray(np.arange(4), rootdir=croot, mode="w")
    assert _rebuild_carray(None, croot).mode == "r"


def test_handles_say_unpickling_is_unpickling():
    assert "Unpickling a handle is unpickling" in handles.__doc__
    assert "only from a source you trust" in handles.__doc__


def test_a_reshaped_object_carray_carries_allow_pickle_only_when_given(tmp_path):
    objs = np.array([{"a": i} for i in range(6)], dtype=object)
    c = bcolz_store.carray(objs, rootdir=str(tmp_path / "o"), mode="w")
    r = c.reshape((6,))
    assert [v["a"] for v in r[:]] == list(range(6))      # still readable here
    assert r.__reduce__()[1][3] is False                  # its handle does not allow pickles


def test_from_dask_plans_carry_no_credentials():
    from bcolz_store.handles import credentials_in_pickles
    from bcolz_store.interop.dask_write import _Plan
    plan = _Plan(("s3://b/x", {"key": "AKIDKEY123", "secret": "SECRETVALUE",
                               "endpoint_url": "http://127.0.0.1:1"}), "f", False, ())
    sent = pickle.dumps(plan)
    assert b"SECRETVALUE" not in sent and b"AKIDKEY123" not in sent
    assert pickle.loads(sent).store == ("s3://b/x", {"endpoint_url": "http://127.0.0.1:1"})
    assert plan.store[1]["secret"] == "SECRETVALUE"      # the writer's own copy is whole
    with credentials_in_pickles():
        assert pickle.loads(pickle.dumps(plan)).store == plan.store
