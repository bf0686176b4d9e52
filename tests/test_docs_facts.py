"""What the README and docs/*.md state about the project agrees with the
project: the conformance count they quote, the extras they list, the
commands of ``bcolz-store`` they document.

Each checker also runs on a planted text, so that a checker that finds
nothing fails its own test rather than passing everything.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from bcolz_store.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

#: How many of bcolz's own tests the real bcolz 1.13 passes in the conformance
#: suite (``REFERENCE_PASSED`` of ``../shared/conformance/bcolz_suite.py``): a
#: number about bcolz itself, which the docs may quote beside ours.
BCOLZ_OWN_PASSED = 1173

#: A sentence about the conformance suite mentions one of these.
_CONFORMANCE_WORDS = re.compile(r"conformance|bcolz's own test|bcolz_suite|of bcolz's tests|"
                                r"of its cases", re.I)
#: A count: 1230, 1,230 (not a version such as 1.13, nor part of one).
_COUNT = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+|\d{3,})(?![\d]|[.,]\d)")


def conformance_floor() -> int:
    return int((REPO / ".ci" / "conformance-floor").read_text().strip())


def sentences(text: str) -> list:
    """The sentences of a text (paragraphs, table rows and list items end one)."""
    out = []
    for block in re.split(r"\n\s*\n|\n(?=\s*[|\-*] )", text):
        out.extend(re.split(r"(?<=[.!?])\s+(?=[A-Z`(\[])", block))
    return out


def quoted_counts(text: str) -> list:
    """The counts quoted in sentences about the conformance suite."""
    return [int(n.replace(",", "")) for s in sentences(text) if _CONFORMANCE_WORDS.search(s)
            for n in _COUNT.findall(s)]


def wrong_counts(text: str, floor: int) -> list:
    return [n for n in quoted_counts(text) if n not in (floor, BCOLZ_OWN_PASSED)]


def test_count_finder_finds_planted_counts():
    text = ("Intro with 12345 rows.\n\nbcolz_store passes 1,230 conformance tests\n"
            "and bcolz 1.13 passes 1173.\n\n| S3 | 1,278 failed |\n\n"
            "Set N=5000 for a long run. CI runs bcolz's own test suite: 1169 pass.\n")
    assert quoted_counts(text) == [1230, 1173, 1169]
    assert wrong_counts(text, 1230) == [1169]
    assert wrong_counts(text, 1169) == [1230]
    assert quoted_counts("version 1.13 of the conformance suite, 4 cases") == []


def test_docs_quote_the_conformance_floor():
    floor = conformance_floor()
    found = {path.relative_to(REPO).as_posix(): wrong_counts(path.read_text(), floor)
             for path in DOCS}
    assert {k: v for k, v in found.items() if v} == {}, (
        f"the conformance floor is {floor} (.ci/conformance-floor); "
        f"bcolz's own is {BCOLZ_OWN_PASSED}")
    for name in ("compat.md", "migrating.md"):
        assert floor in quoted_counts((REPO / "docs" / name).read_text()), name


# -------------------------------------------------------------------- extras

def extras() -> dict:
    tomllib = pytest.importorskip("tomllib")
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["optional-dependencies"]


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower()


def test_all_extra_installs_every_optional_extra():
    found = extras()
    optional = {name: reqs for name, reqs in found.items() if name not in ("all", "test", "bench")}
    in_all = set(found["all"])
    missing = {name: sorted(set(reqs) - in_all) for name, reqs in optional.items()
               if set(reqs) - in_all}
    assert missing == {}
    every = {_name(r) for reqs in optional.values() for r in reqs}
    assert {_name(r) for r in in_all} == every, "'all' holds a library no extra has"


def test_readme_install_section_lists_every_extra():
    text = (REPO / "README.md").read_text()
    section = text.split("## Install\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert listed == set(extras()) - {"test", "bench"}
    assert "'.[all]'" in section


# ------------------------------------------------------------------ commands

def commands() -> dict:
    """``{command: its parser}`` of ``bcolz-store``."""
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.mark.parametrize("doc", ["README.md", "docs/index.md"])
def test_docs_show_every_command(doc):
    text = (REPO / doc).read_text()
    missing = [c for c in commands() if not re.search(rf"bcolz-store {c}\b", text)]
    assert missing == []


def test_index_page_documents_every_index_option():
    text = (REPO / "docs" / "index.md").read_text()
    options = [o for a in commands()["index"]._actions for o in a.option_strings
               if o.startswith("--") and o != "--help"]
    assert options and [o for o in options if o not in text] == []
