"""bcolz_store.limits: the memory ceiling allocations sized from input are checked against."""

import subprocess
import sys

import pytest

import bcolz_store
from bcolz_store import limits


def test_ceiling_is_at_most_physical_memory():
    import os
    phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < limits.memory_ceiling() <= phys


def test_check_alloc_refuses_over_the_ceiling():
    assert limits.check_alloc(1 << 20, "a small block") == 1 << 20
    with pytest.raises(bcolz_store.LimitError, match="a huge block would take"):
        limits.check_alloc(limits.memory_ceiling() + 1, "a huge block")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
def test_ceiling_follows_the_address_space_limit():
    code = ("import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30));"
            "from bcolz_store import limits; print(limits.memory_ceiling())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 0 < int(out.stdout) < 3 << 30
