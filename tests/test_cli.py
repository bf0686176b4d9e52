"""The ``bcolz-store`` command: ``info`` on bcolz-written fixtures, errors, ``demo``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bcolz_store import cli

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "bcolz-1.13"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text()) if FIXTURES.is_dir() else {}
DATASETS = sorted(MANIFEST.get("datasets", {}))
REPO = Path(__file__).resolve().parents[1]

needs_fixtures = pytest.mark.skipif(not DATASETS, reason=f"fixtures not found at {FIXTURES}")


def run(capsys, *argv):
    status = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def info_json(capsys, path) -> dict:
    status, out, err = run(capsys, "info", path, "--json")
    assert status == 0, err
    assert err == ""
    return json.loads(out)


def storage_meta(rootdir: Path) -> dict:
    """meta/storage as bcolz wrote it: the independent record of chunklen and cparams."""
    return json.loads((rootdir / "meta" / "storage").read_text())


def assert_cparams(found: dict, expected: dict) -> None:
    for key in ("clevel", "cname", "shuffle"):
        assert found[key] == expected[key], key


# --- info on every fixture --------------------------------------------------------

@needs_fixtures
@pytest.mark.parametrize("name", DATASETS)
def test_info_json_matches_manifest(capsys, name):
    expected = MANIFEST["datasets"][name]
    facts = info_json(capsys, FIXTURES / name)
    assert facts["kind"] == expected["kind"]
    assert facts["attrs"] == expected["attrs"]
    if expected["kind"] == "carray":
        assert facts["shape"] == expected["shape"]
        assert facts["dtype"] == expected["dtype"]
        assert facts["chunklen"] == expected["chunklen"]
        assert_cparams(facts["cparams"], expected["cparams"])
        length = expected["shape"][0]
        assert facts["nchunks"] == length // expected["chunklen"]
        assert facts["leftover"] == length % expected["chunklen"]
    else:
        assert facts["shape"] == [expected["len"]]
        assert facts["names"] == expected["names"]
        assert [c["name"] for c in facts["columns"]] == expected["names"]


@needs_fixtures
@pytest.mark.parametrize("name", [n for n in DATASETS if MANIFEST["datasets"][n]["kind"] == "ctable"])
def test_info_json_ctable_columns_match_bcolz_meta(capsys, name):
    expected = MANIFEST["datasets"][name]
    data = np.load(FIXTURES / f"{name}.expected.npz")
    facts = info_json(capsys, FIXTURES / name)
    assert facts["nbytes"] == sum(c["nbytes"] for c in facts["columns"])
    assert facts["cbytes"] == sum(c["cbytes"] for c in facts["columns"])
    for col in facts["columns"]:
        meta = storage_meta(FIXTURES / name / col["name"])
        assert col["shape"] == [expected["len"], *data[col["name"]].shape[1:]]
        assert col["dtype"] == str(data[col["name"]].dtype)
        assert col["chunklen"] == meta["chunklen"]
        assert_cparams(col["cparams"], meta["cparams"])
        assert col["nchunks"] == expected["len"] // meta["chunklen"]
        assert col["nbytes"] == data[col["name"]].nbytes


@needs_fixtures
@pytest.mark.parametrize("name", DATASETS)
def test_info_text_shows_the_facts(capsys, name):
    expected = MANIFEST["datasets"][name]
    status, out, err = run(capsys, "info", FIXTURES / name)
    assert status == 0, err
    lines = dict(line.split(":", 1) for line in out.splitlines() if not line.startswith(" "))
    lines = {key: value.strip() for key, value in lines.items()}
    assert lines["kind"] == expected["kind"]
    for key in ("nbytes", "cbytes", "cratio", "attrs", "nchunks"):
        assert key in lines
    if expected["kind"] == "carray":
        assert lines["shape"] == str(tuple(expected["shape"]))
        assert lines["dtype"] == expected["dtype"]
        assert lines["chunklen"] == str(expected["chunklen"])
        cp = expected["cparams"]
        assert f"cname={cp['cname']} clevel={cp['clevel']} shuffle={cp['shuffle']}" in lines["cparams"]
    else:
        assert lines["shape"] == f"({expected['len']},)"
        assert lines["columns"] == str(len(expected["names"]))
        table = [line.split() for line in out.splitlines() if line.startswith("  ")]
        assert table[0][:5] == ["name", "dtype", "shape", "chunklen", "nchunks"]
        assert [row[0] for row in table[1:]] == expected["names"]
        for row in table[1:]:
            assert row[3] == str(storage_meta(FIXTURES / name / row[0])["chunklen"])
    if expected["attrs"]:
        assert json.loads(lines["attrs"]) == expected["attrs"]


# --- info errors --------------------------------------------------------------------

def assert_one_line_error(status, out, err, *fragments):
    assert status == 1
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("bcolz-store: error:")
    assert "Traceback" not in err
    for fragment in fragments:
        assert str(fragment) in err


def test_info_missing_path_fails_with_one_line(capsys, tmp_path):
    missing = tmp_path / "no-such-dataset"
    status, out, err = run(capsys, "info", missing)
    assert_one_line_error(status, out, err, missing, "no such file or directory")


def test_info_empty_directory_is_not_a_dataset(capsys, tmp_path):
    status, out, err = run(capsys, "info", tmp_path)
    assert_one_line_error(status, out, err, tmp_path, "not a bcolz dataset")


def test_info_plain_file_is_not_a_dataset(capsys, tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    status, out, err = run(capsys, "info", path)
    assert_one_line_error(status, out, err, path, "not a bcolz dataset", "it is a file")
    assert "does not exist" not in err


@needs_fixtures
@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"shape": "x"}\n'])
def test_info_corrupt_meta_sizes_fails_with_one_line(capsys, tmp_path, garbage):
    root = tmp_path / "broken"
    shutil.copytree(FIXTURES / "f8_lz4_walk", root)
    (root / "meta" / "sizes").write_bytes(garbage)
    status, out, err = run(capsys, "info", root)
    assert_one_line_error(status, out, err, root)


def test_info_as_a_process_exits_1_without_traceback(tmp_path):
    missing = tmp_path / "absent"
    proc = subprocess.run([sys.executable, "-m", "bcolz_store.cli", "info", str(missing)],
                          capture_output=True, text=True, cwd=REPO, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert proc.stderr.strip() == f"bcolz-store: error: {missing}: no such file or directory"


def test_usage_errors_exit_2(capsys):
    assert cli.main([]) == 2
    assert cli.main(["info"]) == 2
    assert cli.main(["demo", "--rows", "0"]) == 2
    assert cli.main(["demo", "--rows", "many"]) == 2
    err = capsys.readouterr().err
    assert "expected at least 1, found 0" in err
    assert "expected a whole number, found 'many'" in err


# --- demo ---------------------------------------------------------------------------

def test_demo_prints_throughput_and_cleans_up(capsys, tmp_path):
    status, out, err = run(capsys, "demo", "--rows", "200000", "--dir", tmp_path)
    assert status == 0, err
    assert "MB/s" in out and "rows/s" in out and "cratio" in out
    steps = [line for line in out.splitlines() if line.startswith(("write", "reopen", "scan"))]
    assert [s.split()[0] for s in steps] == ["write", "reopen", "reopen", "scan"]
    write = steps[0].split()
    assert write[4] == "200,000"                      # rows
    assert float(write[7]) > 0                        # MB/s
    assert "verified: 220,000 rows read back" in out
    assert list(tmp_path.iterdir()) == []             # the demo folder is gone


def test_demo_dir_that_is_a_file_is_a_one_line_error(capsys, tmp_path):
    (tmp_path / "f.txt").write_text("precious")
    status, out, err = run(capsys, "demo", "--rows", "10", "--dir", tmp_path / "f.txt",
                           "--no-progress")
    assert status == 1 and out == "" and err.count("\n") == 1
    assert f"--dir {tmp_path / 'f.txt'}: not a folder" in err
    assert (tmp_path / "f.txt").read_text() == "precious"


def test_demo_keep_leaves_a_dataset_info_can_read(capsys, tmp_path):
    status, out, err = run(capsys, "demo", "--rows", "5000", "--dir", tmp_path, "--keep",
                           "--no-progress")
    assert status == 0, err
    [kept] = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("kept: ")]
    facts = info_json(capsys, kept)
    assert facts["kind"] == "ctable"
    assert facts["shape"] == [5500]
    assert facts["names"] == list(cli.NAMES)
    dtypes = {c["name"]: c["dtype"] for c in facts["columns"]}
    assert dtypes == {"id": "int32", "date": "datetime64[D]", "open": "float64",
                      "high": "float64", "low": "float64", "close": "float64", "volume": "int64"}


def test_daily_bars_are_consistent_across_blocks():
    bars = cli.DailyBars(seed=3)
    first, second = bars.block(cli.DAYS_PER_ID - 10), bars.block(30)
    cols = {name: np.concatenate([a, b]) for name, a, b in zip(cli.NAMES, first, second)}
    n = cli.DAYS_PER_ID + 20
    assert list(np.unique(cols["id"])) == [1, 2]
    assert (np.diff(cols["date"][:cli.DAYS_PER_ID]) > np.timedelta64(0, "D")).all()
    assert np.is_busday(cols["date"]).all()
    assert (cols["high"] >= np.maximum(cols["open"], cols["close"])).all()
    assert (cols["low"] <= np.minimum(cols["open"], cols["close"])).all()
    assert (cols["close"] > 0).all() and (cols["volume"] > 0).all()
    # the walk continues across the block boundary: no jump bigger than a daily move
    step = np.abs(np.diff(np.log(cols["close"][:cli.DAYS_PER_ID])))
    assert step.max() < 0.2
    assert bars.nrows == n and bars.sums["volume"] == int(cols["volume"].sum())


# --- verify -----------------------------------------------------------------------

needs_verify = pytest.mark.skipif(not hasattr(__import__("bcolz_store"), "verify"),
                                  reason="checksums not available yet")


def _small_table(root):
    import bcolz_store
    bcolz_store.ctable([np.arange(25), np.arange(25) * 0.5], names=["a", "b"], chunklen=10,
                       rootdir=str(root), mode="w")
    return root


@needs_verify
def test_verify_ok(capsys, tmp_path):
    root = _small_table(tmp_path / "t")
    status, out, err = run(capsys, "verify", root)
    assert (status, err) == (0, "")
    assert out.strip() == f"{root}: ok"
    status, out, err = run(capsys, "verify", root, "--json")
    assert status == 0
    assert json.loads(out) == {"path": str(root), "ok": True, "missing": [], "extra": [],
                               "damaged": [], "changed": [], "resealed": [],
                               "no_checksums": False, "reasons": {}}


@needs_verify
def test_verify_lists_every_problem(capsys, tmp_path):
    root = _small_table(tmp_path / "t")
    chunk = root / "a" / "data" / "__1.blp"
    raw = bytearray(chunk.read_bytes())
    raw[-1] ^= 1
    chunk.write_bytes(bytes(raw))
    (root / "b" / "meta" / "storage").unlink()
    (root / "stray.txt").write_text("?")
    status, out, err = run(capsys, "verify", root)
    assert status == 1 and err == ""
    lines = out.splitlines()
    assert lines[:3] == ["missing b/meta/storage", "extra   stray.txt", "damaged a/data/__1.blp"]
    assert lines[3] == f"{root}: 3 problems (1 missing, 1 extra, 1 damaged)"
    status, out, _ = run(capsys, "verify", root, "--json")
    assert status == 1
    assert json.loads(out) == {"path": str(root), "ok": False, "missing": ["b/meta/storage"],
                               "extra": ["stray.txt"], "damaged": ["a/data/__1.blp"],
                               "changed": [], "resealed": [], "no_checksums": False,
                               "reasons": {"a/data/__1.blp": "content does not match its md5"}}


@needs_verify
def test_verify_reports_a_stale_consolidated_metadata_file(capsys, tmp_path):
    root = _small_table(tmp_path / "t")
    body = json.loads((root / "bcolz_store.json").read_text())
    body["files"]["a/__attrs__"] = '{"stale": 1}\n'
    (root / "bcolz_store.json").write_text(json.dumps(body))
    status, out, _ = run(capsys, "verify", root)
    assert status == 1
    assert "damaged bcolz_store.json  (its copy of a/__attrs__ differs from the file)" in out


@needs_verify
def test_verify_one_problem_is_singular(capsys, tmp_path):
    root = _small_table(tmp_path / "t")
    (root / "a" / "data" / "__0.blp").unlink()
    status, out, _ = run(capsys, "verify", root)
    assert status == 1
    assert out.splitlines()[-1] == f"{root}: 1 problem (1 missing)"


@needs_verify
def test_verify_without_checksums_exits_3(capsys, tmp_path):
    """A dataset bcolz wrote has no checksum file: nothing is checked, and that is said."""
    root = _small_table(tmp_path / "t")
    (root / "bcolz_store.md5").unlink()
    (root / "a" / "data" / "__0.blp").write_bytes(b"garbage")   # not even looked at
    status, out, err = run(capsys, "verify", root)
    assert (status, err) == (3, "")
    assert "not verified" in out and "no checksum file" in out
    status, out, _ = run(capsys, "verify", root, "--json")
    assert status == 3 and json.loads(out)["no_checksums"] is True


@needs_verify
def test_verify_reports_a_fifo_without_reading_it(capsys, tmp_path):
    root = _small_table(tmp_path / "t")
    chunk = root / "a" / "data" / "__1.blp"
    chunk.unlink()
    os.mkfifo(chunk)
    status, out, _ = run(capsys, "verify", root)
    assert status == 1
    assert "damaged a/data/__1.blp  (a FIFO (not read))" in out


def test_verify_missing_path(capsys, tmp_path):
    status, out, err = run(capsys, "verify", tmp_path / "nothing")
    assert status == 1 and out == ""
    assert "nothing" in err and err.startswith("bcolz-store: error:")
    assert len(err.strip().splitlines()) == 1


def test_verify_usage(capsys):
    status, _, err = run(capsys, "verify")
    assert status == 2
    assert "path" in err


@needs_verify
def test_verify_as_a_separate_process(tmp_path):
    root = _small_table(tmp_path / "t")
    (root / "__attrs__").write_text('{"changed": true}\n')
    result = subprocess.run([sys.executable, "-m", "bcolz_store.cli", "verify", str(root)],
                            capture_output=True, text=True, cwd=REPO, timeout=60)
    assert result.returncode == 1, result.stderr
    assert "damaged __attrs__" in result.stdout


def test_verify_output_from_a_report(capsys, tmp_path, monkeypatch):
    """The command prints whatever bcolz_store.verify reports (sorted), independent of checksums."""
    import types

    import bcolz_store
    root = _small_table(tmp_path / "t")
    report = types.SimpleNamespace(ok=False, missing=["m2", "m1"], extra=[], damaged=["d"])
    monkeypatch.setattr(bcolz_store, "verify", lambda path: report, raising=False)
    status, out, err = run(capsys, "verify", root)
    assert (status, err) == (1, "")
    assert out.splitlines() == ["missing m1", "missing m2", "damaged d",
                                f"{root}: 3 problems (2 missing, 1 damaged)"]
    report.ok, report.missing, report.damaged = True, [], []
    assert run(capsys, "verify", root)[:2] == (0, f"{root}: ok\n")


def test_verify_error_from_the_library(capsys, tmp_path, monkeypatch):
    import bcolz_store
    from bcolz_store.errors import FormatError

    def refuse(path):
        raise FormatError(f"{path}/bcolz_store.md5: line 1 is not '<md5>  <path>'")
    monkeypatch.setattr(bcolz_store, "verify", refuse, raising=False)
    status, out, err = run(capsys, "verify", _small_table(tmp_path / "t"))
    assert status == 1 and out == ""
    assert "cannot verify" in err and "bcolz_store.md5" in err


# --- what each command says about what it was given -------------------------------

@needs_verify
@pytest.mark.parametrize("content", [None, "a.txt", "meta/other"])
def test_verify_on_a_folder_that_is_not_a_dataset_exits_1(capsys, tmp_path, content):
    folder = tmp_path / "folder"
    folder.mkdir()
    if content:
        (folder / content).parent.mkdir(parents=True, exist_ok=True)
        (folder / content).write_text("x")
    status, out, err = run(capsys, "verify", folder)
    assert_one_line_error(status, out, err, folder, "not a bcolz dataset")


@needs_verify
def test_verify_on_a_file_or_a_bcolz_dataset_without_checksums(capsys, tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    status, out, err = run(capsys, "verify", tmp_path / "notes.txt")
    assert_one_line_error(status, out, err, "not a bcolz dataset", "it is a file")
    root = _small_table(tmp_path / "t")
    (root / "bcolz_store.md5").unlink()
    assert run(capsys, "verify", root)[0] == 3          # a dataset, only unchecked


def test_pack_reports_every_entry_of_the_zip(capsys, tmp_path):
    import zipfile
    root = _small_table(tmp_path / "t")
    status, out, err = run(capsys, "pack", root, tmp_path / "t.zip")
    assert status == 0, err
    with zipfile.ZipFile(tmp_path / "t.zip") as zf:
        entries = len(zf.infolist())
    assert "bcolz_store.md5" in zipfile.ZipFile(tmp_path / "t.zip").namelist()
    assert out.startswith(f"{tmp_path / 't.zip'}: {entries} files, ")


@pytest.mark.parametrize("name", ["out.tar", "out", "out.zip.bak"])
def test_pack_refuses_a_name_that_is_not_zip(capsys, tmp_path, name):
    root = _small_table(tmp_path / "t")
    status, out, err = run(capsys, "pack", root, tmp_path / name)
    assert_one_line_error(status, out, err, name, "a pack is a .zip file")
    assert not (tmp_path / name).exists()
    assert run(capsys, "pack", root, tmp_path / "OUT.ZIP")[0] == 0


def test_info_shows_categorical_columns_and_their_categories(capsys, tmp_path):
    import bcolz_store
    many = [f"category-number-{i:03d}-with-a-long-name" for i in range(250)]
    bcolz_store.ctable([np.arange(6),
                        bcolz_store.carray(["red", "blue", None, "red", "x", "y"],
                                           dtype=bcolz_store.category(ordered=True)),
                        bcolz_store.carray(many[:6], dtype=bcolz_store.category(many))],
                       names=["i", "color", "long"], rootdir=str(tmp_path / "t"), mode="w")
    facts = info_json(capsys, tmp_path / "t")
    color, long = facts["columns"][1], facts["columns"][2]
    assert color["category"] == {"kind": "str", "ordered": True, "codes": "int8",
                                 "ncategories": 4, "categories": ["blue", "red", "x", "y"]}
    assert "vlen" not in color
    assert long["category"]["ncategories"] == 250 and long["category"]["codes"] == "int16"
    assert long["category"]["categories"] == many[:100]
    status, out, _ = run(capsys, "info", tmp_path / "t")
    assert status == 0
    line = next(row for row in out.splitlines() if row.strip().startswith("color"))
    assert "categorical str codes=int8 ordered=True categories=4 ['blue', 'red', 'x', 'y']" \
        in line
    line = next(row for row in out.splitlines() if row.strip().startswith("long"))
    assert "categories=250 ['category-number-..., 'category-number-..., " in line
    assert "... 244 more]" in line
    assert "with-a-long-name" not in line
    bcolz_store.carray(["b", "a"], dtype=bcolz_store.category(), rootdir=str(tmp_path / "c"),
                       mode="w")
    status, out, _ = run(capsys, "info", tmp_path / "c")
    assert "category:  categorical str codes=int8 ordered=False categories=2 ['a', 'b']" in out


def test_info_text_shows_internal_arrow_attrs_decoded_not_as_base64(capsys, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import bcolz_store
    from bcolz_store.converters import convert
    pytest.importorskip("pyarrow.parquet").write_table(pa.table({
        "s": pa.array(["a", "b"], pa.large_string()),
        "t": pa.array([1, 2], pa.int16()),
        "n": pa.array([1, 2], pa.int64())}).cast(pa.schema([
            pa.field("s", pa.large_string()), pa.field("t", pa.int16()),
            pa.field("n", pa.int64(), nullable=False, metadata={"unit": "m"})])),
        str(tmp_path / "a.parquet"))
    convert(tmp_path / "a.parquet", tmp_path / "t")
    recorded = bcolz_store.open(str(tmp_path / "t")).cols["s"].attrs["bcolz_store.arrow"]
    c = bcolz_store.carray([1, 2], rootdir=str(tmp_path / "c"), mode="w")
    c.attrs["bcolz_store.arrow"], c.attrs["bcolz_store.x"] = recorded, "A" * 300
    c.attrs["mine"] = "A" * 300
    c.flush()
    status, out, err = run(capsys, "info", tmp_path / "t")
    assert status == 0 and err == ""
    assert recorded not in out
    line = next(row for row in out.splitlines() if row.strip().startswith("s "))
    assert '{"bcolz_store.arrow": "(Arrow field: large_string)"}' in line
    line = next(row for row in out.splitlines() if row.strip().startswith("n "))
    assert '"(Arrow field: int64 not null, metadata {\'unit\': \'m\'})"' in line
    status, out, _ = run(capsys, "info", tmp_path / "c")
    assert status == 0 and recorded not in out
    assert '"bcolz_store.arrow": "(Arrow field: large_string)"' in out
    assert '"bcolz_store.x": "(300 characters)"' in out
    assert '"mine": "' + "A" * 300 + '"' in out      # the user's own attrs as they are
    assert info_json(capsys, tmp_path / "c")["attrs"]["bcolz_store.arrow"] == recorded


def test_info_on_s3_without_credentials_or_bucket_says_why(capsys, tmp_path, s3_bucket,
                                                            monkeypatch):
    url, options = s3_bucket
    _small_table(tmp_path / "t")
    endpoint = json.dumps({"client_kwargs": options["client_kwargs"]})
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")     # never ask 169.254.169.254
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for command in ("info", "verify"):
        status, out, err = run(capsys, command, f"{url}/t", "--storage-options", endpoint)
        assert_one_line_error(status, out, err, f"{url}/t", "no credentials")
        assert "unexpected" not in err
    with_keys = json.dumps(options)
    status, out, err = run(capsys, "info", "s3://no-such-bucket-anywhere/t",
                           "--storage-options", with_keys)
    assert_one_line_error(status, out, err, "s3://no-such-bucket-anywhere/t")
    assert "unexpected" not in err
    assert run(capsys, "convert", tmp_path / "t", f"{url}/t", "--storage-options", with_keys,
               "--no-progress")[0] == 0
    status, out, err = run(capsys, "info", f"{url}/t", "--storage-options", with_keys)
    assert status == 0 and "kind:      ctable" in out


# --- index --stats --------------------------------------------------------------------

def _committed_stats_right(path):
    """A reader of ``path`` knows every chunk's statistics, and they are right."""
    from tests.stats_check import check_stats
    import bcolz_store
    check_stats(bcolz_store.open(str(path), mode="r"), complete=True, what=str(path))


