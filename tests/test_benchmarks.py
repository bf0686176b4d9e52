"""The benchmark harness runs end to end in --quick mode and every answer is right.

No timing is asserted: tiny sizes only check that each workload runs for each
installed library and that the results agree with numpy (and that bcolz_store
writes bcolz's bytes).  Comparison libraries that are not installed are left
out by the harness itself.
"""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

harness = pytest.importorskip("benchmarks.harness")
workloads = pytest.importorskip("benchmarks.workloads")

TINY = ["--quick", "--n", "60000", "--chunklen", "4096", "--ra-chunklen", "512",
        "--nrows", "20000", "--open-rows", "2000", "--nslices", "20", "--slice-len", "500",
        "--nsingle", "100", "--nsingle-zarr", "20", "--nappends", "100", "--ngather", "500",
        "--ngather-bcolz", "50"]


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench-out")
    work = tmp_path_factory.mktemp("bench-work")
    code = harness.main(TINY + ["--out", str(out), "--workdir", str(work)])
    with open(out / "latest.json") as fh:
        result = json.load(fh)
    return code, result, out


def test_quick_run_succeeds_and_writes_results(quick_run):
    code, result, out = quick_run
    assert code == 0
    keys = [row["key"] for row in result["rows"]]
    expected = [k for k in workloads.KEYS
                if k != "todataframe" or workloads._has_pandas()]
    assert keys == expected
    assert result["config"]["quick"] is True
    assert result["config"]["n"] == 60000


def test_every_case_is_correct(quick_run):
    _, result, _ = quick_run
    for row in result["rows"]:
        assert row["errors"] == [], (row["key"], row["errors"])
        assert row["status"] != "WRONG"
        assert "bcolz_store" in row["libs"], row["key"]
        for info in row["libs"].values():
            assert info["median"] >= 0


def test_ratios_and_status_follow_the_medians(quick_run):
    _, result, _ = quick_run
    for row in result["rows"]:
        ours = row["libs"]["bcolz_store"]["median"]
        for other in ("bcolz", "blosc2"):
            if other in row["libs"] and row["libs"][other]["median"]:
                assert row[f"ratio_{other}"] == pytest.approx(
                    ours / row["libs"][other]["median"])
            else:
                assert row[f"ratio_{other}"] is None
        if row["target"] is None:
            assert row["status"] == "-"
        elif row[f"ratio_{row['target_vs']}"] is None:
            assert row["status"] == "n/a"
        else:
            ok = row[f"ratio_{row['target_vs']}"] <= row["target"]
            assert row["status"] == ("PASS" if ok else "MISS")


def test_written_bytes_match_bcolz(quick_run):
    pytest.importorskip("bcolz")
    _, result, _ = quick_run
    rows = {row["key"]: row for row in result["rows"]}
    for key in ("write_f8", "write_i8", "ctable_write"):
        assert rows[key]["post"]["byte_identical"] is True, rows[key]["post"]


def test_plot_is_drawn(quick_run):
    pytest.importorskip("matplotlib")
    _, _, out = quick_run
    png = out / "ratios.png"
    assert png.stat().st_size > 1000
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_profile_writes_a_report(tmp_path):
    code = harness.main(TINY + ["--out", str(tmp_path), "--workdir", str(tmp_path / "w"),
                                "--profile", "sum_f8"])
    assert code == 0
    text = (tmp_path / "profile-sum_f8.txt").read_text()
    assert "cProfile" in text
    assert "sum" in text


def test_unknown_workload_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="unknown workloads"):
        harness.main(["--quick", "--only", "nope", "--out", str(tmp_path)])


def test_compare_trees_names_the_difference(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "data").mkdir(parents=True)
    (b / "data").mkdir(parents=True)
    (a / "data" / "__0.blp").write_bytes(b"x")
    (b / "data" / "__0.blp").write_bytes(b"x")
    (a / "bcolz_store.md5").write_text("sums")
    same, detail = workloads.compare_trees(str(a), str(b))
    assert same and "adds 1 files" in detail
    (b / "data" / "__0.blp").write_bytes(b"y")
    same, detail = workloads.compare_trees(str(a), str(b))
    assert not same and "data/__0.blp" in detail
    (b / "meta").mkdir()
    (b / "meta" / "sizes").write_text("{}")
    same, detail = workloads.compare_trees(str(a), str(b))
    assert not same and "missing" in detail


