"""The figures the library quotes at run time come from one shipped data file, written from the
committed results by ``benchmarks/measured_figures.py``; nothing in ``src/`` points at the
results folder, which the wheel does not ship."""

from __future__ import annotations

from pathlib import Path

from _scripts import load_script
from private_vectors._files import measured_figures

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "private_vectors"


def test_the_shipped_figures_are_what_the_script_writes_from_the_results() -> None:
    script = load_script("benchmarks/measured_figures.py", "measured_figures_script")
    shipped = (SRC / "data" / "measured.json").read_text(encoding="utf-8")
    assert shipped == script.build(), "re-run: .venv/bin/python benchmarks/measured_figures.py"
    assert script.main(["--check"]) == 0


def test_the_library_reads_the_shipped_file() -> None:
    figures = measured_figures()
    assert set(figures) == {"about", "laplace", "erasure"}
    assert figures["laplace"]["redact"]["10"] == [0.65, 3.0]  # (the privacy report's ε = 10 row)
    assert len(figures["erasure"]["rows"]) >= 1


def test_no_source_file_points_at_the_results_folder() -> None:
    hits = [p.relative_to(ROOT).as_posix() for p in sorted(SRC.rglob("*"))
            if p.is_file() and p.suffix in (".py", ".json", ".txt", ".md")
            and "benchmarks/results" in p.read_text(encoding="utf-8", errors="ignore")]
    assert not hits, hits
