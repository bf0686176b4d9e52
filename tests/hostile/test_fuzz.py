"""Hostile datasets: bcolz_store raises its own errors, never crashes, hangs,
blows up memory, escapes its rootdir or returns wrong data.

The harness (``tests/hostile/harness.py``) copies known-good datasets (bcolz
1.13 fixtures, datasets the real bcolz writes at test time, datasets
bcolz_store writes) into sandboxes, damages them with replayable plans, and
runs four operations on each in a worker subprocess: read (mode 'r'), read
with ``verify=True``, ``bcolz_store.verify()``, and a write in mode 'a'.

* ``test_fuzz``: hypothesis-drawn cases.  ``BCOLZ_STORE_FUZZ_CASES`` sets their
  number (default 600: about 25 s on 2 cores once no case hangs; 5000 for a
  long run, which also mutates the three largest fixtures);
  ``BCOLZ_STORE_FUZZ_SEED`` draws other cases than the default derandomized set;
  ``BCOLZ_STORE_FUZZ_TIMEOUT`` is the seconds an operation may take (default 5);
  ``BCOLZ_STORE_FUZZ_DRAW=hypothesis`` lets hypothesis draw every choice (default:
  a hypothesis-drawn seed per case, then uniform choices); ``BCOLZ_STORE_FUZZ_SHOW``
  is how many findings the failure lists (default 20; all go to fuzz-findings.txt);
  ``BCOLZ_STORE_FUZZ_FSYNC=1`` keeps fsync on in the worker; ``BCOLZ_STORE_FUZZ_REPORT``
  is a folder for fuzz-findings.txt and fuzz-cases.txt (default: the test's tmp folder).
* ``test_fuzz_replay``: ``BCOLZ_STORE_FUZZ_REPLAY='{"source": ..., "plan": ...}'``
  (printed with every finding) runs that one case again and keeps its sandbox.
* The named tests below pin one example of each defect class.
"""

from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path

import pytest

from tests.conftest import FIXTURES
from tests.hostile import harness as H

FUZZ_CASES = int(os.environ.get("BCOLZ_STORE_FUZZ_CASES", 600))
FUZZ_SEED = os.environ.get("BCOLZ_STORE_FUZZ_SEED")
DRAW = os.environ.get("BCOLZ_STORE_FUZZ_DRAW", "seeded")
REPLAY = os.environ.get("BCOLZ_STORE_FUZZ_REPLAY")
MAX_SHOWN = int(os.environ.get("BCOLZ_STORE_FUZZ_SHOW", 20))


class Sources:
    def __init__(self, items, problems):
        self.items = items
        self.by_name = {s.name: s for s in items}
        self.problems = problems

    def get(self, name: str) -> H.Source:
        if name not in self.by_name:
            if name.startswith("fixture"):
                pytest.skip(f"reference fixtures not found at {FIXTURES}")
            if name.startswith("bcolz"):
                pytest.skip("the real bcolz is not importable here")
            raise KeyError(f"no source {name!r}: {sorted(self.by_name)}; {self.problems}")
        return self.by_name[name]


