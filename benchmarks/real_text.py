"""Names and places in real news, social-media and court text: token recall per gold label and precision.

Corpora (two-column ``token tag`` files, IOB2):

* ``news``: the CoNLL-2003 English validation split (``pii/news/conll2003_valid.txt`` under
  ``--data``; Reuters news of 1996; never its test split). Its 216 documents are split in file
  order: the ``first`` half may be used to choose settings, the ``second`` half (the default) is
  reported. A document is its sentences, tokens joined by spaces, one sentence per line; the
  documents of a half are one batch.
* ``wnut17-dev``: the WNUT-17 emerging-entities development set (``emerging.dev.conll`` of
  ``leondz/emerging_entities_17``, CC BY 4.0; read from ``--sources``, a folder holding
  ``leondz+emerging_entities_17/`` as a checkout or a bare mirror under ``repo/``). Each sentence
  is a document; all of them one batch. ``wnut17-train`` (``wnut17train.conll``, the same
  repository): its training split, read the same way, where span rules may be tuned (the learned
  tagger trained on it, so its own recall there is no measure).
* ``btc-dev``: the Broad Twitter Corpus development split (``train_dev_test_conll/btc.dev`` of
  ``GateNLP/broad_twitter_corpus``, CC BY 4.0, the second half of its section H; the tagger trains
  on ``btc.train`` only, never on ``btc.test``), read like WNUT-17. Its tweets keep hashtags and
  handles whole (``#Ebola``, ``@SportsCenter``), some of them names, places or organisations.
* ``tab-dev``: the 21 court judgments of the Text Anonymization Benchmark's dev split
  (``pii/tab/tab_train_dev.jsonl`` under ``--data``; never its test file), each a document, all
  one batch; the gold entities are its DIRECT and QUASI identifiers by entity type (``PERSON``,
  ``LOC``, ``DATETIME``, ...), as ``benchmarks/detector_model.py`` scores them, so a recall per
  label and the precision here are that script's TAB dev row.

Scoring is by ``\\w+`` word token. Recall per gold label = gold tokens of that label that the system
replaced ÷ gold tokens of that label. Precision = replaced tokens inside any gold entity (every
label counted, MISC and products included) ÷ all replaced tokens. Tags (``#`` or ``@`` joined to a
word token): of the tags inside a gold entity, the share replaced (tag recall), and of the replaced
tags, the share inside one (tag precision). Systems: the library's text stage
(``library``: ``Sanitizer(concept)``, the default detector, the spans ``apply`` replaces over the batch;
``library-model``: with ``detector="model"`` named, the learned tagger added; ``--tagger``: read from
another weight folder; ``library-rules``: with ``detector="rules"``, no tagger), presidio's defaults on spaCy
small (every recognizer, threshold 0), and the learned tagger alone (every label it reports).
``--case lower`` or ``upper`` scores every corpus in that letter case.

    .venv/bin/python benchmarks/real_text.py --data ../shared/data --sources ../.mirror \\
        --out benchmarks/results/text/real_text.md
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _shared import model_sanitizer, presidio_defaults

NEWS = "pii/news/conll2003_valid.txt"
TAB = "pii/tab/tab_train_dev.jsonl"
WNUT_DEV = {"repository": "leondz/emerging_entities_17", "commit": "e52a2d2a71ac1a051ca2d532eef28653c5c02603",
            "path": "emerging.dev.conll", "sha256": "e053b752b8155113ca66e7db08af5f2f5f43ab993694e4774f1ec5bad42312d8"}
WNUT_TRAIN = {**WNUT_DEV, "path": "wnut17train.conll",
              "sha256": "731820e13f71af324c6b55a1575ec2ce59fbaa2a0806f8f0400b98d56cd6a7a5"}
BTC_DEV = {"repository": "GateNLP/broad_twitter_corpus", "commit": "0c45ef7b1924a6b8115bceab388781590b1b553a",
           "path": "train_dev_test_conll/btc.dev",
           "sha256": "9f7d33bcd195cecf9767357a5f1fe0ba879af6c55ebb68b8e846bff23c4e7fa5"}
_TAG = re.compile(r"(?<![\w#@])[#@]\w+")


def word_tokens(text: str) -> list[tuple[int, int]]:
    """(start, end) of every ``\\w+`` word token."""
    return [(m.start(), m.end()) for m in re.finditer(r"\w+", text)]


def covered(tokens: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[bool]:
    """For each token: does any span overlap it."""
    return [any(s < b and a < e for s, e in spans) for a, b in tokens]


@dataclass(frozen=True)
class Document:
    """A text and its gold entities ``(start, end, label)``."""

    text: str
    entities: tuple[tuple[int, int, str], ...]


def parse(text: str) -> list[list[list[tuple[str, str]]]]:
    """Documents (split at ``-DOCSTART-``) of sentences of ``(token, tag)``."""
    docs: list[list[list[tuple[str, str]]]] = [[]]
    sentence: list[tuple[str, str]] = []
    for line in [*text.splitlines(), ""]:
        parts = line.split()
        if parts and parts[0] == "-DOCSTART-":
            if sentence:
                docs[-1].append(sentence)
            sentence = []
            if docs[-1]:
                docs.append([])
            continue
        if not parts:
            if sentence:
                docs[-1].append(sentence)
            sentence = []
            continue
        if len(parts) >= 2:
            sentence.append((parts[0], parts[-1]))
    return [d for d in docs if d]


def document(sentences: Sequence[Sequence[tuple[str, str]]]) -> Document:
    """One text (tokens joined by spaces, a sentence per line) and its entity spans."""
    text, entities, current = "", [], None
    for s_i, sentence in enumerate(sentences):
        if s_i:
            text += "\n"
        for t_i, (tok, tag) in enumerate(sentence):
            if t_i:
                text += " "
            start = len(text)
            text += tok
            label = tag[2:] if tag != "O" else None
            if label and current and current[2] == label and tag.startswith("I-"):
                current[1] = len(text)
                continue
            if current:
                entities.append(tuple(current))
            current = [start, len(text), label] if label else None
        if current:
            entities.append(tuple(current))
            current = None
    return Document(text, tuple(entities))  # type: ignore[arg-type]


def recased(doc: Document, case: str) -> Document:
    """``doc`` in lower or upper case; a letter whose other case is more than one character ("ß")
    stays as written, so the gold spans keep their offsets."""
    def one(c: str) -> str:
        d = c.lower() if case == "lower" else c.upper()
        return d if len(d) == 1 else c

    return Document("".join(map(one, doc.text)), doc.entities)


def load_news(data: Path, half: str) -> list[Document]:
    """The ``first`` or ``second`` half of the CoNLL-2003 validation documents (file order)."""
    docs = [document(d) for d in parse((data / NEWS).read_text("utf-8"))]
    cut = len(docs) // 2
    return docs[:cut] if half == "first" else docs[cut:]


def load_tab_dev(data: Path) -> list[Document]:
    """TAB's dev judgments with their DIRECT and QUASI identifiers ``(start, end, entity type)``;
    the file holds the train and dev splits only, and only dev is read."""
    rows = [json.loads(x) for x in (data / TAB).read_text("utf-8").splitlines() if x.strip()]
    return [Document(r["text"], tuple((e["start_offset"], e["end_offset"], e["entity_type"]) for e in r["entities"]
                                      if e["identifier_type"] in ("DIRECT", "QUASI")))
            for r in rows if r["metadata"]["provenance"]["dataset_type"] == "dev"]


def read_mirror(root: Path, entry: dict[str, str]) -> str:
    folder = root / entry["repository"].replace("/", "+")
    plain = folder / entry["path"]
    data = plain.read_bytes() if plain.is_file() else subprocess.run(
        ["git", f"--git-dir={folder / 'repo'}", "show", f"{entry['commit']}:{entry['path']}"],
        check=True, capture_output=True).stdout
    got = hashlib.sha256(data).hexdigest()
    if got != entry["sha256"]:
        raise ValueError(f"{entry['repository']}:{entry['path']} has sha256 {got}, expected {entry['sha256']}")
    return data.decode("utf-8")


def load_wnut_dev(sources: Path) -> list[Document]:
    return [document([s]) for d in parse(read_mirror(sources, WNUT_DEV)) for s in d]


def load_wnut_train(sources: Path) -> list[Document]:
    return [document([s]) for d in parse(read_mirror(sources, WNUT_TRAIN)) for s in d]


def load_btc_dev(sources: Path) -> list[Document]:
    return [document([s]) for d in parse(read_mirror(sources, BTC_DEV)) for s in d]


def score(docs: Sequence[Document], masks: Sequence[Sequence[bool]]) -> dict[str, Any]:
    """Token recall per gold label, and precision of the replaced tokens against any gold entity."""
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    masked = inside = 0
    tags: Counter[str] = Counter()
    for doc, mask in zip(docs, masks, strict=True):
        for (a, b), m in zip(word_tokens(doc.text), mask, strict=True):
            if a and doc.text[a - 1] in "#@" and _TAG.match(doc.text, a - 1):
                gold = any(s < b and a < e for s, e, _ in doc.entities)
                tags["gold"] += gold
                tags["gold_replaced"] += gold and m
                tags["replaced"] += m
                tags["replaced_gold"] += gold and m
            label = next((lab for s, e, lab in doc.entities if s < b and a < e), None)
            masked += m
            if label is None:
                continue
            inside += m
            total[label] += 1
            hit[label] += m
    return {"recall": {k: hit[k] / total[k] for k in sorted(total)}, "gold_tokens": dict(sorted(total.items())),
            "precision": inside / masked if masked else float("nan"), "replaced_tokens": masked,
            "tags": dict(tags), "tag_recall": tags["gold_replaced"] / tags["gold"] if tags["gold"] else float("nan"),
            "tag_precision": tags["replaced_gold"] / tags["replaced"] if tags["replaced"] else float("nan")}


MaskFn = Callable[[list[str]], list[list[bool]]]


def library(concept: str, **kwargs: Any) -> MaskFn:
    from private_vectors.text import Sanitizer

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return mask_fn(Sanitizer(concept, timeout=None, **kwargs))


def mask_fn(sanitizer: Any) -> MaskFn:
    """The word tokens each text's spans (``sanitizer.document_spans`` over the batch) cover."""

    def run(texts: list[str]) -> list[list[bool]]:
        spans = sanitizer.document_spans(texts)
        return [covered(word_tokens(t), [(s.start, s.end) for s in sp]) for t, sp in zip(texts, spans, strict=True)]
    return run


