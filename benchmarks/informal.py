"""False replacements on informal text with no personal data: lower-case chat and tickets, short non-English messages.

The probe (``benchmarks/configs/informal_probe.json``, hand-written) holds phrases whose ordinary
words are also given names, surnames or places ("can you check the bill for march", "grant access
to the shared drive", "prices rose again", "reading the manual did not help"), chat and ticket
templates, and short messages in eleven languages other than English; nothing in it is personal
data, so every replaced word token is a false replacement. Each entry belongs to one part:
``tuning`` (span rules may be chosen on it) or ``report`` (kept frozen, measured only); the parts
share no phrase and no template. ``--messages`` messages per part are drawn (seeded) from the
part's templates and phrases, all in lower case; the non-English messages are used as written.
Each set is one batch, as one ingest.

Rows per system: messages with at least one replacement, replaced word tokens, and the words
replaced most often. Systems: the text stage (``Sanitizer("PII", detector=...)``: ``library``
with ``rules``, ``library-model`` with the learned tagger) and presidio's defaults on spaCy small
(every recognizer, threshold 0).

    nice -n 10 .venv/bin/python benchmarks/informal.py --part report --out benchmarks/results/text/informal.md
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _shared import presidio_defaults

PROBE = Path(__file__).resolve().parent / "configs" / "informal_probe.json"
_TOKEN = re.compile(r"\w+")


def messages(part: str, n: int, seed: int = 0, probe: Path = PROBE) -> dict[str, list[str]]:
    """``{"chat": [...], "non_english": [...]}`` of one part: ``n`` lower-case chat messages drawn
    from the part's templates and phrases, and the part's non-English messages."""
    data = json.loads(probe.read_text("utf-8"))
    rng = random.Random(f"{seed}/{part}")
    phrases, templates = data["phrases"][part], data["templates"][part]
    chat = []
    for _ in range(n):
        a, b = rng.sample(phrases, 2)
        chat.append(rng.choice(templates).format(a=a, b=b).lower())
    return {"chat": chat, "non_english": list(data["non_english"][part])}


Spans = Callable[[list[str]], list[list[tuple[int, int]]]]


def library(detector: str) -> Spans:
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stage = Sanitizer("PII", detector=detector, timeout=None)
    return lambda texts: [[(s.start, s.end) for s in sp] for sp in stage.document_spans(texts)]


def presidio(texts: list[str]) -> list[list[tuple[int, int]]]:
    analyzer, _ = presidio_defaults()
    return [[(r.start, r.end) for r in analyzer.analyze(text=t, language="en")] for t in texts]


SYSTEMS: dict[str, Callable[[], Spans]] = {"library": lambda: library("rules"),
                                            "library-model": lambda: library("model"), "presidio": lambda: presidio}


def score(texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]) -> dict[str, Any]:
    """Messages changed, replaced word tokens (all false: the probe holds no personal data), top words."""
    words: Counter[str] = Counter()
    changed = 0
    for text, found in zip(texts, spans, strict=True):
        hit = [m.group(0).lower() for m in _TOKEN.finditer(text) if any(a < m.end() and m.start() < b for a, b in found)]
        changed += bool(hit)
        words.update(hit)
    return {"messages": len(texts), "changed": changed, "replaced_tokens": sum(words.values()),
            "tokens": sum(len(_TOKEN.findall(t)) for t in texts), "top": words.most_common(12)}


def report(rows: dict[str, dict[str, Any]], command: str, seconds: float) -> str:
    lines = ["# Informal text with no personal data: false replacements", "",
             f"Command: `{command}`; wall {seconds:.0f} s.", "",
             "Every replaced word token is a false replacement (see the docstring of `benchmarks/informal.py`).", ""]
    for kind, title in (("chat", "lower-case chat and tickets"), ("non_english", "short messages in other languages")):
        lines += [f"### {title}", "", "| system | messages changed | replaced tokens (of all) | words replaced most |",
                  "|---|---|---|---|"]
        for system, got in rows.items():
            s = got[kind]
            top = ", ".join(f"{w} {n}" for w, n in s["top"]) or "-"
            lines.append(f"| {system} | {s['changed']} / {s['messages']} | {s['replaced_tokens']} / {s['tokens']} | {top} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--part", default="report", choices=("tuning", "report"))
    p.add_argument("--messages", type=int, default=150)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--systems", default="library-model,library,presidio")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    sets = messages(args.part, args.messages, args.seed)
    t0 = time.time()
    rows = {}
    for name in args.systems.split(","):
        find = SYSTEMS[name]()
        rows[name] = {kind: score(texts, find(texts)) for kind, texts in sets.items()}
    command = ".venv/bin/python benchmarks/informal.py " + " ".join(sys.argv[1:])
    text = report(rows, command, time.time() - t0)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        out.with_suffix(".json").write_text(json.dumps({"command": command, "part": args.part, "seed": args.seed,
                                                        "rows": rows}) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
