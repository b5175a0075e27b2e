"""The keyed entity index of an earlier revision against this one, in one process, interleaved.

Takes ``EntityIndex.mac`` and ``EntityIndex.spans`` from the source of ``--base`` (a git
revision of this repository), runs the same text stage with them and with this checkout's, one
after the other (the order swapped between the unkeyed and the keyed round), checks that both give
the same stored texts and query texts, and prints the seconds of each side and of the index alone
(``spans`` + ``text_facts``). Texts: the first ``--n`` SciFact abstracts in batches of 20, as many
presidio-research sentences in batches of 50, 100 of those in lower case, then 50 lower-case
queries.

    nice -n 10 .venv/bin/python benchmarks/entity_index_ab.py --base 8386c2c --detector rules --n 120
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import textwrap
import time
from pathlib import Path

import private_vectors.text.entity_index as ei
from private_vectors.text import Sanitizer

KEY = "Vq3xT9pL2mZ8rW4kN7bY1cF6hJ0sD5gA"  # a benchmark's fixed key (never a user's)
INDEX = {"t": 0.0}


def base_methods(rev: str) -> dict:
    src = subprocess.run(["git", "show", f"{rev}:src/private_vectors/text/entity_index.py"],
                         capture_output=True, text=True, check=True).stdout
    out = {}
    for name in ("mac", "spans"):
        m = re.search(rf"\n    def {name}\(.*?(?=\n    def |\n    # --)", src, re.S)
        ns = dict(vars(ei))
        exec(textwrap.dedent(m.group(0)), ns)  # noqa: S102 - this repository's own source at a revision
        out[name] = ns[name]
    return out


def timed(f):
    def g(*a, **k):
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            INDEX["t"] += time.perf_counter() - t
    return g


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True)
    ap.add_argument("--detector", default="rules")
    ap.add_argument("--n", type=int, default=120)
    ap.add_argument("--data", default="../shared/data")
    args = ap.parse_args()
    data = Path(args.data)
    docs = []
    with (data / "retrieval/scifact/corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            docs.append((r.get("title", "") + " " + r["text"]).strip())
            if len(docs) >= args.n:
                break
    rows = json.loads((data / "pii/synth_dataset_v2.json").read_text(encoding="utf-8"))[:args.n]
    pii = [" ".join(r["full_text"].split()) for r in rows]
    batches = ([docs[i:i + 20] for i in range(0, len(docs), 20)] + [pii[i:i + 50] for i in range(0, len(pii), 50)]
               + [[d.lower() for d in pii[:100]]])
    queries = [d[:80].lower() for d in pii[:50]]
    sides = {"base": base_methods(args.base), "this": {"mac": ei.EntityIndex.mac, "spans": ei.EntityIndex.spans}}
    text_facts = ei.EntityIndex.text_facts
    Sanitizer("PII", detector=args.detector).apply(docs[:2])  # models loaded before any timing
    total = {"base": 0.0, "this": 0.0}
    for rnd, key in enumerate([None, KEY]):
        outs = {}
        for side in (["base", "this"] if rnd % 2 == 0 else ["this", "base"]):
            ei.EntityIndex.mac = sides[side]["mac"]
            ei.EntityIndex.spans = timed(sides[side]["spans"])
            ei.EntityIndex.text_facts = timed(text_facts)
            san = Sanitizer("PII", detector=args.detector, key=key)
            INDEX["t"] = 0.0
            t0 = time.perf_counter()
            out = [o for b in batches for o in san.apply(b)] + san.apply_queries(queries)
            el = time.perf_counter() - t0
            total[side] += el
            outs[side] = out
            print(f"{side} {'keyed' if key else 'unkeyed'}: {el:.2f} s, index {INDEX['t']:.2f} s")
        assert outs["base"] == outs["this"], "the two sides store different texts"
        print(f"{'keyed' if key else 'unkeyed'}: the same {len(outs['this'])} texts")
    print(f"this / base time: {total['this'] / total['base']:.3f}")


if __name__ == "__main__":
    main()
