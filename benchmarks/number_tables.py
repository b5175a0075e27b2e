"""Numbers in results tables against phones, cards, streets and postcodes in contact tables.

Two generated sets (Faker, seeded; ``--seed``):

* **results tables**: golf rounds ("Amelia Okafor ( Kenya ) 69 71 70 68 278"), tennis and
  squash sets ("6-3 4-6 7-6"), cricket fall-of-wicket lists ("1-12 2-45 3-101"), football
  results between towns ("Leeds 2 Bristol 1"), league standings ("Leeds 38 21 9 8 67 41 72"),
  financial tables ("Net sales 1,204.5 1,187.2 2.4"), each document a results page of several
  lines. Every number there is no personal data: a replaced number token is a false replacement.
* **contact tables**: CSV rows (``name,phone,email,card,street,city,postcode``), Markdown
  tables and labelled contact blocks ("Phone:", "Mobile:", "Address:") with Faker's names,
  phone numbers, card numbers (Luhn-valid), street addresses, towns and postcodes of five
  locales (en_US, en_GB, de_DE, fr_FR, nl_NL). Recall per field = values whose every word token is
  replaced ÷ values.

Systems: the text stage (``Sanitizer("PII", detector=...)``: ``library-model``, ``library``) and
presidio's defaults on spaCy small. Each set is one batch.

    nice -n 10 .venv/bin/python benchmarks/number_tables.py --out benchmarks/results/text/number_tables.md
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _shared import presidio_defaults

_TOKEN = re.compile(r"\w+")
LOCALES = ("en_US", "en_GB", "de_DE", "fr_FR", "nl_NL")
FIELDS = ("name", "phone", "email", "card", "street", "city", "postcode")


def _faker(locale: str, seed: int) -> Any:
    from faker import Faker

    fake = Faker(locale)
    fake.seed_instance(seed)
    return fake


def results_pages(n: int, seed: int) -> list[str]:
    """``n`` results pages of generated sports and financial tables."""
    rng, fake = random.Random(seed), _faker("en_GB", seed)
    towns = [fake.city() for _ in range(60)]

    def golf() -> str:
        rounds = [rng.randint(64, 78) for _ in range(4)]
        return f"{fake.name()} ( {fake.country()} ) {' '.join(map(str, rounds))} {sum(rounds)}"

    def sets() -> str:
        return " ".join(rng.choice(["6-3", "6-4", "7-5", "7-6", "3-6", "4-6", "6-1", "6-2", "15-9", "11-15"])
                        for _ in range(rng.randint(2, 5)))

    def wickets() -> str:
        runs = sorted(rng.sample(range(3, 320), 6))
        return "Fall of wickets: " + " ".join(f"{i}-{r}" for i, r in enumerate(runs, 1))

    def football() -> str:
        a, b = rng.sample(towns, 2)
        return f"{a} {rng.randint(0, 5)} {b} {rng.randint(0, 5)}"

    def standings() -> str:
        w, d, loss = rng.randint(5, 25), rng.randint(2, 10), rng.randint(2, 15)
        return f"{rng.choice(towns)} {w + d + loss} {w} {d} {loss} {rng.randint(20, 80)} {rng.randint(20, 80)} {3 * w + d}"

    def finance() -> str:
        label = rng.choice(["Net sales", "Operating profit", "Revenue", "Net loss", "Total assets", "M1", "M2"])
        return f"{label} {rng.uniform(10, 2000):,.1f} {rng.uniform(10, 2000):,.1f} {rng.uniform(-5, 5):.1f}"

    kinds = {"GOLF": golf, "TENNIS": lambda: f"{fake.name()} beat {fake.name()} {sets()}", "CRICKET": wickets,
             "SOCCER": football, "STANDINGS": standings, "RESULTS": finance}
    pages = []
    for _ in range(n):
        kind = rng.choice(sorted(kinds))
        pages.append(f"{kind} - RESULTS\n" + "\n".join(kinds[kind]() for _ in range(rng.randint(4, 8))))
    return pages


def contact_tables(n: int, seed: int) -> tuple[list[str], list[list[tuple[str, str]]]]:
    """``n`` contact documents (CSV, Markdown table or labelled block, 3-6 people each) and the
    ``(field, value)`` pairs each holds."""
    rng = random.Random(seed)
    docs, truths = [], []
    for i in range(n):
        fake = _faker(LOCALES[i % len(LOCALES)], seed + i)
        people = [{"name": fake.name(), "phone": fake.phone_number(), "email": fake.email(),
                   "card": fake.credit_card_number(), "street": fake.street_address().replace("\n", " "),
                   "city": fake.city(), "postcode": fake.postcode()} for _ in range(rng.randint(3, 6))]
        shape = rng.choice(("csv", "markdown", "block"))
        if shape == "csv":
            text = ",".join(FIELDS) + "\n" + "\n".join(",".join(p[f] for f in FIELDS) for p in people)
        elif shape == "markdown":
            text = "| " + " | ".join(FIELDS) + " |\n|" + "---|" * len(FIELDS) + "\n" + \
                "\n".join("| " + " | ".join(p[f] for f in FIELDS) + " |" for p in people)
        else:
            text = "\n\n".join(f"Name: {p['name']}\nPhone: {p['phone']}\nEmail: {p['email']}\nCard: {p['card']}\n"
                               f"Address: {p['street']}\n{p['postcode']} {p['city']}" for p in people)
        docs.append(text)
        truths.append([(f, p[f]) for p in people for f in FIELDS])
    return docs, truths


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


SYSTEMS: dict[str, Callable[[], Spans]] = {"library-model": lambda: library("model"),
                                            "library": lambda: library("rules"), "presidio": lambda: presidio}


def _covered(a: int, b: int, spans: list[tuple[int, int]]) -> bool:
    return any(s < b and a < e for s, e in spans)


def score_results(texts: list[str], spans: list[list[tuple[int, int]]]) -> dict[str, Any]:
    """Number tokens replaced (all false) of number tokens; the kinds of pages they were on."""
    numbers = replaced = 0
    pages: Counter[str] = Counter()
    for text, found in zip(texts, spans, strict=True):
        for m in _TOKEN.finditer(text):
            if m.group(0).isdigit():
                numbers += 1
                if _covered(m.start(), m.end(), found):
                    replaced += 1
                    pages[text.split(" ", 1)[0]] += 1
    return {"numbers": numbers, "replaced": replaced, "by_page": dict(pages.most_common())}


def score_contacts(texts: list[str], truths: list[list[tuple[str, str]]],
                   spans: list[list[tuple[int, int]]]) -> dict[str, Any]:
    """Per field: values whose every word token is replaced ÷ values."""
    hit: Counter[str] = Counter()
    total: Counter[str] = Counter()
    for text, truth, found in zip(texts, truths, spans, strict=True):
        at = 0
        for field, value in truth:
            start = text.find(value, at)
            if start < 0:
                continue
            at = start + len(value)
            tokens = [(start + m.start(), start + m.end()) for m in _TOKEN.finditer(value)]
            total[field] += 1
            hit[field] += all(_covered(a, b, found) for a, b in tokens)
    return {f: round(hit[f] / total[f], 3) for f in FIELDS if total[f]}


def report(rows: dict[str, Any], command: str, seconds: float, n: int) -> str:
    lines = ["# Numbers in results tables, and contact tables", "", f"Command: `{command}`; wall {seconds:.0f} s.", "",
             f"{n} generated results pages and {n} contact documents (see the docstring of "
             "`benchmarks/number_tables.py`). Results pages: number tokens replaced (every one a false replacement). "
             "Contact tables: share of values with every word token replaced, per field.", "",
             "| system | results: numbers replaced | " + " | ".join(f"contacts: {f}" for f in FIELDS) + " |",
             "|---|---|" + "---|" * len(FIELDS)]
    for system, r in rows.items():
        res, con = r["results"], r["contacts"]
        lines.append(f"| {system} | {res['replaced']} / {res['numbers']} | "
                     + " | ".join(f"{con.get(f, float('nan')):.3f}" for f in FIELDS) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--systems", default="library-model,library,presidio")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    pages = results_pages(args.n, args.seed)
    docs, truths = contact_tables(args.n, args.seed)
    t0 = time.time()
    rows = {}
    for name in args.systems.split(","):
        find = SYSTEMS[name]()
        rows[name] = {"results": score_results(pages, find(pages)), "contacts": score_contacts(docs, truths, find(docs))}
    command = ".venv/bin/python benchmarks/number_tables.py " + " ".join(sys.argv[1:])
    text = report(rows, command, time.time() - t0, args.n)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, "utf-8")
        out.with_suffix(".json").write_text(json.dumps({"command": command, "seed": args.seed, "n": args.n,
                                                        "rows": rows}) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
