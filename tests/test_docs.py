"""The docs site builds with ``mkdocs build --strict`` (broken references fail), and the paths
the guides cite exist."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("mkdocstrings") is None,
                    reason="mkdocs / mkdocstrings not installed (the dev extra: pip install -e '.[dev]')")
def test_mkdocs_build_strict(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}
    res = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
                          "-d", str(tmp_path / "site")], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "embedding" / "index.html").is_file()
    html = (tmp_path / "site" / "api" / "embedding" / "index.html").read_text(encoding="utf-8")
    assert "prepare_documents" in html  # the reference is rendered from the docstrings


def test_cited_repository_paths_exist():
    cited = {}
    for page in DOCS.rglob("*.md"):
        for path in re.findall(r"`((?:benchmarks|src|tests|scripts)/[^`\s]+)`", page.read_text(encoding="utf-8")):
            cited.setdefault(path.rstrip("/.,"), page.relative_to(ROOT).as_posix())
    missing = {p: page for p, page in cited.items() if not (ROOT / p).exists()}
    assert not missing, f"paths cited in docs/ that do not exist: {missing}"


def test_every_guide_is_in_the_nav_and_absent_ones_are_dropped(tmp_path):
    hook = load_script("scripts/mkdocs_guides_nav.py", "guides_nav")
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "listed.md").write_text("# Listed\n", encoding="utf-8")
    (tmp_path / "guides" / "new-one.md").write_text("# A new guide\n", encoding="utf-8")
    nav = [{"Home": "index.md"}, {"Guides": [{"Absent": "guides/absent.md"}, {"Listed": "guides/listed.md"}]}]
    out = hook.on_config({"docs_dir": str(tmp_path), "nav": nav})
    assert out["nav"][1]["Guides"] == [{"Listed": "guides/listed.md"}, {"A new guide": "guides/new-one.md"}]
    for guide in (DOCS / "guides").glob("*.md"):
        assert guide.read_text(encoding="utf-8").startswith("# "), f"{guide.name} has no title line"


def test_benchmark_pages_link_to_existing_results():
    """Every relative link of benchmarks/README.md and benchmarks/FINDINGS.md names a file or folder
    that exists, and every benchmark script is described in benchmarks/README.md."""
    bench = ROOT / "benchmarks"
    missing = []
    for name in ("README.md", "FINDINGS.md"):
        text = (bench / name).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)#\s]+)\)", text):
            if "://" not in target and not (bench / target).exists():
                missing.append(f"{name}: {target}")
    assert not missing, missing
    readme = (bench / "README.md").read_text(encoding="utf-8")
    undocumented = [p.name for p in bench.glob("*.py") if f"`{p.name}`" not in readme]
    assert not undocumented, f"benchmarks not described in benchmarks/README.md: {undocumented}"


def test_findings_is_one_short_page() -> None:
    """benchmarks/FINDINGS.md: at most 15 KB, one table row per question, each row at most 400
    characters, with a link to its result and a command (or where the command is)."""
    text = (ROOT / "benchmarks" / "FINDINGS.md").read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 15_000
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| question ")]
    assert len(rows) >= 20
    too_long = [row[:60] for row in rows if len(row) > 400]
    assert not too_long, too_long
    for row in rows:
        cells = row.strip("|").split(" | ")
        assert len(cells) == 3, row[:60]
        assert "](results/" in cells[2] and ("`" in cells[2] or "in the file" in cells[2]), row[:60]
    questions = [row.split(" | ")[0] for row in rows]
    assert len(questions) == len(set(questions)), "one row per question"

