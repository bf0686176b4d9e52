"""The Python examples of docs/converting.md run, in order, as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "converting.md"

pytestmark = pytest.mark.filterwarnings("ignore:.*does not have a Zarr V3 specification")


def test_the_python_blocks_of_the_guide_run(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pyarrow")
    pytest.importorskip("zarr")
    pytest.importorskip("msgpack")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 3
    monkeypatch.chdir(tmp_path)
    namespace = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)   # noqa: S102 - our own doc
    out = capsys.readouterr().out
    assert "parquet ctable 5" in out and "['key', 'id', 'x', 'label']" in out