@needs_fixtures
@pytest.mark.parametrize("name", ["ctable_mixed", "f8_lz4_walk", "S12_codes", "empty_f8"])
def test_index_stats_on_a_copy_of_a_bcolz_fixture(capsys, tmp_path, name):
    path = tmp_path / name
    shutil.copytree(FIXTURES / name, path)          # never the fixture itself
    before = {p.relative_to(path).as_posix(): p.read_bytes()
              for p in path.rglob("*") if p.is_file()}
    status, out, err = run(capsys, "index", "--stats", path)
    assert status == 0 and err == ""
    lines = out.splitlines()
    written = [line for line in lines if line.endswith(": written (no statistics)")]
    assert len(written) == len(MANIFEST["datasets"][name].get("names", [None]))
    assert lines[-1].startswith(f"{path}: statistics of {len(written)} column")
    assert lines[-1].endswith("committed in one commit")
    _committed_stats_right(path)
    for rel, data in before.items():            # bcolz's files are as they were
        assert (path / rel).read_bytes() == data, rel
    assert run(capsys, "verify", path)[0] == 0
    journal = sorted(p.name for p in (path / ".bcolz_store-journal").iterdir()
                     if p.name.startswith("commit-"))
    assert journal == ["commit-000000000001.json"]       # one commit
    status, out, _ = run(capsys, "index", "--stats", path)        # nothing left to do
    assert status == 0 and out.splitlines()[-1].endswith("nothing committed")
    assert all(line.endswith("up to date") for line in out.splitlines()[:-1])


