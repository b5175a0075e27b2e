"""Quiet model loads, temporary folders removed, skip reasons that name the shared data."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _stderr_of(code: str) -> str:
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stderr


def test_default_model_loads_without_progress_bars():
    pytest.importorskip("sentence_transformers")
    err = _stderr_of("from private_vectors.encoders import load_encoder; load_encoder(None).encode(['hi'])")
    assert "Loading weights" not in err and "it/s]" not in err


@pytest.mark.slow  # 14 s on 2 cores
def test_progress_bars_on_request():
    pytest.importorskip("sentence_transformers")
    err = _stderr_of("from private_vectors.encoders.sentence_transformers import SentenceTransformerEncoder\n"
                     "SentenceTransformerEncoder(show_progress=True, backend='sentence-transformers')")
    assert "Loading weights" in err
    err = _stderr_of("from private_vectors.encoders.sentence_transformers import SentenceTransformerEncoder\n"
                     "SentenceTransformerEncoder(show_progress=True).encode(['hi'])")  # the BERT path's own bar
    assert "Batches" in err and "it/s]" in err


def test_demo_removes_its_temporary_folder():
    before = set(Path(tempfile.gettempdir()).glob("private-vectors-demo-*"))
    res = subprocess.run([sys.executable, "-m", "private_vectors.cli", "demo", "--model", "fake", "--concept", "none"],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stderr[-2000:]
    folder = re.search(r"removed the temporary folder (\S+)", res.stdout)
    assert folder and not Path(folder.group(1)).exists()
    assert set(Path(tempfile.gettempdir()).glob("private-vectors-demo-*")) <= before


def test_data_skip_reasons_name_the_shared_folder():
    """Every test that skips for missing data says where the data is expected."""
    offenders = []
    for path in (ROOT / "tests").glob("test_*.py"):
        for line in path.read_text().splitlines():
            if re.search(r"reason=\"shared data (missing|not present)\"", line):
                offenders.append(f"{path.name}: {line.strip()}")
    assert not offenders, offenders


def test_skip_reasons_name_a_section_that_exists():
    """A skip reason that points to a document's section, ``(<file>: <Section>)``, names a heading
    that file has (a reader following it finds where the data comes from)."""
    offenders = []
    for path in (ROOT / "tests").glob("test_*.py"):
        for doc, section in re.findall(r"\((README\.md|[\w/]+/README\.md|README): ([^)]+)\)", path.read_text()):
            target = ROOT / (doc if doc.endswith(".md") else "README.md")
            headings = {h.strip() for h in re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)}
            if section.strip() not in headings:
                offenders.append(f"{path.name}: {doc}: {section}")
    assert not offenders, offenders


def test_pyproject_licence_is_an_spdx_string():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^license = "Apache-2.0"$', text, re.M)
    assert 'requires = ["setuptools>=77"' in text
    assert os.path.isfile(ROOT / "pyproject.toml")


def test_no_virtual_environment_or_symlink_is_tracked():
    """A worktree's ``.venv`` link to a shared environment is ignored (``.venv`` without a slash
    also matches a symlink) and never committed: checking out a commit that tracks it replaces
    the ignored environment folder where it lands."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    res = subprocess.run(["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        pytest.skip("git is not available")
    links = [line.split("\t", 1)[1] for line in res.stdout.splitlines() if line.startswith("120000 ")]
    assert not links, f"tracked symlinks: {links}"
    ignored = subprocess.run(["git", "check-ignore", "--no-index", ".venv", ".venvs/py3.13"], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert ignored.stdout.split() == [".venv", ".venvs/py3.13"]
