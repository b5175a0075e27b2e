"""The text stage's second pass as one job (frozen job index) against two source trees.

    git worktree add /tmp/pv-before <commit>
    nice -n 10 .venv/bin/python benchmarks/job_index.py --trees before=/tmp/pv-before/src after=src \\
        --out benchmarks/results/text/job_index.md

Each tree runs in a fresh process (``PYTHONPATH`` = that tree's ``src``; ``--child`` is that
process) on the same data:

* TAB court judgments, ``dev`` split (never tuned on), as one batch: PERSON / LOC / DIRECT+QUASI
  token recall and precision (scorer: ``benchmarks/_shared.py``), and the seconds it took;
* the every-path corpus of ``tests/test_every_path.py`` (200 generated documents and their
  author metadata, :func:`private_vectors.eval.synthetic.people_corpus`, keyed): ground-truth
  names (of 600) left in the output;
* order: how many TAB dev judgments are stored differently when one call gets them shuffled, and
  when four calls get a quarter each instead of one call getting all (each call is a job of
  its own; ``protect_dataset`` on Ray stores what the one call stores).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from _shared import DATA, score_tab

KEY = "every-path-test-key-9f3K2xQ7"


def _every_path_missed(data: Path) -> int:
    from private_vectors.eval.synthetic import people_corpus
    from private_vectors.text import Sanitizer

    corpus = people_corpus(data / "pii" / "FakeNameGenerator.com_3000.csv", 200)
    sanitizer = Sanitizer("PII", key=KEY)
    outputs = sanitizer.apply(corpus.texts) + sanitizer.apply([m["author"] for m in corpus.metadatas])
    return len(corpus.missed(outputs))


def _order_changes(data: Path) -> tuple[int, int]:
    """TAB dev judgments stored differently (a) by one call on them shuffled than in their order,
    (b) by four calls on a quarter each (batches as jobs of their own) than by one call."""
    from private_vectors.text import Sanitizer

    rows = [json.loads(x) for x in (data / "pii" / "tab" / "tab_train_dev.jsonl").read_text("utf-8").splitlines()]
    texts = [r["text"] for r in rows if r["metadata"]["provenance"]["dataset_type"] == "dev"]
    idx = list(range(len(texts)))
    one = Sanitizer("PII", key=KEY).apply(texts)
    shuffled = random.Random(0).sample(idx, len(idx))
    again = dict(zip(shuffled, Sanitizer("PII", key=KEY).apply([texts[i] for i in shuffled]), strict=True))
    san, parts = Sanitizer("PII", key=KEY), {}
    for b in (idx[i::4] for i in range(4)):
        parts.update(zip(b, san.apply([texts[i] for i in b]), strict=True))
    return sum(one[i] != again[i] for i in idx), sum(one[i] != parts[i] for i in idx)


def _child(data: Path) -> None:
    from private_vectors.text import Sanitizer

    t0 = time.perf_counter()
    tab = score_tab(Sanitizer("PII"), "dev", data)
    out = {"TAB dev PERSON": tab["recall"].get("PERSON"), "TAB dev LOC": tab["recall"].get("LOC"),
           "TAB dev D+Q": tab["recall"]["DIRECT+QUASI"], "TAB dev precision": tab["precision"],
           "TAB dev seconds (one batch)": tab["seconds"],
           "every-path names missed (of 600)": _every_path_missed(data),
           **dict(zip(("TAB dev docs changed by shuffling one call", "TAB dev docs changed by 4 calls instead of one"),
                      _order_changes(data), strict=True)),
           "wall s": round(time.perf_counter() - t0)}
    print(json.dumps(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--trees", nargs="+", default=["this=src"], help="name=path/to/src pairs")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    p.add_argument("--child", action="store_true")
    args = p.parse_args()
    if args.child:
        _child(Path(args.data))
        return
    rows = []
    for pair in args.trees:
        name, src = pair.split("=", 1)
        env = {**os.environ, "PYTHONPATH": str(Path(src).resolve())}
        res = subprocess.run([sys.executable, __file__, "--child", "--data", args.data], env=env, check=True,
                             capture_output=True, text=True)
        rows.append({"tree": name, **json.loads(res.stdout.strip().splitlines()[-1])})
        print(rows[-1], flush=True)
    keys = list(rows[0])
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    lines = ["# The second pass as one job: two trees side by side", "",
             f"Command: `.venv/bin/python benchmarks/job_index.py --trees {' '.join(args.trees)}"
             f"{' --out ' + args.out if args.out else ''}`; load average at the end {'/'.join(load)} "
             "(2 shared cores). See the script's docstring for each column; 21 TAB dev judgments, 200 every-path documents.", "",
             "| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
