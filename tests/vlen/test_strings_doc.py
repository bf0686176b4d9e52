"""The Python examples of docs/strings.md run, in order, as written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "strings.md"


@pytest.mark.skipif(not hasattr(np.dtypes, "StringDType"),
                    reason="the page's examples use numpy 2's StringDType")
def test_the_python_blocks_of_the_strings_page_run(tmp_path, monkeypatch):
    pd = pytest.importorskip("pandas")
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 6
    monkeypatch.chdir(tmp_path)
    values = ["ticker%d" % (i % 500) for i in range(20000)]
    namespace = {"values": values, "sample": values[:5000],
                 "df": pd.DataFrame({"s": pd.Series(["a", None], dtype="string"),
                                     "c": pd.Categorical(["x", "y"])})}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)   # noqa: S102 - our own doc
    assert namespace["names"][1] is None and namespace["names"][2] == ""
    assert namespace["c"].codes[:].tolist() == [1, 0, -1, 1]
    pd.testing.assert_frame_equal(namespace["back"], namespace["df"])
    assert namespace["t2"].cols["b"].vlen.kind == "bytes"
