"""The README works verbatim, stays short, and the text users read carries no development log.

Every ```python block of ``README.md`` runs in a fresh interpreter in an empty temporary working
directory, with ``PRIVATE_VECTORS_KEY`` unset (a block that needs a key sets it itself); a
failure names the block's line. ```bash blocks are the set-up commands CI runs, not run here.

Commit hashes: a 7–40 character hexadecimal word outside code blocks that names an object of
this repository (``git cat-file -e``) is a commit hash; so is any such word that mixes digits and
letters (a hash of another repository, or of a commit not fetched), which ordinary prose never
does. Code blocks are exempt: keys, digests and ids in examples are not commits. Issue
references: "issue 12", "issues 3 and 4", "#12".
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MAX_LINES = 300
BLOCK_TIMEOUT = 600

_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_HEX = re.compile(r"\b[0-9a-f]{7,40}\b")
_ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![\w&/])#\d+\b", re.IGNORECASE)


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, first code line (1-based) and code."""

    lang: str
    line: int
    code: str


def code_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, in order."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.group(1), m.group(2), m.group(3).lower()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        blocks.append(Block(lang, start + 1, "\n".join(body) + "\n"))
        i += 1
    return blocks


def prose(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a Markdown text outside fenced code blocks, inline code removed."""
    out, fence = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if m and (fence is None or line.strip().startswith(fence)):
            fence = m.group(2) if fence is None else None
            continue
        if fence is None:
            out.append((n, re.sub(r"`[^`]*`", "", line)))
    return out


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a Python block in a fresh interpreter in ``cwd``, without the key variable."""
    env = {k: v for k, v in os.environ.items() if k != "PRIVATE_VECTORS_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")] if p)
    return subprocess.run([sys.executable, "-c", block.code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT)


def _known_objects(words: set[str]) -> set[str]:
    """The words that name an object of this repository (empty when git is not available)."""
    if not words or not (ROOT / ".git").exists():
        return set()
    try:
        res = subprocess.run(["git", "cat-file", "--batch-check"], cwd=ROOT, input="\n".join(sorted(words)) + "\n",
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.split()[0] for line in res.stdout.splitlines() if line and not line.endswith("missing")}


def development_log_hits(path: Path) -> list[str]:
    """Commit hashes and issue references in the prose of a Markdown file, as 'file:line: word'."""
    rows = prose(path.read_text(encoding="utf-8"))
    words = {w for _, line in rows for w in _HEX.findall(line)}
    known = _known_objects(words)
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.name
    hits = []
    for n, line in rows:
        for w in _HEX.findall(line):
            mixed = re.search(r"\d", w) and re.search(r"[a-f]", w)
            if w in known or mixed:
                hits.append(f"{name}:{n}: commit hash {w!r}")
        hits += [f"{name}:{n}: issue reference {m.group(0)!r}" for m in _ISSUE.finditer(line)]
    return hits


README_TEXT = README.read_text(encoding="utf-8") if README.is_file() else ""
PYTHON_BLOCKS = [b for b in code_blocks(README_TEXT) if b.lang in ("python", "py")]


# -- the README ---------------------------------------------------------------------------------
def test_readme_is_at_most_300_lines():
    assert README.is_file()
    assert len(README_TEXT.splitlines()) <= MAX_LINES


def test_readme_has_no_commit_hash_or_issue_reference():
    assert not development_log_hits(README)


USER_PAGES = [ROOT / "CHANGELOG.md", ROOT / "benchmarks" / "README.md", ROOT / "benchmarks" / "FINDINGS.md"]


def test_docs_have_no_commit_hash_or_issue_reference():
    pages = sorted(DOCS.rglob("*.md")) + [p for p in USER_PAGES if p.is_file()]
    hits = [h for page in pages for h in development_log_hits(page)]
    assert not hits, "\n".join(hits)


def test_readme_has_python_blocks_and_bash_setup():
    assert PYTHON_BLOCKS, "no ```python block in README.md"
    assert any(b.lang in ("bash", "sh", "shell") for b in code_blocks(README_TEXT))


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[f"README.md:{b.line}" for b in PYTHON_BLOCKS])
def test_readme_python_block_runs(block, tmp_path):
    res = run_block(block, tmp_path)
    assert res.returncode == 0, (f"README.md line {block.line}: the block failed\n{block.code}\n--- stderr ---\n"
                                 f"{res.stderr[-4000:]}")


# -- the harness --------------------------------------------------------------------------------
SAMPLE = """# Title

```bash
pip install private-vectors
```

Text with `0123abc` inline.

```python
print("ok")
```

  ```python
  import os
  assert "PRIVATE_VECTORS_KEY" not in os.environ
  ```

```python
raise SystemExit("broken")
```
"""


def test_code_blocks_are_found_with_their_line_numbers():
    blocks = code_blocks(SAMPLE)
    assert [(b.lang, b.line) for b in blocks] == [("bash", 4), ("python", 10), ("python", 14), ("python", 19)]
    assert blocks[2].code == 'import os\nassert "PRIVATE_VECTORS_KEY" not in os.environ\n'


def test_blocks_run_in_a_fresh_directory_without_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVATE_VECTORS_KEY", "a-key-that-must-not-reach-the-block-0123")
    ok, no_key, broken = code_blocks(SAMPLE)[1:]
    assert run_block(ok, tmp_path).stdout == "ok\n"
    assert run_block(no_key, tmp_path).returncode == 0
    res = run_block(broken, tmp_path)
    assert res.returncode != 0 and "broken" in res.stderr


def test_development_log_detection(tmp_path):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    page = tmp_path / "probe.md"
    lines = [
        "# Probe", "Fixed in issue 12 and in #7.", "See abcdef1 and 1234abc.",
        f"Also {head[:12] or 'deadbeef0'}.", "Colours #fff, a decade, deadbeef words, 1234567 items.",
        "```", "key = 'abc123def456'  # in code: exempt", "```",
    ]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
    hits = development_log_hits(page)
    text = "\n".join(hits)
    assert "issue reference 'issue 12'" in text and "issue reference '#7'" in text
    assert "'1234abc'" in text and ":3:" in text
    if head:
        assert f"'{head[:12]}'" in text
    assert "decade" not in text and "1234567" not in text and "#fff" not in text and "abc123def456" not in text


def test_readme_links_resolve():
    """Every relative link of the README names a file of the repository."""
    missing = []
    for n, line in prose(README_TEXT):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
            if "://" not in target and not target.startswith("mailto:") and not (ROOT / target).exists():
                missing.append(f"README.md:{n}: {target}")
    assert not missing, "\n".join(missing)