def test_index_stats_rewrites_damaged_and_stale_statistics(capsys, tmp_path):
    import bcolz_store
    from bcolz_store.format.stats_meta import dump_stats
    path = tmp_path / "t"
    bcolz_store.ctable([np.arange(40), np.arange(40.0), np.arange(40) % 2 == 0,
                        np.zeros((40, 2))], names=["a", "b", "c", "d"], chunklen=8,
                       rootdir=str(path), mode="w").flush()
    (path / "a" / "meta" / "stats").write_text("junk")
    body = json.loads((path / "b" / "meta" / "stats").read_text())
    body["chunks"][1][0] = -1.0                 # a lie, md5 field recomputed
    (path / "b" / "meta" / "stats").write_bytes(dump_stats(body["kind"], body["chunklen"],
                                                           body["length"], body["chunks"]))
    status, out, err = run(capsys, "index", "--stats", path)
    assert status == 0, err
    lines = dict(line.split(": ", 1) for line in out.splitlines()[:-1])
    assert lines["a"].startswith("rewritten (damaged: ") and "a/meta/stats" in lines["a"]
    # forged with a valid inner md5, but not the checksum its commit recorded
    assert lines["b"].startswith("rewritten (damaged: ") and "md5 checksum" in lines["b"]
    assert lines["c"] == "up to date"
    assert lines["d"].startswith("none kept (a kind without statistics: float64 items of "
                                 "shape (2,))")
    assert out.splitlines()[-1] == f"{path}: statistics of 2 columns committed in one commit"
    _committed_stats_right(path)
    assert run(capsys, "verify", path)[0] == 0


