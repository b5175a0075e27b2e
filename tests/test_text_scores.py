"""The text stage's scores and thresholds are written once, in ``text.scores``: no module of
``text/`` writes a score as a number."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from private_vectors.text.scores import MODEL_THRESHOLDS, PATTERN_SCORES, SCORES

ROOT = Path(__file__).resolve().parents[1] / "src" / "private_vectors" / "text"
MODULES = sorted(p for p in ROOT.rglob("*.py") if p != ROOT / "scores.py")


def _score_literals(path: Path) -> list[str]:
    """Numbers that read as a score: a float in (0, 1), or 1.0 other than a comparison's bound
    (``0.0 <= value <= 1.0`` checks a score, it is none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bounds = {id(c) for node in ast.walk(tree) if isinstance(node, ast.Compare)
              for c in (node.left, *node.comparators) if isinstance(c, ast.Constant)}
    return [f"{path.name}:{n.lineno}:{n.value}" for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and type(n.value) is float
            and (0 < n.value < 1 or (n.value == 1 and id(n) not in bounds))]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_score_literal_outside_the_table(path: Path) -> None:
    assert _score_literals(path) == []


def test_the_scan_sees_a_score_literal(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""0.5 in a docstring is prose."""\n'
                   'def f(s, v):\n    assert 0.0 <= v <= 1.0\n'
                   '    return Span(0, 1, "X", 0.75, "r"), s.score >= 0.88, 1.0, 60.0\n')
    assert sorted(_score_literals(bad)) == ["bad.py:4:0.75", "bad.py:4:0.88", "bad.py:4:1.0"]


def test_the_table_holds_scores() -> None:
    values = [*vars(SCORES).values(), *MODEL_THRESHOLDS.values(),
              *(s for table in PATTERN_SCORES.values() for s in table.values())]
    assert values and all(type(v) is float and 0 < v <= 1 for v in values)
    with pytest.raises(TypeError):
        PATTERN_SCORES["regex"]["email"] = 0.5  # type: ignore[index]


def test_recognizers_score_spans_from_the_table() -> None:
    from private_vectors.text.recognizers.identifiers import IdentifierDetector
    from private_vectors.text.recognizers.regex import RegexDetector

    text = "Write to ana@example.org, born 31 May 1991."
    found = {s.label: s.score for s in (*RegexDetector().spans([text])[0], *IdentifierDetector().spans([text])[0])}
    assert found["EMAIL_ADDRESS"] == PATTERN_SCORES["regex"]["email"]
    assert found["DATE_OF_BIRTH"] == PATTERN_SCORES["identifiers"]["date_of_birth"]
