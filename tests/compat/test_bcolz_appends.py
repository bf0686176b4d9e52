"""The real bcolz appending to a dataset bcolz_store wrote: it rewrites the
leftover's chunk file, adds chunk files and rewrites meta/sizes, but not
bcolz_store.md5 or bcolz_store.json.  verify() tells that change from damage,
``reseal=True`` (``bcolz-store verify --reseal``) accepts it (docs/durability.md)."""

import numpy as np
import pytest

import bcolz_store
from bcolz_store.cli import main
from bcolz_store.errors import IntegrityError

real_bcolz = pytest.importorskip("bcolz")

N, MORE = 1050, 350


def _table_appended_by_bcolz(root):
    t = bcolz_store.ctable([np.arange(N), np.arange(N) * 0.5], names=["a", "b"], chunklen=100,
                           rootdir=str(root), mode="w")
    t.create_index("a")
    t.flush()
    r = real_bcolz.ctable(rootdir=str(root), mode="a")
    r.append((np.arange(N, N + MORE), np.arange(N, N + MORE) * 0.5))
    r.flush()


def _check_accepted(root):
    report = bcolz_store.verify(str(root))
    assert report.ok, report
    t = bcolz_store.open(str(root), mode="r", verify=True)
    assert len(t) >= N + MORE
    assert t.fetchwhere("a == 1200")["a"][:].tolist() == [1200]
    assert t.indexes == {"a": "sorted"}


def test_verify_reports_a_bcolz_append_as_changed_not_damaged(tmp_path):
    _table_appended_by_bcolz(tmp_path / "t")
    report = bcolz_store.verify(str(tmp_path / "t"))
    assert not report.ok
    assert report.damaged == report.missing == report.extra == []
    assert "a/meta/sizes" in report.changed and "b/data/__13.blp" in report.changed
    assert "a/data/__10.blp" in report.changed          # the leftover's, rewritten
    assert "changed by another program (bcolz?)" in report.reasons["a/meta/sizes"]
    with pytest.raises(IntegrityError, match="changed by another program"):
        bcolz_store.open(str(tmp_path / "t"), mode="r", verify=True)


def test_reseal_accepts_a_bcolz_append(tmp_path):
    _table_appended_by_bcolz(tmp_path / "t")
    report = bcolz_store.verify(str(tmp_path / "t"), reseal=True)
    assert report.ok and report.changed == [] and "a/meta/sizes" in report.resealed
    _check_accepted(tmp_path / "t")


def test_a_write_after_the_reseal_keeps_the_dataset_whole(tmp_path):
    _table_appended_by_bcolz(tmp_path / "t")
    assert bcolz_store.verify(str(tmp_path / "t"), reseal=True).ok
    t = bcolz_store.open(str(tmp_path / "t"), mode="a")
    t.append(([5000], [1.0]))
    t.flush()
    _check_accepted(tmp_path / "t")
    assert bcolz_store.open(str(tmp_path / "t"))["a"][-1] == 5000


def test_damage_after_a_bcolz_append_is_damage(tmp_path):
    _table_appended_by_bcolz(tmp_path / "t")
    chunk = tmp_path / "t" / "a" / "data" / "__12.blp"
    data = bytearray(chunk.read_bytes())
    data[-8:] = b"\xff" * 8
    chunk.write_bytes(bytes(data))
    report = bcolz_store.verify(str(tmp_path / "t"), reseal=True)
    assert "a/data/__12.blp" in report.extra and "a/meta/sizes" in report.damaged
    assert report.resealed == [] and "b/meta/sizes" in report.changed


def test_cli_verify_says_what_changed_and_how_to_accept_it(tmp_path, capsys):
    _table_appended_by_bcolz(tmp_path / "t")
    assert main(["verify", str(tmp_path / "t")]) == 4
    out = capsys.readouterr().out
    assert "changed a/meta/sizes" in out
    assert not any(line.startswith(("damaged", "extra")) for line in out.splitlines())
    assert "changed by another program (bcolz?)" in out and "--reseal" in out
    assert main(["verify", "--reseal", str(tmp_path / "t")]) == 0
    assert "resealed 10 files" in capsys.readouterr().out
    assert main(["verify", str(tmp_path / "t")]) == 0
