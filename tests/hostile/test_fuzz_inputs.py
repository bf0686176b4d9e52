"""Hostile inputs beyond damaged datasets: vlen/categorical data that lies, bombs,
packs, conversion inputs and deep JSON (tests/hostile/round3.py).

Every case runs in the harness's worker subprocess (RLIMIT_AS 3 GiB, a
timeout per operation) or, for the CLI, in a ``python -m bcolz_store.cli``
subprocess under the same limits, so a crash, a hang or a blow-up is an
outcome.  Outcomes: those of tests/hostile/test_fuzz.py plus ``code`` (a
hostile pickle was executed).

* ``test_fuzz_inputs``: ``BCOLZ_STORE_FUZZ3_CASES`` cases (default 150, about
  a minute on 2 cores; 5000 for a long run, half of them packs and
  conversions); ``BCOLZ_STORE_FUZZ3_SEED`` (default 0) draws other cases;
  ``BCOLZ_STORE_FUZZ3_FAMILIES`` (comma-separated) restricts the families;
  ``BCOLZ_STORE_FUZZ3_CLI`` is the share of pack and conversion cases that
  also run the CLI (default 0.1); ``BCOLZ_STORE_FUZZ_REPORT`` is the folder of
  fuzz3-findings.txt and fuzz3-cases.txt; ``BCOLZ_STORE_FUZZ_TIMEOUT``,
  ``BCOLZ_STORE_FUZZ_BOMB_TIMEOUT`` (20) and ``BCOLZ_STORE_FUZZ_CLI_TIMEOUT``
  (30) are the seconds an operation may take.
* ``test_fuzz_inputs_replay``: ``BCOLZ_STORE_FUZZ3_REPLAY='{"family": ...}'``
  (printed with every finding) runs that case again and keeps its sandbox.

``test_fuzz_inputs`` fails on any finding; it is never skipped or xfailed.
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile import harness as H
from tests.hostile import round3 as R

CASES = int(os.environ.get("BCOLZ_STORE_FUZZ3_CASES", 150))
SEED = os.environ.get("BCOLZ_STORE_FUZZ3_SEED", "0")
FAMILIES = [f for f in os.environ.get("BCOLZ_STORE_FUZZ3_FAMILIES", "").split(",") if f]
CLI_SHARE = float(os.environ.get("BCOLZ_STORE_FUZZ3_CLI", "0.1"))
REPLAY = os.environ.get("BCOLZ_STORE_FUZZ3_REPLAY")
MAX_SHOWN = int(os.environ.get("BCOLZ_STORE_FUZZ_SHOW", 20))


@pytest.fixture(scope="module")
def base3(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile3")
    os.environ[R.MARKER_ENV] = str(base / "code-marker.txt")    # before the worker starts
    return base


@pytest.fixture(scope="module")
def worker3(base3):
    w = H.Worker(base3 / "logs", base3 / "cwd")
    yield w
    w.stop()


@pytest.fixture(scope="module")
def env3(base3, worker3):
    sources, problems = H.build_sources(base3 / "sources", worker3, None)
    env = R.build_env3(base3, worker3, sources)
    env.problems[:0] = problems
    return env


def _summary(cases: int, per_family: dict) -> str:
    total = collections.Counter()
    for c in per_family.values():
        total.update(c)
    parts = [f"fuzz3: {cases} cases; " + ", ".join(f"{k} {total.get(k, 0)}" for k in R.OUTCOMES3)]
    for fam in sorted(per_family):
        c = per_family[fam]
        parts.append(f"    {fam:10s} " + ", ".join(f"{k} {c[k]}" for k in R.OUTCOMES3 if c[k]))
    return "\n".join(parts)


def test_fuzz_inputs(worker3, env3, base3, capsys):
    """Every operation on a hostile input ends ok or with a BcolzStoreError (or, for the
    CLI, exit status 1 and one line); none runs code, crashes, hangs, blows up memory,
    writes outside its folder or returns different data without an error."""
    per_family = collections.defaultdict(collections.Counter)
    groups = collections.Counter()
    findings = list(env3.problems)
    caselog = []
    started = time.monotonic()
    for i in range(CASES):
        d = H.RandomDraw(f"fuzz3-{SEED}-{i}")
        family = d.choice(FAMILIES) if FAMILIES else None
        spec = R.draw_case(d, env3.dsources, env3.files, family, CLI_SHARE)
        t0 = time.monotonic()
        res = R.run_case3(worker3, env3, spec, base3 / "fuzz" / f"case{i}")
        caselog.append(f"{i:5d} {spec['family']:9s} {spec['source']:30s} "
                       f"{' '.join(r.op + '=' + r.outcome for r in res.ops)} "
                       f"({time.monotonic() - t0:.1f} s) :: {spec['descr']}")
        for r in res.ops:
            per_family[spec["family"]][r.outcome] += 1
            if r.outcome in R.FINDINGS3:
                groups[(r.outcome, spec["family"], r.op, r.detail.split("||")[0][:70])] += 1
        findings.extend(res.findings)
    line = _summary(CASES, per_family)
    out = Path(os.environ.get("BCOLZ_STORE_FUZZ_REPORT", base3))
    out.mkdir(parents=True, exist_ok=True)
    report = out / "fuzz3-findings.txt"
    report.write_text(line + "\n" + "\n".join(findings) + "\n")
    (out / "fuzz3-cases.txt").write_text("\n".join(caselog) + "\n")
    with capsys.disabled():
        print(f"\n{line}\n    {time.monotonic() - started:.1f} s, {worker3.starts} worker "
              f"starts; all findings in {report}")
        for (outcome, fam, op, what), n in groups.most_common(30):
            print(f"    {n:5d}  {outcome:12s} {fam:9s} {op:16s} {what}")
    bad = sum(c[k] for c in per_family.values() for k in R.FINDINGS3)
    assert not bad and not env3.problems, (
        f"{line}\n" + "\n".join(findings[:MAX_SHOWN]) +
        (f"\n... and {len(findings) - MAX_SHOWN} more" if len(findings) > MAX_SHOWN else ""))


@pytest.mark.skipif(not REPLAY, reason="set BCOLZ_STORE_FUZZ3_REPLAY to replay one case")
def test_fuzz_inputs_replay(worker3, env3, base3, capsys):
    spec = dict(json.loads(REPLAY), descr="replay")
    res = R.run_case3(worker3, env3, spec, base3 / "replay", keep=True)
    with capsys.disabled():
        print(f"\nsandbox: {base3 / 'replay'}")
        for r in res.ops:
            print(f"  {r.op:16s} {r.outcome:12s} {r.detail[:2000]}")
    assert not res.findings, "\n".join(res.findings)


# --- the machinery itself ------------------------------------------------------------------

def test_marker_payload_is_detected(tmp_path):
    """Unpickling a hostile payload leaves the trace ``code`` is judged by."""
    marker = tmp_path / "marker"
    env = dict(os.environ, **{R.MARKER_ENV: str(marker)})
    subprocess.run([sys.executable, "-c", "import pickle, sys; pickle.loads(sys.stdin.buffer.read())"],
                   input=R.evil_pickle(), env=env, check=True)
    assert marker.read_text() == "code executed\n"


def test_own_vlen_encoder_matches_the_format(worker3, env3, base3):
    """An honest chunk of our encoder reads back (so a lie it tells is the only fault)."""
    src = env3.dsources["r3:vlen_str_nonnull"]
    items = ["a", "héllo", ""] + ["x"] * 13
    spec = {"family": "vlen_cat", "source": src.name, "descr": "honest chunk",
            "plan": [["vlen_chunk", "data/__0.vlen", items, "str", "none", None],
                     ["drop_consolidated"], ["md5_rewrite"]],
            "ops": ["read", "read_verify"]}
    res = R.run_case3(worker3, env3, spec, base3 / "honest")
    assert [r.outcome for r in res.ops] == ["ok", "ok"], res.ops


def test_own_vlen_encoder_with_dictionary(worker3, env3, base3):
    src = env3.dsources["r3:vlen_str_dict"]
    items = ["k%03d" % (i % 50) for i in range(64)]
    spec = {"family": "vlen_cat", "source": src.name, "descr": "honest chunk, dictionary",
            "plan": [["vlen_chunk", "data/__0.vlen", items, "str", "none", "meta/storage"],
                     ["drop_consolidated"], ["md5_rewrite"]],
            "ops": ["read"]}
    res = R.run_case3(worker3, env3, spec, base3 / "honest-dict")
    assert [r.outcome for r in res.ops] == ["ok"], res.ops


def test_pristine_inputs_convert(worker3, env3, base3):
    """The good conversion inputs and the good pack go through (so a failure is the damage)."""
    outcomes = {}
    for name in sorted(n for n in env3.files if n.startswith("good.") and ":" not in n):
        ops = R.PACK_OPS if name.endswith(".zip") else ["convert"]
        spec = {"family": "convert", "source": "file:" + name, "descr": "pristine", "plan": [],
                "ops": ops}
        res = R.run_case3(worker3, env3, spec, base3 / "pristine")
        outcomes[name] = [(r.op, r.outcome, r.detail[:200]) for r in res.ops]
    bad = {k: v for k, v in outcomes.items() if any(o != "ok" for _, o, _ in v)}
    assert not bad and not env3.problems, (bad, env3.problems)
