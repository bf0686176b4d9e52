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


#: Modules whose tests start Python processes (marked ``subprocess``): writers killed
#: with SIGKILL, fuzzing workers, the CLI as a process, dask's worker processes.
SUBPROCESS = ("crash/", "hostile/", "test_hostile.py", "vlen/test_hostile_vlen.py",
              "interop/test_dask.py", "interop/test_hostile_conversions.py",
              "storage/test_commit_lock.py", "storage/test_many_writers.py",
              "test_cli.py", "test_limits.py", "test_parallel.py")

#: Modules of hypothesis-drawn hostile datasets (marked ``fuzz``).
FUZZ = ("hostile/test_fuzz.py", "hostile/test_fuzz_inputs.py")

#: Tests of 2 s or more on a 2-core machine (``pytest -n 2 --durations``), marked ``slow``
#: with every test that starts processes or talks to the S3 server (the quick tier,
#: ``-m "not slow"``, leaves them out): ``path::name`` (every parametrization;
#: ``path::Class::name`` in a class), or a module path for all of its tests.
SLOW = (
    "chunks/test_vlen_codec.py::test_any_str_items_round_trip",
    "crash/test_crash.py::test_concurrent_reader_on_s3_sees_committed_states",
    "crash/test_crash.py::test_concurrent_reader_sees_committed_states",
    "crash/test_crash.py::test_sigkill_leaves_a_committed_state",
    "crash/test_crash.py::test_sigkill_on_s3_leaves_a_committed_state",
    "crash/test_crash.py::test_writer_without_kill_matches_model",
    "crash/test_kinds_crash.py::test_sigkill_leaves_a_committed_step",
    "crash/test_replace.py::test_sigkill_during_replacement_leaves_old_or_new",
    "hostile/test_fuzz.py::test_fuzz",
    "hostile/test_fuzz_inputs.py::test_fuzz_inputs",
    "interop/test_convert_remote.py::test_bcolz_to_a_url_and_back",
    "interop/test_convert_remote.py::test_formats_that_reach_urls_both_ways",
    "interop/test_dask.py::test_from_array_with_the_process_scheduler",
    "interop/test_dask.py::test_round_trips_on_a_distributed_cluster",
    "interop/test_hdf5.py::test_a_bytes_attribute_is_refused_by_name_or_dropped",
    "interop/test_hdf5.py::test_a_node_that_is_not_there_or_a_group_is_a_clear_error",
    "interop/test_hdf5.py::test_the_command_reads_and_writes_the_node_it_is_given",
    "interop/test_hostile_conversions.py::test_a_non_hdf5_file_is_a_format_error_and_the_cli_says_so",
    "interop/test_hostile_conversions.py::test_byte_flipped_arrow_files_never_kill_the_interpreter",
    "interop/test_hostile_conversions.py::test_two_thousand_hdf5_attributes_convert_quickly",
    "machine/test_carray_machine.py::test_carray_machine",
    "machine/test_carray_machine.py::test_carray_machine_on_s3",
    "machine/test_ctable_machine.py::test_ctable_machine",
    "machine/test_ctable_machine.py::test_ctable_machine_on_s3",
    "properties/test_condition_oracle.py::test_conditions_answer_as_the_model",
    "properties/test_state_machine.py::TestCarrayInMemory::runTest",
    "properties/test_state_machine.py::TestCarrayOnDisk::runTest",
    "storage/test_contention_faults.py::test_writers_killed_through_s3_faults",
    "storage/test_contention_faults.py::test_writers_killed_while_appending_locally",
    "storage/test_contention_faults.py::test_writers_killed_while_appending_on_s3",
    "storage/test_contention_faults.py::test_writers_through_s3_faults_lose_and_double_nothing",
    "storage/test_kinds_on_s3.py::test_conditions_on_the_kinds_select_what_pyarrow_selects",
    "storage/test_kinds_on_s3.py::test_two_writers_append_every_kind_and_a_fresh_open_reads_it",
    "storage/test_many_writers.py::test_a_checksum_file_written_in_the_background_is_in_place_before_its_record",
    "storage/test_many_writers.py::test_full_reads_beside_a_writer_committing_every_35_ms_complete",
    "storage/test_many_writers.py::test_writers_appending_at_once_locally",
    "storage/test_many_writers.py::test_writers_appending_at_once_on_s3",
    "storage/test_protocol_model.py::test_a_writer_stopped_after_each_of_its_requests",
    "storage/test_protocol_model.py::test_one_fault_at_each_write_of_a_writer",
    "storage/test_protocol_model.py::test_protocol_on_s3",
    "storage/test_remote_datasets.py::test_zipline_ctable_on_s3_reads_back_exactly",
    "test_bench_queries.py::test_the_planned_side_builds_its_indexes_and_explains",
    "test_bench_queries.py::test_the_run_succeeds_and_reports",
    "test_benchmarks.py::test_quick_run_succeeds_and_writes_results",
    "test_benchmarks.py::test_the_kinds_benchmark_runs_quick_and_every_answer_is_right",
    "test_benchmarks.py::test_the_thread_sweep_runs_and_judges_its_targets",
    "test_faults.py::test_carray_full_disk_at_every_write",
    "test_faults.py::test_ctable_full_disk_at_every_write",
    "test_faults.py::test_indexed_ctable_full_disk_at_every_write",
    "test_faults.py::test_kinds_ctable_full_disk_at_every_write",
    "test_hostile.py::test_fuzz_fixtures",
    "test_public_api.py::test_every_class_of_errors_is_exported",
    "test_public_api.py::test_every_error_raised_is_exported",
    "test_public_api.py::test_private_exceptions_are_exception_classes_not_exported",
    "test_query_plan.py::test_every_query_answers_as_a_scan",
    "test_query_plan.py::test_random_conditions_on_random_tables",
    "test_query_plan.py::test_writers_stay_exact_after_changes",
    "vlen/test_hostile_vlen.py::test_a_long_category_repeated_is_refused_before_allocating",
    "vlen/test_vlen_ctable.py::test_on_s3_reads_writes_and_opens_with_few_requests",
    "vlen/test_vlen_machine.py::TestVlenInMemory::runTest",
    "vlen/test_vlen_machine.py::TestVlenOnDisk::runTest",
)


def _markers(where: str, nodeid: str, fixtures) -> list:
    """The markers a test at ``where`` (its path under tests/) gets from this module."""
    found = []
    if where.startswith(OLDEST):
        found.append(pytest.mark.oldest)
    if where.startswith(SUBPROCESS):
        found.append(pytest.mark.subprocess)
    if where.startswith(FUZZ):
        found.append(pytest.mark.fuzz)
    if "s3_server" in fixtures:
        found.append(pytest.mark.s3)
    test = where + nodeid.split("[", 1)[0][nodeid.find("::"):] if "::" in nodeid else where
    if where in SLOW or test in SLOW or any(m.name in ("subprocess", "fuzz", "s3")
                                             for m in found):
        found.append(pytest.mark.slow)
    return found


def pytest_collection_modifyitems(config, items):
    tests = Path(__file__).resolve().parent
    for item in items:
        try:
            where = Path(item.path).resolve().relative_to(tests).as_posix()
        except ValueError:
            continue
        for marker in _markers(where, item.nodeid, getattr(item, "fixturenames", ())):
            item.add_marker(marker)


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