def test_quick_run_reports_the_cache_budget(quick_run):
    _, result, _ = quick_run
    import bcolz_store
    assert result["environment"]["bcolz_store cache_budget"] == bcolz_store.defaults.cache_budget
    row = next(r for r in result["rows"] if r["key"] == "read_peak_memory")
    assert f"{bcolz_store.defaults.cache_budget:,} bytes" in row["note"]


def test_floor_measures_each_piece(tmp_path):
    out, work = tmp_path / "out", tmp_path / "work"
    code = harness.main(TINY + ["--floor", "--repeats", "1", "--out", str(out),
                                "--workdir", str(work)])
    assert code == 0
    with open(out / "floor.json") as fh:
        floor = json.load(fh)
    for workload in ("write_f8", "ctable_write"):
        f = floor[workload]
        assert set(f["pieces"]) >= {"compress", "md5", "write", "fsync", "compressed_mb"}
        assert f["pieces"]["compressed_mb"] > 0
        cpu = sum(f["pieces"][k][1] for k in ("compress", "md5", "write"))
        assert f["floor_s"] == pytest.approx(cpu / floor["cores"])
        assert f["floor_fsync_s"] >= f["floor_s"]
        assert {"bcolz_store (fsync on)", "bcolz_store (fsync off)"} <= set(f["whole"])


def test_the_thread_sweep_runs_and_judges_its_targets(tmp_path):
    """``--threads`` measures read, sum, query and write at each thread count for
    every library installed, checks every answer, and judges the targets it can."""
    sweep = pytest.importorskip("benchmarks.sweep")
    out, work = tmp_path / "out", tmp_path / "work"
    code = harness.main(["--threads", "1,2", "--size", "4M", "--nrows", "30000",
                         "--repeats", "1", "--out", str(out), "--workdir", str(work)])
    assert code == 0
    result = json.loads((out / "sweep.json").read_text())
    assert result["threads"] == [1, 2] and result["size_bytes"] == 4_000_000
    seen = {(r["workload"], r["lib"], r["threads"]) for r in result["rows"]}
    for workload in ("read_f8", "sum_i8", "query", "write_f8"):
        assert {(workload, "bcolz_store", 1), (workload, "bcolz_store", 2)} <= seen
    assert ("write_f8", "bcolz_store (no fsync)", 2) in seen
    assert all(r["gbps"] > 0 and r["busy"] > 0 for r in result["rows"])
    names = {t[0] for t in result["targets"]}
    assert "write_f8 (no fsync) >= 0.8 x floor" in names
    if any(r["lib"] == "blosc2" for r in result["rows"]):
        assert "query time <= blosc2" in names
    assert "**read_f8**" in sweep.markdown(result)
    assert harness.main(["--threads", "1", "--markdown", "--out", str(out)]) == 0


def test_the_kinds_benchmark_runs_quick_and_every_answer_is_right(tmp_path, capsys):
    """``benchmarks.kinds --quick`` on a few kinds, the whole table and the query:
    every contender's answer is checked, the ratios follow the medians."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("lance")
    pytest.importorskip("duckdb")
    kinds = pytest.importorskip("benchmarks.kinds")
    out = tmp_path / "kinds.json"
    code = kinds.main(["--quick", "--rows", "5000", "--kinds", "vlen-str,list-int32,table,query",
                       "--out", str(out), "--dir", str(tmp_path)])
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["kind"], r["measure"]) for r in rows] == \
        [(k, m) for k in ("vlen-str", "list-int32") for m in kinds.MEASURES] + \
        [("table", "read-arrow"), ("query", "numpy"), ("query", "arrow")]
    for r in rows:
        assert r["wrong"] == [] and r["refused"] == {}, r
        assert set(r["median"]) == set(kinds.CONTENDERS)
        assert r["ratio"] == pytest.approx(r["median"]["bcolz_store"] / r["median"]["parquet"])
        assert r["status"] == ("PASS" if r["ratio"] <= r["target"] else "MISS")
    assert "| table | read-arrow |" in capsys.readouterr().out
