"""MkDocs hooks for the docs site (``hooks:`` in ``mkdocs.yml``).

- The "Guides" section of the nav follows ``docs/guides/``: guides are written by several
  people and land one by one, so an entry whose file does not exist yet is dropped and a guide
  that is not listed is appended (by its title).
- A guide may link to a repository file outside ``docs/`` (a benchmark result:
  ``[table](../../benchmarks/results/x.md)``). Such a link is checked here: a missing file fails
  the strict build; an existing one becomes a link into the repository when ``repo_url`` is set,
  else the path in code font.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem.replace("-", " ").capitalize()


def on_config(config: Any) -> Any:
    """Drop listed guides that are absent and append present guides that are not listed."""
    docs = Path(config["docs_dir"])
    for section in config["nav"] or []:
        if not isinstance(section, dict) or "Guides" not in section:
            continue
        entries = [e for e in section["Guides"] if (docs / next(iter(e.values()))).is_file()]
        listed = {next(iter(e.values())) for e in entries}
        for path in sorted((docs / "guides").glob("*.md")):
            rel = path.relative_to(docs).as_posix()
            if rel not in listed:
                entries.append({_title(path): rel})
        section["Guides"] = entries
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Check links to repository files outside ``docs/`` and rewrite them."""
    docs = Path(config["docs_dir"]).resolve()
    root = docs.parent
    here = (docs / page.file.src_path).parent
    repo_url = (config.get("repo_url") or "").rstrip("/")

    def rewrite(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if "://" in target or target.startswith(("#", "mailto:")):
            return match.group(0)
        path = (here / target.split("#", 1)[0]).resolve()
        if path.is_relative_to(docs) or not path.is_relative_to(root):
            return match.group(0)
        rel = path.relative_to(root).as_posix()
        if not path.exists():
            raise PluginError(f"{page.file.src_path}: link to a missing repository file {rel!r}")
        return f"[{text}]({repo_url}/blob/main/{rel})" if repo_url else f"{text} (`{rel}`)"

    return _LINK.sub(rewrite, markdown)