def test_index_needs_stats_and_a_dataset(capsys, tmp_path):
    status, _, err = run(capsys, "index", tmp_path)
    assert status == 1 and "--stats" in err
    status, _, err = run(capsys, "index", "--stats", tmp_path / "nothing")
    assert status == 1 and "nothing" in err and len(err.strip().splitlines()) == 1


def test_index_create_list_drop_and_copy_sortby(capsys, tmp_path):
    import bcolz_store
    path = tmp_path / "t"
    bcolz_store.ctable([np.arange(200)[::-1].copy(), np.arange(200) % 3], names=["a", "g"],
                       chunklen=16, rootdir=str(path), mode="w").flush()
    status, out, err = run(capsys, "index", "--create", "a", "--create", "g:bitmap", path)
    assert status == 0 and err == ""
    assert out.splitlines() == ["a: sorted index", "g: bitmap index", f"{path}: 2 indexes"]
    assert bcolz_store.open(str(path), mode="r").indexes == {"a": "sorted", "g": "bitmap"}
    status, out, _ = run(capsys, "index", "--drop", "a", path)
    assert status == 0 and out.splitlines()[-1] == f"{path}: 1 index"
    status, out, _ = run(capsys, "index", "--list", path)
    assert out.splitlines() == ["g: bitmap index", f"{path}: 1 index"]
    status, _, err = run(capsys, "index", "--drop", "a", path)          # none left
    assert status == 1 and "no index to drop" in err
    status, _, err = run(capsys, "index", "--create", "nope", path)
    assert status == 1 and "not a column" in err
    status, _, err = run(capsys, "index", path)
    assert status == 1 and "say what to do" in err
    status, out, _ = run(capsys, "copy", path, tmp_path / "s", "--sortby", "a")
    assert status == 0 and "200 rows ordered by 'a'" in out
    assert bcolz_store.open(str(tmp_path / "s"))["a"][:].tolist() == list(range(200))
    status, _, err = run(capsys, "copy", path, tmp_path / "s2", "--sortby", "zz")
    assert status == 1 and "zz" in err


