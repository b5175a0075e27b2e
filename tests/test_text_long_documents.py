"""Long documents in the text stage: each recognizer call gets a bounded amount of text (so the
time limit holds per call, whatever a batch holds), every chunk is still read, a time-out still
raises, and the learned tagger reads long inputs the same in any batching."""

from __future__ import annotations

import time

import pytest

from private_vectors.text import DetectionError, Sanitizer, detection
from private_vectors.text.detection import DETECT_CHARS, DETECT_GROUP, detect_groups
from private_vectors.text.recognizers.regex import RegexDetector


class _Recorder:
    """Finds nothing; records how many characters each call received."""

    name = "recorder"

    def __init__(self, seconds_per_char: float = 0.0) -> None:
        self.calls: list[int] = []
        self.seconds_per_char = seconds_per_char

    def spans(self, texts):
        size = sum(len(t) for t in texts)
        self.calls.append(size)
        time.sleep(size * self.seconds_per_char)
        return [[] for _ in texts]

    def get_config(self):
        return {"type": "recorder"}


def _judgment(n_paragraphs: int) -> str:
    para = ("The applicant, a pensioner living in the north of the country, lodged a complaint with the "
            "regional court on the third of March; the court dismissed it, finding no breach. ")
    return "\n\n".join(f"{i}. {para}" for i in range(n_paragraphs)) + "\nContact: clerk.office@example.org"


def test_groups_hold_a_bounded_amount_of_text_and_cover_every_text_once() -> None:
    lengths = [10_000] * 30 + [80] * 200 + [120_000] + [5]
    groups = detect_groups(lengths)
    assert [i for g in groups for i in g] == list(range(len(lengths)))
    for g in groups:
        assert len(g) <= DETECT_GROUP
        assert len(g) == 1 or sum(lengths[i] for i in g) <= DETECT_CHARS
    assert any(len(g) == 1 and lengths[g.start] == 120_000 for g in groups)  # a longer text goes alone
    assert detect_groups([]) == [] and detect_groups([5] * 3) == [range(0, 3)]


@pytest.fixture()
def small_calls(monkeypatch: pytest.MonkeyPatch) -> int:
    """A call limit of 3,000 characters (the default's behaviour at a size a test reads quickly)."""
    monkeypatch.setattr(detection, "DETECT_CHARS", 3000)
    return 3000


def test_a_long_batch_is_read_in_calls_of_bounded_size_and_read_to_its_end(small_calls: int) -> None:
    docs = [_judgment(60) for _ in range(2)]  # about 2 × 11.5k characters, in 1,000-character chunks
    rec = _Recorder()
    stage = Sanitizer(concept=None, detectors=[RegexDetector(), rec], chunk_size=1000)
    out = stage.apply(docs)
    assert all(o.endswith("Contact: <EMAIL_ADDRESS>") for o in out)  # nothing truncated
    assert sum(rec.calls) >= sum(len(d) for d in docs)
    assert len(rec.calls) >= 8 and max(rec.calls) <= small_calls


def test_the_time_limit_follows_the_text_of_one_call_and_still_raises(small_calls: int) -> None:
    docs = [_judgment(60) for _ in range(4)]
    # 50 s per million characters: a call of 3,000 characters takes 0.15 s, the whole batch in one call 2.3 s
    ok = Sanitizer(concept=None, detectors=[_Recorder(5e-5)], timeout=1.5, chunk_size=1000)
    assert ok.apply(docs) == docs
    slow = Sanitizer(concept=None, detectors=[_Recorder(1e-3)], timeout=0.2, chunk_size=1000)
    with pytest.raises(DetectionError, match="timed out"):
        slow.apply(docs[:1])