def presidio(texts: list[str]) -> list[list[bool]]:
    analyzer, _ = presidio_defaults()
    return [covered(word_tokens(t), [(r.start, r.end) for r in analyzer.analyze(text=t, language="en")])
            for t in texts]


def tagger(texts: list[str]) -> list[list[bool]]:
    from private_vectors.text.recognizers.tagger import TaggerRecognizer

    model = TaggerRecognizer()
    return [covered(word_tokens(t), [(s.start, s.end) for s in sp]) for t, sp in zip(texts, model.spans(texts),
                                                                                       strict=True)]


SYSTEMS: dict[str, MaskFn | Callable[[], MaskFn]] = {
    "library": lambda: library("PII"),
    "library-model": lambda: library("PII", detector="model"),
    "library-rules": lambda: library("PII", detector="rules"),
    "presidio": lambda: presidio,
    "tagger": lambda: tagger,
}


def fmt(x: float) -> str:
    return "n/a" if x != x else f"{100 * x:.1f}"


def table(name: str, docs: Sequence[Document], rows: list[dict[str, Any]]) -> list[str]:
    labels = list(rows[0]["scores"]["gold_tokens"]) if rows else []
    gold = rows[0]["scores"]["gold_tokens"] if rows else {}
    lines = [f"### {name}: {len(docs)} documents, gold tokens " + ", ".join(f"{k} {v}" for k, v in gold.items()), "",
             "| system | " + " | ".join(f"{k} recall" for k in labels)
             + " | precision | replaced tokens | tag recall | tag precision (replaced tags) | s |",
             "|---|" + "---|" * (len(labels) + 5)]
    for r in rows:
        s = r["scores"]
        lines.append(f"| {r['system']} | " + " | ".join(fmt(s["recall"][k]) for k in labels)
                     + f" | {fmt(s['precision'])} | {s['replaced_tokens']} | {fmt(s['tag_recall'])}"
                     f" | {fmt(s['tag_precision'])} ({s['tags'].get('replaced', 0)}) | {r['seconds']:.0f} |")
    return [*lines, ""]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="../shared/data")
    p.add_argument("--sources", default="../.mirror", help="folder with leondz+emerging_entities_17 (WNUT-17) "
                   "and GateNLP+broad_twitter_corpus (BTC)")
    p.add_argument("--corpora", default="news,wnut17-dev", help="comma-separated: news, wnut17-dev, wnut17-train, btc-dev, tab-dev")
    p.add_argument("--half", default="second", choices=("first", "second"), help="news: which half of the documents")
    p.add_argument("--systems", default="library,library-model,presidio,tagger")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--rules-off", default=None, help="library, library-model, library-rules: comma-separated rules_off entries of "
                   "the text stage")
    p.add_argument("--tagger", default=None, help="library-model: the learned tagger from this weight folder "
                   "(written by scripts/train_tagger.py) instead of the shipped one")
    p.add_argument("--case", default="as-written", choices=("as-written", "lower", "upper"),
                   help="score the texts in this letter case (each letter whose case form is one letter)")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    off = [r for r in args.rules_off.split(",") if r] if args.rules_off is not None else None
    if off is not None:
        SYSTEMS["library"] = lambda: library("PII", rules_off=off)
        SYSTEMS["library-rules"] = lambda: library("PII", detector="rules", rules_off=off)
    if off is not None or args.tagger is not None:
        SYSTEMS["library-model"] = lambda: mask_fn(model_sanitizer("PII", args.tagger, timeout=None, rules_off=off))
    command = ".venv/bin/python benchmarks/real_text.py " + " ".join(sys.argv[1:])
    header = ["# Names and places in real news, social-media and court text", "",
              f"Command: `{command}`.", "",
              "Token recall per gold label; precision = replaced word tokens inside any gold entity (every label) "
              "÷ all replaced word tokens. See the docstring of `benchmarks/real_text.py`.", ""]
    lines: list[str] = []
    results: dict[str, Any] = {"command": command}
    for corpus in args.corpora.split(","):
        if corpus == "news":
            docs, title = load_news(Path(args.data), args.half), f"news: CoNLL-2003 validation, {args.half} half"
        elif corpus == "wnut17-dev":
            docs, title = load_wnut_dev(Path(args.sources)), "social media: WNUT-17 dev"
        elif corpus == "wnut17-train":
            docs, title = load_wnut_train(Path(args.sources)), "social media: WNUT-17 train"
        elif corpus == "btc-dev":
            docs, title = load_btc_dev(Path(args.sources)), "social media: Broad Twitter Corpus dev"
        elif corpus == "tab-dev":
            docs, title = load_tab_dev(Path(args.data)), "court judgments: TAB dev (DIRECT and QUASI identifiers)"
        else:
            raise SystemExit(f"unknown corpus {corpus!r}")
        docs = docs[: args.limit] if args.limit else docs
        if args.case != "as-written":
            docs, title = [recased(d, args.case) for d in docs], f"{title}, in {args.case} case"
        texts = [d.text for d in docs]
        rows = []
        for name in args.systems.split(","):
            fn = SYSTEMS[name]()  # type: ignore[operator]
            t0 = time.perf_counter()
            masks = fn(texts)
            rows.append({"system": name, "scores": score(docs, masks), "seconds": time.perf_counter() - t0})
        results[corpus] = rows
        lines += table(title, docs, rows)
    text = "\n".join(header + lines)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text + "\n", "utf-8")
        out.with_suffix(".json").write_text(json.dumps(results, indent=1) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