def test_copy_replaces_only_a_bcolz_dataset_and_only_with_overwrite(capsys, tmp_path):
    import bcolz_store
    path = tmp_path / "t"
    bcolz_store.ctable([np.arange(20)[::-1].copy()], names=["a"], rootdir=str(path),
                       mode="w").flush()
    (tmp_path / "file.txt").write_text("precious")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "note.txt").write_text("precious")
    for dst, overwrite in [("file.txt", False), ("file.txt", True), ("folder", True)]:
        status, out, err = run(capsys, "copy", path, tmp_path / dst, "--sortby", "a",
                               *(["--overwrite"] if overwrite else []))
        assert status == 1 and out == "" and err.count("\n") == 1, (dst, err)
        assert str(tmp_path / dst) in err
        assert ("not a bcolz dataset" in err) if overwrite else ("--overwrite" in err)
    assert (tmp_path / "file.txt").read_text() == "precious"
    assert os.listdir(tmp_path / "folder") == ["note.txt"]
    assert run(capsys, "copy", path, tmp_path / "s", "--sortby", "a")[0] == 0
    status, _, err = run(capsys, "copy", path, tmp_path / "s", "--sortby", "a")
    assert status == 1 and "exists" in err and "--overwrite" in err
    assert run(capsys, "copy", path, tmp_path / "s", "--sortby", "a", "--overwrite")[0] == 0
    assert bcolz_store.open(str(tmp_path / "s"))["a"][:].tolist() == list(range(20))
    status, _, err = run(capsys, "copy", path, path / "inside", "--sortby", "a")
    assert status == 1 and "overlap" in err and not (path / "inside").exists()
    assert bcolz_store.open(str(path))["a"][:].tolist() == list(range(20))[::-1]


