"""Shared fixtures and helpers: where bcolz 1.13's reference datasets live,
and the md5 of a dataset's bcolz files computed independently of the library."""

import hashlib
import os
from pathlib import Path

import pytest

# On stores without OS locks (S3, memory), a commit lock object whose holder
# stopped renewing it is taken over after this lease (30 s by default).  The
# crash tests reopen right after killing a writer, here and in their
# subprocesses: a short lease keeps them quick; the many-writers tests set the
# default again.
os.environ.setdefault("BCOLZ_STORE_LOCK_LEASE", "2")

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "bcolz-1.13"
# Names in a rootdir that are bcolz_store's own (never checksummed).
OWN_NAMES = ("bcolz_store.md5", "bcolz_store.json", ".bcolz_store-journal", ".bcolz_store.lock")


# Our chunk statistics (docs/format.md): a file bcolz neither writes nor reads, the one
# file that the comparisons of our files with bcolz's leave out (see without_stats).
STATS_FILE = "meta/stats"


def without_stats(files) -> dict:
    """``files`` (``{relative path: ...}``, as :func:`bcolz_files` gives them)
    without our chunk statistics, to compare with the files bcolz writes."""
    return {rel: value for rel, value in dict(files).items()
            if rel != STATS_FILE and not rel.endswith("/" + STATS_FILE)}


def bcolz_files(root: Path) -> dict:
    """``{relative path: md5 hex}`` of every bcolz file under root (ours excluded)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in OWN_NAMES]
        for name in files:
            if name in OWN_NAMES:
                continue
            full = Path(folder) / name
            out[full.relative_to(root).as_posix()] = hashlib.md5(full.read_bytes()).hexdigest()
    return out


#: The core marked ``oldest`` (paths under tests/): carray, ctable, dtypes, vlen and categorical
#: columns, the format and hostile metadata, the datasets bcolz wrote, the properties and the
#: operation machines (with a smaller budget there), the clients' flows and the interop with
#: pandas, numexpr, Arrow, zarr, HDF5 and dask.  ``.ci/run``
#: runs ``pytest -m oldest`` a second time on the oldest NumPy and pandas pyproject.toml allows.
OLDEST = ("test_carray.py", "test_ctable.py", "test_dtypes.py", "test_toplevel.py",
          "test_eval.py", "test_interop.py", "test_hostile.py", "test_query_semantics.py",
          "chunks/", "clients/", "compat/",
          "format/", "interop/", "machine/", "properties/", "vlen/")


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).resolve().parent
    for item in items:
        try:
            where = Path(item.path).resolve().relative_to(tests).as_posix()
        except ValueError:
            continue
        if where.startswith(OLDEST):
            item.add_marker(pytest.mark.oldest)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    if not FIXTURES.is_dir():
        pytest.skip(f"reference fixtures not found at {FIXTURES}")
    return FIXTURES


@pytest.fixture(autouse=True)
def _no_fsync_in_process(monkeypatch):
    """In-process tests skip fsync (durability is what the crash tests check, in
    writer subprocesses that keep it on); the commit protocol is otherwise the same."""
    from bcolz_store.storage.journal import Journal
    monkeypatch.setattr(Journal, "fsync_default", False)


# --- S3 on loopback: a moto server for the tests that need one -------------------------------

# Pickled handles carry no credentials: processes that unpickle them (dask's workers) find
# them as s3fs does, in the environment.  Set for the whole session, before any worker
# process starts (a module's dask cluster may start before the first S3 test).
_S3_TEST_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                        "AWS_DEFAULT_REGION": "eu-west-1"}


@pytest.fixture(scope="session", autouse=True)
def _s3_test_credentials_in_the_environment():
    saved = {name: os.environ.get(name) for name in _S3_TEST_CREDENTIALS}
    os.environ.update(_S3_TEST_CREDENTIALS)
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on 127.0.0.1 (a separate process), stopped at the end.

    Yields the storage options that reach it through s3fs.  Skips when moto or
    s3fs is not installed (extras ``test``/``s3``).
    """
    import subprocess
    import sys
    import time
    import urllib.request
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    env = dict(os.environ, **_S3_TEST_CREDENTIALS)
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                             "-p", str(port)], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(endpoint, timeout=1).read()
                break
            except Exception:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("the moto S3 server did not start")
                time.sleep(0.1)
        yield {"key": "testing", "secret": "testing", "use_listings_cache": False,
               "client_kwargs": {"endpoint_url": endpoint, "region_name": "eu-west-1"}}
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


_buckets = iter(range(10 ** 9))


@pytest.fixture
def s3_bucket(s3_server):
    """A new, empty bucket: ``(url 's3://bucket', storage_options)``."""
    import s3fs
    fs = s3fs.S3FileSystem(**s3_server)
    name = f"bucket-{os.getpid()}-{next(_buckets)}"
    fs.mkdir(name)
    return f"s3://{name}", s3_server
