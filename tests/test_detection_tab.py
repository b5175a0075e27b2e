"""TAB scoring and over-replacement helpers of benchmarks/detection.py on hand-made mini documents."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]

det = load_script("benchmarks/detection.py", "detection_bench")

TEXT = "Mr Anna Ek of Oslo met Acme Ltd on 3 May 2001 in court."


def _mention(text: str, frag: str, etype: str, itype: str) -> dict:
    a = text.index(frag)
    return {"start_offset": a, "end_offset": a + len(frag), "entity_type": etype, "identifier_type": itype,
            "span_text": frag}


def _doc() -> dict:
    return {"text": TEXT, "entities": [
        _mention(TEXT, "Anna Ek", "PERSON", "DIRECT"),
        _mention(TEXT, "Oslo", "LOC", "QUASI"),
        _mention(TEXT, "Acme Ltd", "ORG", "NO_MASK"),
        _mention(TEXT, "3 May 2001", "DATETIME", "QUASI"),
    ]}


def _mask(text: str, *frags: str) -> list[bool]:
    spans = [(text.index(f), text.index(f) + len(f)) for f in frags]
    return det.covered(det.word_tokens(text), spans)


def test_gold_marks_direct_and_quasi_tokens_only() -> None:
    doc = _doc()
    gold = det.tab_gold(doc, det.word_tokens(TEXT))
    words = [TEXT[a:b] for a, b in det.word_tokens(TEXT)]
    labelled = {w: g for w, g in zip(words, gold, strict=True) if g}
    assert labelled == {"Anna": ("PERSON", "DIRECT"), "Ek": ("PERSON", "DIRECT"), "Oslo": ("LOC", "QUASI"),
                        "3": ("DATETIME", "QUASI"), "May": ("DATETIME", "QUASI"), "2001": ("DATETIME", "QUASI")}


def test_recall_by_type_and_precision() -> None:
    doc = _doc()
    gold = [det.tab_gold(doc, det.word_tokens(TEXT))]
    # masks the name, the NO_MASK organisation and "court": 2 of 6 gold tokens, 2 of 5 masked tokens inside
    s = det.tab_scores(gold, [_mask(TEXT, "Anna Ek", "Acme Ltd", "court")])
    r = s["recall"]
    assert r["PERSON"] == 1.0 and r["LOC"] == 0.0 and r["DATETIME"] == 0.0
    assert r["DIRECT"] == 1.0 and r["QUASI"] == 0.0
    assert r["all"] == pytest.approx(2 / 6)
    assert s["precision"] == pytest.approx(2 / 5) and s["masked_tokens"] == 5
    assert math.isnan(r["ORG"])  # no DIRECT/QUASI organisation: no recall to report
    assert s["gold_tokens"]["all"] == 6


def test_precision_is_nan_when_nothing_is_masked() -> None:
    gold = [det.tab_gold(_doc(), det.word_tokens(TEXT))]
    s = det.tab_scores(gold, [[False] * len(gold[0])])
    assert s["recall"]["all"] == 0.0 and math.isnan(s["precision"])


def test_partial_span_masks_the_tokens_it_touches() -> None:
    toks = det.word_tokens("Anna Ekholm")
    assert det.covered(toks, [(2, 4)]) == [True, False]  # "na" of Anna


def test_diff_alignment_finds_replaced_tokens() -> None:
    orig = "Mr Anna Ek of Oslo met the judge."
    out = "Mr <PERSON> of <LOCATION> met the judge."
    assert det.diff_masked(orig, out) == [False, True, True, False, True, False, False, False]
    assert det.diff_masked(orig, orig) == [False] * 8
    # a removed token counts as replaced too
    assert det.diff_masked("call Anna now", "call now") == [False, True, False]


def test_over_replacement_counts() -> None:
    class S:
        def __init__(self, a: int, b: int, label: str, detector: str) -> None:
            self.start, self.end, self.label, self.detector = a, b, label, detector

    texts = ["RNA binds DNA in cells.", "Nothing here at all.", "RNA again."]
    spans = [[S(0, 3, "PERSON", "presidio")], [], [S(0, 3, "PERSON", "keyed-index")]]
    r = det.over_replacement(texts, spans)
    assert r["documents_changed"] == 2 and r["share_documents_changed"] == pytest.approx(2 / 3)
    assert r["tokens_changed"] == 2 and r["tokens"] == 11
    assert r["all_caps_le4_spans"] == 2 and r["propagated_spans"] == 1 and r["propagated_all_caps_le4_spans"] == 1
    assert r["top_replaced"][0] == ("RNA (PERSON)", 2)
    assert det._all_caps_short("MDS") and not det._all_caps_short("CONCLUSIONS") and not det._all_caps_short("Rna")