def test_kerchunk_writes_references_zarr_reads(capsys, tmp_path):
    zarr = pytest.importorskip("zarr")
    fsspec = pytest.importorskip("fsspec")
    import bcolz_store
    bcolz_store.ctable([np.arange(30), np.linspace(0, 1, 30)], names=["a", "b"], chunklen=8,
                       rootdir=str(tmp_path / "t"))
    status, out, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "t.json")
    assert status == 0, err
    assert out.strip() == f"{tmp_path / 't.json'}: 6 chunk references (from {tmp_path / 't'})"
    fs = fsspec.filesystem("reference", fo=str(tmp_path / "t.json"), remote_protocol="file")
    group = zarr.open_group(store=fs.get_mapper(""), mode="r", zarr_format=2)
    np.testing.assert_array_equal(group["b"][:], np.linspace(0, 1, 30))
    status, out, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "t.json")
    assert status == 1 and "--overwrite" in err
    status, out, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "t.json",
                           "--overwrite", "--url", "s3://bucket/t")
    assert status == 0, err
    refs = json.loads((tmp_path / "t.json").read_text())["refs"]
    assert refs["a/0"][0] == "s3://bucket/t/a/data/__0.blp"


def test_kerchunk_refuses_a_categorical_column_in_one_line(capsys, tmp_path):
    import bcolz_store
    bcolz_store.ctable([np.arange(3), bcolz_store.carray(["x", "y", "x"], dtype="category")],
                       names=["n", "c"], rootdir=str(tmp_path / "t"))
    status, out, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "t.json")
    assert status == 1 and "column 'c'" in err and "categorical" in err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "t.json").exists()
    with pytest.warns(UserWarning, match="column 'c'"):
        status, out, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "t.json",
                               "--skip-unsupported")
    assert status == 0, err
    assert "c/.zarray" not in json.loads((tmp_path / "t.json").read_text())["refs"]
    status, out, err = run(capsys, "kerchunk", tmp_path / "missing", tmp_path / "m.json")
    assert status == 1 and "missing" in err


