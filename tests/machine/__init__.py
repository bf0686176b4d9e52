"""Model-based tests of the whole operation space: carrays and ctables of every
column kind, on every store, driven by random sequences of operations with a
reopen, a ``refresh()``, a dropped writer or nothing between them, and
compared with a numpy model after every step.

Example counts: each test runs its share of :func:`budget`; the environment
variable ``BCOLZ_STORE_MACHINE_EXAMPLES`` sets the total over all of them
(default 300, which CI runs in about two minutes; 5000 or more for a long
run).  ``HYPOTHESIS_PROFILE=ci`` makes runs reproducible (see
:mod:`tests.properties`).
"""

import os

from hypothesis import Phase

DEFAULT_TOTAL = 300


def total_examples() -> int:
    """Examples of all the machine tests together."""
    text = os.environ.get("BCOLZ_STORE_MACHINE_EXAMPLES", "")
    try:
        return max(int(text), 1) if text else DEFAULT_TOTAL
    except ValueError:
        raise ValueError(f"BCOLZ_STORE_MACHINE_EXAMPLES must be a whole number, not {text!r}")


def budget(share: float) -> int:
    """This test's examples: ``share`` of :func:`total_examples` (at least 2)."""
    return max(int(round(total_examples() * share)), 2)


#: ``BCOLZ_STORE_MACHINE_SHRINK=0`` reports a failure as found (long runs, debugging).
PHASES = tuple(p for p in Phase if p is not Phase.shrink or
               os.environ.get("BCOLZ_STORE_MACHINE_SHRINK", "1") != "0")
