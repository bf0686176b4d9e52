"""What the real bcolz 1.13 does with datasets holding vlen columns: it refuses
them, naming the column, and never reads them silently."""

import numpy as np
import pytest

import bcolz_store

real_bcolz = pytest.importorskip("bcolz")


def test_real_bcolz_refuses_a_vlen_carray_naming_it(tmp_path):
    root = tmp_path / "names.bcolz"
    bcolz_store.carray(["a", "bb"], dtype="vlen-str", rootdir=str(root), mode="w")
    with pytest.raises(TypeError, match="vlen-str: column 'names.bcolz' holds variable-length"):
        real_bcolz.open(str(root))


@pytest.mark.parametrize("kind", ["str", "bytes"])
def test_real_bcolz_refuses_a_ctable_with_a_vlen_column_naming_it(tmp_path, kind):
    root = tmp_path / "t"
    items = ["x", "yy", None] if kind == "str" else [b"x", b"", None]
    bcolz_store.ctable([np.arange(3), bcolz_store.carray(items, dtype=bcolz_store.vlen(kind))],
                       names=["id", "ticker"], rootdir=str(root), mode="w")
    with pytest.raises(TypeError) as info:
        real_bcolz.open(str(root))
    message = str(info.value)
    assert f"vlen-{kind}: column 'ticker'" in message and "bcolz-store convert" in message
    assert real_bcolz.open(str(root / "id"))[:].tolist() == [0, 1, 2]   # the others still read