@pytest.mark.parametrize("command, out", [("pack", "p.zip"), ("kerchunk", "k.json"),
                                          ("kerchunk", "a/k.json")])
def test_pack_and_kerchunk_never_write_inside_the_dataset(capsys, tmp_path, command, out):
    import bcolz_store
    bcolz_store.ctable([np.arange(30)], names=["a"], chunklen=8, rootdir=str(tmp_path / "t"))
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    status, stdout, err = run(capsys, command, tmp_path / "t", tmp_path / "t" / out)
    assert status == 1 and stdout == "" and err.count("\n") == 1
    assert "inside the dataset" in err and str(tmp_path / "t" / out) in err
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    assert run(capsys, "verify", tmp_path / "t")[0] == 0


def test_kerchunk_leaves_no_partial_file_when_writing_fails(capsys, tmp_path, monkeypatch):
    import bcolz_store
    bcolz_store.ctable([np.arange(30)], names=["a"], chunklen=8, rootdir=str(tmp_path / "t"))
    (tmp_path / "k.json").write_text("old")

    def broken(obj, fp, **kwargs):
        fp.write('{"version": 1, "re')
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(json, "dump", broken)
    status, _, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "k.json", "--overwrite")
    assert status == 1 and "No space left" in err and err.count("\n") == 1
    assert (tmp_path / "k.json").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["k.json", "t"]
    status, _, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "new.json")
    assert status == 1 and not (tmp_path / "new.json").exists()


