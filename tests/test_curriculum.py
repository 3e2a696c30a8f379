"""The path through the lab: the scenario index cannot go stale, the glossary explains the terms the chapters
use, and the teacher's kit has a guide per chapter with answers and timings."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from txnlab import gallery

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def _backticked(text: str) -> set[str]:
    return set(re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", text))


def test_the_index_names_every_gallery_scenario_and_nothing_else():
    named = _backticked((NOTEBOOKS / "INDEX.md").read_text())
    everything = set(gallery.names()) | set(gallery.comparison_names())
    assert everything - named == set(), f"INDEX.md misses {sorted(everything - named)}"
    assert named - everything == set(), f"INDEX.md names scenarios that do not exist: {sorted(named - everything)}"


def test_the_index_says_where_each_scenario_is_stepped():
    text = (NOTEBOOKS / "INDEX.md").read_text()
    for line in text.splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \|.*\| ([0-9, ]+) \|$", line)
        if not m:
            continue
        for ch in m.group(2).split(","):
            chapter = next(iter(NOTEBOOKS.glob(f"{ch.strip()}_*.py")), None)
            assert chapter and m.group(1) in chapter.read_text(), f"{m.group(1)} is not in chapter {ch.strip()}"


GLOSSARY_TERMS = ["LEO", "HW", "LSO", "ISR", "PID", "epoch", "sequence number", "transactional.id",
                  "transaction coordinator", "__transaction_state", "__consumer_offsets", "marker", "control batch",
                  "read_committed", "read_uncommitted", "PrepareCommit", "AddPartitionsToTxn", "EndTxn",
                  "WriteTxnMarkers", "InitProducerId", "TxnOffsetCommit", "fencing", "zombie",
                  "transaction.timeout.ms", "hanging transaction", "transaction.version", "idempotent producer",
                  "acks", "max.in.flight.requests.per.connection", "aborted transaction index", "group coordinator",
                  "consumer group", "offset", "partition", "leader", "follower", "KIP-890", "half message",
                  "two-phase commit"]


def test_the_glossary_explains_every_term_the_lab_uses():
    text = (NOTEBOOKS / "GLOSSARY.md").read_text()
    entries = {m.group(1).strip("`*").lower() for m in re.finditer(r"^\*\*(.+?)\*\*", text, re.M)}
    missing = [t for t in GLOSSARY_TERMS if not any(t.lower() in e for e in entries)]
    assert missing == [], f"GLOSSARY.md has no entry for {missing}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_a_teacher_s_guide(chapter):
    guide = NOTEBOOKS / "instructor" / f"{chapter.stem}.md"
    assert guide.exists(), f"no teacher's guide {guide.relative_to(NOTEBOOKS)}"
    text = guide.read_text()
    for section in ("## Goals", "## Timing", "## Expected answers", "## Common misconceptions", "## Moments to show"):
        assert section in text, f"{guide.name}: no {section!r}"
    predictions = len(re.findall(r"\bPredict\(", chapter.read_text())) + len(re.findall(r"\*\*Predict", chapter.read_text()))
    answers = len(re.findall(r"^\d+\. ", text.split("## Expected answers", 1)[1].split("\n## ", 1)[0], re.M))
    assert answers >= min(predictions, 3), f"{guide.name}: {answers} answers for {predictions} predictions"
