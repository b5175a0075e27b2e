"""The README works verbatim, stays short, and the text users read carries no development log.

The ```python blocks of ``README.md`` run as a new user runs them: in order, each in a fresh
interpreter, in one empty temporary working directory, and then all of them again in the same
directory (a second run must not collide with what the first one wrote). ``PRIVATE_VECTORS_KEY``
is unset and the home folder is a temporary one (the quick start keeps its key there, apart from
the stores); a failure names the block's line and the run. ```bash blocks are the set-up commands
CI runs, not run here, except that the audit command must name a store folder, collection and raw
file that the blocks wrote, and the key kept in the home folder must open that store.

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


def run_block(block: Block, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a Python block in a fresh interpreter in ``cwd``, without the key variable (and with
    ``home`` as the home folder, when given)."""
    env = {k: v for k, v in os.environ.items() if k != "PRIVATE_VECTORS_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")] if p)
    if home is not None:
        env["HOME"] = str(home)
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


def run_in_order(blocks: list[Block], work: Path, home: Path, rounds: int = 2) -> None:
    """Run ``blocks`` in order in ``work``, ``rounds`` times, failing on the first block that fails."""
    for round_ in range(1, rounds + 1):
        for block in blocks:
            res = run_block(block, work, home)
            assert res.returncode == 0, (f"README.md line {block.line}, run {round_} of {rounds} in one folder: the "
                                         f"block failed\n{block.code}\n--- stderr ---\n{res.stderr[-4000:]}")


_AUDIT = re.compile(r"private-vectors audit (?P<store>\S+)(?P<args>[^\n]*)")


def audit_command() -> tuple[str, dict[str, str]]:
    """The store folder and the options of the README's ``private-vectors audit`` command."""
    m = _AUDIT.search(README_TEXT)
    assert m, "README.md has no private-vectors audit command"
    return m.group("store"), dict(re.findall(r"--([\w-]+) (\S+)", m.group("args")))


def test_readme_runs_top_to_bottom_twice_in_one_folder(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    run_in_order(PYTHON_BLOCKS, work, home)
    store, options = audit_command()
    assert (work / store).is_dir(), f"the audit command names {store!r}, which no block wrote"
    assert (work / options["raw"]).is_file(), f"the audit command reads {options['raw']!r}, which no block wrote"
    key_files = [p for p in home.rglob("*") if p.is_file()]
    assert len(key_files) == 1 and not any(p.is_relative_to(work) for p in key_files)
    check = Block("python", 0, (
        "import chromadb, pathlib, sys\nfrom private_vectors.chroma import open_collection\n"
        f"key = pathlib.Path({str(key_files[0])!r}).read_text()\n"
        f"col = open_collection(chromadb.PersistentClient(path={store!r}), {options['collection']!r}, key=key)\n"
        "ids = col.get(include=[])['ids']\n"
        f"raw = [l for l in open({options['raw']!r}) if l.strip()]\n"
        "print(len(ids), len(raw))\n"))
    res = run_block(check, work, home)
    assert res.returncode == 0, res.stderr[-3000:]
    stored, raw = map(int, res.stdout.split())
    assert stored >= raw >= 10  # the audit refuses fewer than ten documents


@pytest.mark.slow
def test_the_readme_audit_command_runs_on_what_the_blocks_wrote(tmp_path):
    """The audit command, as written (its key read from the file the quick start made)."""
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    run_in_order(PYTHON_BLOCKS, work, home, rounds=1)
    line = next(x for x in README_TEXT.splitlines() if "private-vectors audit" in x and not x.startswith("#"))
    env = {k: v for k, v in os.environ.items() if k != "PRIVATE_VECTORS_KEY"}
    env.update(HOME=str(home), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(p for p in [str(ROOT / "src"), os.environ.get("PYTHONPATH", "")] if p))
    res = subprocess.run(["bash", "-c", line + " --no-progress"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=BLOCK_TIMEOUT)
    assert res.returncode == 0, res.stderr[-3000:]
    _, options = audit_command()
    assert (work / options["out"] / "audit.md").is_file()


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