def test_unpack_overwrite_replaces_only_a_bcolz_dataset(capsys, tmp_path):
    import bcolz_store
    bcolz_store.ctable([np.arange(30)], names=["a"], chunklen=8, rootdir=str(tmp_path / "t"))
    assert run(capsys, "pack", tmp_path / "t", tmp_path / "p.zip")[0] == 0
    (tmp_path / "file.txt").write_text("precious")
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "note.txt").write_text("precious")
    for dst in ("file.txt", "folder"):
        status, out, err = run(capsys, "unpack", tmp_path / "p.zip", tmp_path / dst,
                               "--overwrite")
        assert status == 1 and out == "" and err.count("\n") == 1
        assert "not a bcolz dataset" in err and str(tmp_path / dst) in err
    assert (tmp_path / "file.txt").read_text() == "precious"
    assert os.listdir(tmp_path / "folder") == ["note.txt"]
    status, _, err = run(capsys, "unpack", tmp_path / "p.zip", tmp_path / "t")
    assert status == 1 and "--overwrite" in err
    assert run(capsys, "unpack", tmp_path / "p.zip", tmp_path / "t", "--overwrite")[0] == 0
    assert bcolz_store.open(str(tmp_path / "t"))["a"][:].tolist() == list(range(30))


def test_kerchunk_writes_into_a_special_file_instead_of_replacing_it(capsys, tmp_path):
    import threading
    import bcolz_store
    bcolz_store.ctable([np.arange(30)], names=["a"], chunklen=8, rootdir=str(tmp_path / "t"))
    os.mkfifo(tmp_path / "pipe")
    got = []
    reader = threading.Thread(target=lambda: got.append((tmp_path / "pipe").read_bytes()),
                              daemon=True)
    reader.start()
    status, _, err = run(capsys, "kerchunk", tmp_path / "t", tmp_path / "pipe", "--overwrite")
    reader.join(10)
    assert status == 0, err
    assert json.loads(got[0])["refs"]["a/0"][0].endswith("/a/data/__0.blp")
    assert os.path.exists(tmp_path / "pipe") and not os.path.isfile(tmp_path / "pipe")
    assert sorted(os.listdir(tmp_path)) == ["pipe", "t"]


def test_pack_overwrite_never_replaces_a_folder_or_special_file(capsys, tmp_path):
    import bcolz_store
    bcolz_store.ctable([np.arange(30)], names=["a"], chunklen=8, rootdir=str(tmp_path / "t"))
    os.mkfifo(tmp_path / "pipe.zip")
    (tmp_path / "dir.zip").mkdir()
    for name in ("pipe.zip", "dir.zip"):
        status, out, err = run(capsys, "pack", tmp_path / "t", tmp_path / name, "--overwrite")
        assert status == 1 and out == "" and err.count("\n") == 1
        assert "not a regular file; not replacing it" in err and name in err
    assert not os.path.isfile(tmp_path / "pipe.zip") and os.path.exists(tmp_path / "pipe.zip")
    assert (tmp_path / "dir.zip").is_dir()
    (tmp_path / "old.zip").write_bytes(b"old")
    assert run(capsys, "pack", tmp_path / "t", tmp_path / "old.zip", "--overwrite")[0] == 0
    assert bcolz_store.open(str(tmp_path / "old.zip"))["a"][:].tolist() == list(range(30))


# --- progress bars of the long commands --------------------------------------

@pytest.mark.parametrize("command", ["verify", "pack", "unpack", "index"])
def test_long_commands_show_progress_with_the_flag_only(capsys, tmp_path, command):
    pytest.importorskip("tqdm")
    root = _small_table(tmp_path / "t")
    run(capsys, "pack", root, tmp_path / "t.zip")
    argv = {"verify": ["verify", root], "pack": ["pack", root, tmp_path / "u.zip", "--overwrite"],
            "unpack": ["unpack", tmp_path / "t.zip", tmp_path / "u", "--overwrite"],
            "index": ["index", "--stats", root]}[command]
    status, _out, err = run(capsys, *argv)          # stderr is not a terminal here
    assert status == 0 and err == ""
    status, _out, err = run(capsys, *argv, "--no-progress")
    assert status == 0 and err == ""
    status, _out, err = run(capsys, *argv, "--progress")
    assert status == 0
    step = {"verify": "files", "index": "statistics"}.get(command, command)
    assert f"{step}: " in err and "%|" in err, err          # a tqdm bar of that step


def test_library_functions_report_their_progress(tmp_path):
    import bcolz_store
    from bcolz_store.storage.packs import pack, unpack
    root = _small_table(tmp_path / "t")
    seen = []
    record = lambda step, done, total: seen.append((step, done, total))  # noqa: E731
    assert bcolz_store.verify(str(root), progress=record).ok
    files = [(done, total) for step, done, total in seen if step == "files"]
    assert files[0][0] == 0 and files[-1][0] == files[-1][1] > 0
    assert ("statistics", 2, 2) in seen
    seen.clear()
    pack(str(root), str(tmp_path / "t.zip"), progress=record)
    unpack(str(tmp_path / "t.zip"), str(tmp_path / "u"), progress=record)
    steps = {step for step, _done, _total in seen}
    assert steps == {"pack", "unpack"} and all(d <= t for _s, d, t in seen)
    assert seen[-1][1] == seen[-1][2]