@pytest.fixture(scope="module")
def hostile_base(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile")


@pytest.fixture(scope="module")
def worker(hostile_base):
    w = H.Worker(hostile_base / "logs", hostile_base / "cwd")
    yield w
    w.stop()


@pytest.fixture(scope="module")
def sources(hostile_base, worker):
    fixtures = FIXTURES if FIXTURES.is_dir() else None
    items, problems = H.build_sources(hostile_base / "sources", worker, fixtures,
                                      big=FUZZ_CASES > 2000)
    assert items, problems
    return Sources(items, problems)


def check(worker, sources, tmp_path, source, plan, descr, ops=None):
    """Run one named case in the worker; fail on its first finding."""
    src = sources.get(source)
    res = H.run_case(worker, src, plan, descr, tmp_path / "case", ops=ops, stop_at_first=True)
    assert not res.findings, "\n".join(res.findings)
    return res


# --- the fuzzer -----------------------------------------------------------------------

def test_fuzz(worker, sources, hostile_base, capsys):
    """Hypothesis-drawn hostile datasets; every operation ends ok or with a BcolzStoreError."""
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    counts = collections.Counter()
    groups = collections.Counter()
    findings = list(sources.problems)
    state = {"cases": 0, "bcolz": 0, "clean": 0, "clean_s": 0.0}
    caselog = []
    base = hostile_base / "fuzz"
    started = time.monotonic()

    @settings(max_examples=FUZZ_CASES, deadline=None, database=None,
              derandomize=FUZZ_SEED is None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def case(data):
        if DRAW == "hypothesis":
            d = H.Draw(data)            # every choice drawn by hypothesis
        else:                           # a hypothesis-drawn seed for uniform choices
            d = H.RandomDraw(f"{data.draw(st.integers(0, 2**64 - 1), label='seed')}-{state['cases']}")
        family = H.draw_family(d)
        src = H.choose_source(d, sources.items, family)
        plan, descr = H.draw_plan(d, src, family)
        state["cases"] += 1
        state["bcolz"] += src.bcolz_written
        t0 = time.monotonic()
        res = H.run_case(worker, src, plan, descr, base / f"case{state['cases']}")
        if not any(r.outcome in ("crash", "hang", "memory") for r in res.ops):
            state["clean"] += 1             # what a case costs once nothing hangs or crashes
            state["clean_s"] += time.monotonic() - t0
        caselog.append(f"{state['cases']:5d} {src.name:34s} "
                       f"{' '.join(r.op + '=' + r.outcome for r in res.ops)} :: {descr}")
        for r in res.ops:
            counts[r.outcome] += 1
            if r.outcome in H.FINDINGS:
                groups[(r.outcome, r.op, r.detail.split(":")[0][:60])] += 1
        findings.extend(res.findings)

    if FUZZ_SEED is not None:
        case = seed(int(FUZZ_SEED))(case)
    case()
    line = H.summary_line(state["cases"], state["bcolz"], counts)
    elapsed = time.monotonic() - started
    out = Path(os.environ.get("BCOLZ_STORE_FUZZ_REPORT", hostile_base))
    out.mkdir(parents=True, exist_ok=True)
    report = out / "fuzz-findings.txt"
    report.write_text(line + "\n" + "\n".join(findings) + "\n")
    (out / "fuzz-cases.txt").write_text("\n".join(caselog) + "\n")
    with capsys.disabled():
        per_case = 1000 * state["clean_s"] / max(state["clean"], 1)
        print(f"\n{line}\n    {elapsed:.1f} s, {worker.starts} worker starts, "
              f"{per_case:.0f} ms per case without crash/hang/memory; all findings in {report}")
        for (outcome, op, what), n in groups.most_common(25):
            print(f"    {n:5d}  {outcome:12s} {op:12s} {what}")
    bad = {k: counts[k] for k in H.FINDINGS if counts[k]}
    assert not bad and not sources.problems, (
        f"{line}\n" + "\n".join(findings[:MAX_SHOWN]) +
        (f"\n... and {len(findings) - MAX_SHOWN} more" if len(findings) > MAX_SHOWN else ""))


@pytest.mark.skipif(not REPLAY, reason="set BCOLZ_STORE_FUZZ_REPLAY to replay one case")
def test_fuzz_replay(worker, sources, tmp_path, capsys):
    spec = json.loads(REPLAY)
    src = sources.get(spec["source"])
    res = H.run_case(worker, src, spec["plan"], "replay", tmp_path / "case", keep=True)
    with capsys.disabled():
        print(f"\nsandbox: {tmp_path / 'case'}")
        for r in res.ops:
            print(f"  {r.op:12s} {r.outcome:12s} {r.detail[:2000]}")
    assert not res.findings, "\n".join(res.findings)


# --- 1. object pointers decoded from raw bytes ------------------------------------------

def _storage(key, value, prefix=""):
    return ["json_set", prefix + "meta/storage", [key], value]


HIDDEN_OBJECT = {
    "struct-O": ("store:i8", [_storage("dtype", "[('a', 'O')]"), _storage("dflt", None)]),
    "struct-i8-O": ("store:structured", [_storage("dtype", "[('a', '<i8'), ('b', 'O')]"),
                                         _storage("dflt", None)]),
    "object-atom-n1": ("store:i8", [_storage("dtype", "object"), _storage("dflt", None),
                                    ["json_set", "meta/sizes", ["shape"], [35, 1]]]),
    "bcolz-struct-O": ("bcolz:i8_leftover", [_storage("dtype", "[('a', 'O')]")]),
    "ctable-column-struct-O": ("store:ctable", [_storage("dtype", "[('a', 'O')]", "a/"),
                                                _storage("dflt", None, "a/")]),
}


@pytest.mark.parametrize("name", sorted(HIDDEN_OBJECT))
def test_hidden_object_dtype_is_refused(worker, sources, tmp_path, name):
    """An object dtype hidden in a structured field or an atom never gets raw bytes as pointers."""
    source, plan = HIDDEN_OBJECT[name]
    check(worker, sources, tmp_path, source, plan, name,
          ops=["read", "read_pickle", "read_verify", "write"])


# --- 2. hangs and unbounded reads ---------------------------------------------------------

HOSTILE_FILES = [("fifo", "data/__1.blp"), ("fifo", "meta/sizes"), ("fifo", "meta/storage"),
                 ("fifo", "__attrs__"), ("fifo", H.CHECKSUM_FILE),
                 ("devzero", "__attrs__"), ("devzero", H.CHECKSUM_FILE), ("devnull", "meta/sizes"),
                 ("loop", H.CHECKSUM_FILE), ("loop", "__attrs__"), ("sparse", H.CHECKSUM_FILE)]


@pytest.mark.parametrize("kind,key", HOSTILE_FILES, ids=[f"{k}-{f}" for k, f in HOSTILE_FILES])
def test_hostile_file_type(worker, sources, tmp_path, kind, key):
    """A FIFO, a /dev link, a symlink loop or a 10 GB sparse file in place of a dataset file."""
    check(worker, sources, tmp_path, "store:i8", H.hostile_steps(key, kind), f"{key} is {kind}")


NO_CHECKSUMS = [["remove", H.CHECKSUM_FILE], ["fifo", "extra-fifo"],
                ["symlink", "data/extra", "/dev/zero"]]


@pytest.mark.parametrize("op", ["read_verify", "verify_fn", "write"])
@pytest.mark.parametrize("source", ["store:i8", "bcolz:i8_leftover"])
def test_without_checksum_file_only_dataset_files_are_read(worker, sources, tmp_path, op, source):
    """No checksum file: verify=True, verify() and the first write in mode 'a' do not read
    every file under the root (here a FIFO and a /dev/zero link that are not bcolz files)."""
    check(worker, sources, tmp_path, source, NO_CHECKSUMS, "no md5; extra FIFO and /dev/zero link",
          ops=[op])


# --- 3. escapes through shipped journals and symlinks --------------------------------------

J = H.JOURNAL_DIR


def _manifest(entries, jdir=J):
    return ["write", f"{jdir}/manifest.json", json.dumps(entries)]


SYMLINKED_DATA = [["copy", "data", H.SB + "outside/c-data"],
                  ["symlink", "data", H.UP + "outside/c-data"]]
ESCAPES = {
    # mode 'a' replays the manifest through data -> outside/c-data
    "delete-through-symlinked-folder": (SYMLINKED_DATA + [_manifest([["data/__0.blp", None]])],
                                        ["write"]),
    "create-through-symlinked-folder": (SYMLINKED_DATA + [["writehex", f"{J}/000001.blob", "00"],
                                        _manifest([["data/__9.blp", "000001.blob"]])], ["write"]),
    "blob-symlink-outside-read": ([["symlink", f"{J}/000001.blob", H.SB + "outside/attrs.json"],
                                   _manifest([["__attrs__", "000001.blob"]])], ["read"]),
    "blob-symlink-outside-verify": ([["symlink", f"{J}/000001.blob", H.SB + "outside/attrs.json"],
                                     _manifest([["__attrs__", "000001.blob"]])], ["read_verify"]),
    "blob-symlink-outside-write": ([["symlink", f"{J}/000001.blob", H.SB + "outside/attrs.json"],
                                    _manifest([["__attrs__", "000001.blob"]])], ["write"]),
    "journal-folder-symlink": ([["copy", "__attrs__", H.SB + "outside/journal/000001.blob"],
                                _manifest([["__attrs__", "000001.blob"]], H.SB + "outside/journal"),
                                ["symlink", J, H.UP + "outside/journal"]], None),
    "key-dotdot": ([["writehex", f"{J}/000001.blob", "00"],
                    _manifest([["../outside/sentinel.txt", "000001.blob"]])], None),
    "key-absolute": ([["writehex", f"{J}/000001.blob", "00"],
                      _manifest([[H.ABS + "outside/sentinel.txt", "000001.blob"]])], None),
    "blob-name-slash": ([_manifest([["__attrs__", "sub/000001.blob"]]),
                         ["write", f"{J}/sub/000001.blob", "{}"]], None),
    "blob-name-dotdot": ([_manifest([["__attrs__", "../../outside/attrs.json"]])], None),
    "blob-fifo": ([["fifo", f"{J}/000001.blob"], _manifest([["data/__0.blp", "000001.blob"]])],
                  None),
    "blob-directory": ([["mkdir", f"{J}/000001.blob"], _manifest([["__attrs__", "000001.blob"]])],
                       None),
    "blob-dev-zero": ([["symlink", f"{J}/000001.blob", "/dev/zero"],
                       _manifest([["meta/sizes", "000001.blob"]])], None),
    "blob-sparse-10GB": ([["sparse", f"{J}/000001.blob", H.SPARSE_SIZE],
                          _manifest([["data/__1.blp", "000001.blob"]])], None),
    "manifest-fifo": ([["mkdir", J], ["fifo", f"{J}/manifest.json"]], None),
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_shipped_journal_stays_inside(worker, sources, tmp_path, name):
    """A journal shipped in a received dataset never touches or serves files outside it,
    never hangs, and never serves blobs that are not regular files inside the journal."""
    plan, ops = ESCAPES[name]
    check(worker, sources, tmp_path, "store:i8", plan, name, ops=ops)


def test_symlinked_column_folder_replay(worker, sources, tmp_path):
    """The same through a ctable column symlinked outside."""
    plan = [["copy", "b", H.SB + "outside/c-b"], ["symlink", "b", H.UP + "outside/c-b"],
            _manifest([["b/meta/sizes", None], ["b/__attrs__", None]])]
    check(worker, sources, tmp_path, "store:ctable", plan, "column b -> outside", ops=["write"])


# --- 4. malformed metadata raises BcolzStoreError ----------------------------------------------

METADATA = {
    "quantize-x": ("store:i8", [["json_set", "meta/storage", ["cparams", "quantize"], "x"]]),
    "quantize-list": ("store:i8", [["json_set", "meta/storage", ["cparams", "quantize"], [1]]]),
    "quantize-inf": ("store:i8", [["json_set", "meta/storage", ["cparams", "quantize"],
                                   float("inf")]]),
    "quantize-negative": ("store:i8", [["json_set", "meta/storage", ["cparams", "quantize"], -3]]),
    "atom-2**31-items": ("store:i8", [["json_set", "meta/sizes", ["shape"], [35, 2**31]]]),
    "atom-2GB": ("store:i8", [["json_set", "meta/sizes", ["shape"], [35, 2**28]]]),
    "atom-over-2GB": ("store:f8_atom", [["json_set", "meta/sizes", ["shape"], [20, 2**29]]]),
    "object-shape-2**63": ("store:object", [["json_set", "meta/sizes", ["shape"], [2**63]]]),
    "dtype-U0": ("store:f4", [["json_set", "meta/storage", ["dtype"], "U0"]]),
    "bcolz-dtype-U0": ("bcolz:f4_clevel0", [["json_set", "meta/storage", ["dtype"], "U0"]]),
    "10**12-items-two-chunk-files": (
        "store:i8_two_chunks", [["json_set", "meta/sizes", ["shape"], [10**12]],
                                ["copy", "data/__0.blp", f"data/__{10**11 - 1}.blp"],
                                ["remove", "data/__1.blp"]]),
    "bcolz-quantize-x": ("bcolz:i8_leftover",
                         [["json_set", "meta/storage", ["cparams", "quantize"], "x"]]),
    # columns of items of any length (data/__N.vlen, a 'vlen' entry in meta/storage)
    "vlen-dflt-surrogate": ("store:ctable_vlen",
                            [["json_set", "s/meta/storage", ["dflt"], "\udc80"]]),
    "vlen-kind-swapped": ("store:ctable_vlen",
                          [["json_set", "b/meta/storage", ["dtype"], "vlen-str"]]),
    "vlen-no-entry": ("store:vlen_str", [["json_set", "meta/storage", ["vlen"], None]]),
    "vlen-dictionary-dropped": ("store:vlen_bytes_dict",
                                [["json_set", "meta/storage", ["vlen", "dictionary"], None]]),
    "vlen-chunklen-2**40": ("store:vlen_str",
                            [["json_set", "meta/storage", ["chunklen"], 2**40]]),
    "vlen-10**12-items": ("store:vlen_str", [["json_set", "meta/sizes", ["shape"], [10**12]],
                                             ["copy", "data/__0.vlen",
                                              f"data/__{10**12 // 16 - 1}.vlen"]]),
    "vlen-chunk-from-another-column": ("store:ctable_vlen",
                                       [["copy", "b/data/__0.vlen", "s/data/__0.vlen"]]),
    "vlen-2d-shape": ("store:vlen_str", [["json_set", "meta/sizes", ["shape"], [60, 2]]]),
    # one atom or one leftover buffer larger than the worker may allocate: LimitError
    "void-atom-2**31-1": ("fixture+md5:U6_words",
                          [["json_set", "meta/storage", ["dtype"], "V2147483647"]]),
    "leftover-of-1-GiB": ("fixture+md5:f4_clevel0",
                          [["json_set", "meta/storage", ["chunklen"], 268435456],
                           ["flip", "data/__5.blp", [[26404, 0], [2709, 0], [17686, 3]]]]),
}


@pytest.mark.parametrize("name", sorted(METADATA))
def test_malformed_metadata(worker, sources, tmp_path, name):
    source, plan = METADATA[name]
    check(worker, sources, tmp_path, source, plan, name)


# --- 5. reserved names ----------------------------------------------------------------------------

@pytest.mark.parametrize("reserved", H.RESERVED_NAMES)
def test_reserved_column_name_is_refused(worker, sources, tmp_path, reserved):
    plan = [["copy", "b", reserved],
            ["json_set", "__rootdirs__", ["names"], ["a", "b", "c", "d", reserved]],
            ["expect_failure", f"column named {reserved!r}"]]
    check(worker, sources, tmp_path, "store:ctable", plan, f"__rootdirs__ names {reserved!r}",
          ops=["read", "read_verify", "write"])


# --- 6. verify=True gaps -------------------------------------------------------------------------

VERIFY = {
    "deleted-attrs": ("store:i8", [["remove", "__attrs__"]]),
    "deleted-column-attrs": ("store:ctable", [["remove", "a/__attrs__"]]),
    "attrs-is-a-directory": ("store:i8", [["mkdir", "__attrs__"]]),
    "chunk-from-elsewhere": ("store:i8", [["copy", "data/__1.blp", "data/__0.blp"]]),
    "chunk-symlink-inside": ("store:i8", [["symlink", "data/__0.blp", "__1.blp"]]),
    "journal-overlay-unchecked": ("store:i8", [["copy", "data/__1.blp", f"{J}/000001.blob"],
                                               _manifest([["data/__0.blp", "000001.blob"]])]),
    "journal-overlay-deletes-attrs": ("store:i8", [_manifest([["__attrs__", None]])]),
    "bcolz+md5-deleted-attrs": ("bcolz+md5:i8_leftover", [["remove", "__attrs__"]]),
}


@pytest.mark.parametrize("name", sorted(VERIFY))
def test_verify_never_returns_other_data(worker, sources, tmp_path, name):
    """With a checksum file, verify=True raises rather than read back changed or missing files."""
    source, plan = VERIFY[name]
    check(worker, sources, tmp_path, source, plan, name, ops=["read_verify", "verify_fn"])


# --- 7. chunk statistics (meta/stats) ---------------------------------------------------------

def _stats(keys, value, reseal=False, prefix=""):
    return ["stats_set", prefix + "meta/stats", keys, value, reseal]


STATS_FILES = {
    "bit-flips": ("store:i8", [["flip", "meta/stats", [[30, 1], [71, 6]]]]),
    "wrong-md5": ("store:f4", [_stats(["md5"], "0" * 32)]),
    "a-lie-md5-left": ("store:ctable", [_stats(["chunks", 1, 1], 10 ** 6, prefix="a/")]),
    "wrong-count": ("store:i8", [_stats(["chunks", 0, 2], 11, True)]),
    "wrong-kind": ("store:M8", [_stats(["kind"], "<i8", True)]),
    "kind-not-a-dtype": ("store:i8", [_stats(["kind"], "[('a', '<i8')]", True)]),
    "huge-number": ("store:ctable", [_stats(["chunks", 0, 0], 10 ** 400, True, "b/")]),
    "huge-integer": ("store:u1_zstd", [_stats(["chunks", 0, 1], 2 ** 64, True)]),
    "nested-junk": ("store:vlen_str", [_stats(["chunks", 0, 0], {"a": [[None]]}, True)]),
    "non-ascii": ("store:vlen_str", [_stats(["chunks", 1, 1], "\u00e9\U0001f600", True)]),
    "not-latin-1-bytes": ("store:vlen_bytes_dict", [_stats(["chunks", 0, 1], "\u20ac", True)]),
    "length-of-10**12": ("store:i8", [_stats(["length"], 10 ** 12, True)]),
    "deep-nesting": ("store:i8", [["write", "meta/stats",
                                   '{"chunks": ' + "[" * 60000 + "]" * 60000 + "}"]]),
    "fifo": ("store:ctable_cat", H.hostile_steps("color/meta/stats", "fifo")),
    "dev-zero": ("store:i8", H.hostile_steps("meta/stats", "devzero")),
    "sparse-10GB": ("store:i8", H.hostile_steps("meta/stats", "sparse")),
    "a-folder": ("store:i8", H.hostile_steps("meta/stats", "dir")),
    "symlink-loop": ("store:i8", H.hostile_steps("meta/stats", "loop")),
    "symlink-outside": ("store:i8", [["symlink", "meta/stats", H.SB + "outside/attrs.json"]]),
    "removed": ("store:ctable", [["remove", "d/meta/stats"]]),
}


@pytest.mark.parametrize("name", sorted(STATS_FILES))
def test_damaged_statistics_are_never_used(worker, sources, tmp_path, name):
    """A damaged meta/stats raises nothing but the library's errors, is never used
    (every read checks the statistics a query would use against the items), is
    refused by verify=True and reported by verify()."""
    source, plan = STATS_FILES[name]
    res = check(worker, sources, tmp_path, source, plan, name)
    outcomes = {r.op: r.outcome for r in res.ops}
    assert outcomes["read_verify"] == "error", outcomes
    assert outcomes["read"] == "ok", outcomes


FORGED = {
    "a-lie-md5-recomputed": ("store:ctable", [_stats(["chunks", 1, 1], 10 ** 6, True, "a/")]),
    "another-column's": ("store:ctable_vlen", [["copy", "s/meta/stats", "b/meta/stats"]]),
}


@pytest.mark.parametrize("name", sorted(FORGED))
def test_forged_statistics_are_refused_by_verify_true(worker, sources, tmp_path, name):
    """A well-formed file that lies (its md5 field recomputed) is a forgery: read
    without verify it may mislead a query, as a forged chunk may (docs/format.md);
    the checksum file tells it to verify=True and to verify()."""
    source, plan = FORGED[name]
    res = check(worker, sources, tmp_path, source, plan, name, ops=["read_verify", "verify_fn"])
    assert [r.outcome for r in res.ops] == ["error", "ok"]
