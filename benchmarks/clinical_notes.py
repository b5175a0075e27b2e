"""Generated clinical notes: is the date of birth and the diagnosis replaced?

Seeded notes (``--n`` notes, default 60; ``--seed``): a patient name and date of birth from
Faker, written in one of five common forms ("DOB: 03/14/1962", "date of birth 14 March 1962",
"born on March 14, 1962", "D.O.B. 1962-03-14", "Date of birth: 14.03.1962"), and a diagnosis
drawn from the DDXPlus pathologies (``medical/pri-ddxplus/dev.json``, ``correct_answer``) — a
source independent of the shipped medical vocabulary. Four of the six templates name the
diagnosis after a clinical cue ("diagnosed with", "Diagnosis", "Assessment"), two do not; the
recall without a cue is reported apart (the cue rule cannot help there). A DOB or diagnosis counts as found when
every one of its word tokens is replaced. Each note is sanitized as one batch of all notes.

    .venv/bin/python benchmarks/clinical_notes.py --concept PII,medical \
        --out benchmarks/results/text/clinical_notes.json
"""

from __future__ import annotations

import argparse
import json
import random
import re
from datetime import date
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
_DOB_FORMS = ("DOB: {d:%m/%d/%Y}", "date of birth {d.day} {d:%B %Y}", "born on {d:%B} {d.day}, {d.year}",
              "D.O.B. {d:%Y-%m-%d}", "Date of birth: {d:%d.%m.%Y}")
_TEMPLATES = (
    "Patient {name}, {dob}, seen in clinic today. Assessment: {dx}. Plan: follow-up in two weeks.",
    "{name} ({dob}) presented with worsening symptoms. Working diagnosis: {dx}; labs ordered.",
    "Discharge summary for {name}, {dob}. Final diagnosis {dx}. Discharged home in stable condition.",
    "Referral: {name}, {dob}, was diagnosed with {dx} and needs specialist review.",
    "{name}, {dob}, is known to have {dx}; medication was adjusted at today's visit.",
    "Follow-up call with {name} ({dob}): {dx} is improving, no new complaints.",
)
_NO_CUE = frozenset(_TEMPLATES[4:])  # no "diagnosis"/"diagnosed with"/"assessment" cue
_TOKEN = re.compile(r"\w+")


def generate(n: int, seed: int, data: Path) -> list[dict[str, Any]]:
    from faker import Faker

    lines = (data / "medical" / "pri-ddxplus" / "dev.json").read_text("utf-8").splitlines()
    rows = [json.loads(x) for x in lines if x.strip()]
    diagnoses = sorted({r["correct_answer"] for r in rows})
    rng = random.Random(seed)
    fake = Faker("en_US")
    fake.seed_instance(seed)
    notes = []
    for _ in range(n):
        d = fake.date_between_dates(date(1930, 1, 1), date(2005, 12, 31))
        dob = rng.choice(_DOB_FORMS).format(d=d)
        dx = rng.choice(diagnoses)
        template = rng.choice(_TEMPLATES)
        text = template.format(name=fake.name(), dob=dob, dx=dx)
        notes.append({"text": text, "dob": dob, "dx": dx, "cue": template not in _NO_CUE})
    return notes


def _covered(text: str, part: str, spans: list[Any], value_only: bool = False) -> bool:
    start = text.index(part)
    tokens = [(m.start() + start, m.end() + start) for m in _TOKEN.finditer(part)]
    if value_only:  # the date itself, not its cue word ("DOB:")
        tokens = [t for t in tokens if any(c.isdigit() for c in text[t[0]:t[1]])
                  or text[t[0]:t[1]].lower() not in ("dob", "d", "o", "b", "date", "of", "birth", "born", "on")]
    return all(any(s.start < b and a < s.end for s in spans) for a, b in tokens)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--concept", default="PII,medical")
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--out", default=None)
    args = p.parse_args()
    from private_vectors.text import Sanitizer

    notes = generate(args.n, args.seed, Path(args.data))
    concept: Any = args.concept.split(",") if "," in args.concept else args.concept
    found = Sanitizer(concept).document_spans([x["text"] for x in notes])
    dob = sum(_covered(x["text"], x["dob"], s, value_only=True) for x, s in zip(notes, found, strict=True))
    dx = sum(_covered(x["text"], x["dx"], s) for x, s in zip(notes, found, strict=True))
    plain = [(x, s) for x, s in zip(notes, found, strict=True) if not x["cue"]]
    dx_plain = sum(_covered(x["text"], x["dx"], s) for x, s in plain)
    missed = sorted({x["dx"] for x, s in zip(notes, found, strict=True) if not _covered(x["text"], x["dx"], s)})
    out = {"command": f"python benchmarks/clinical_notes.py --concept {args.concept} --n {args.n} --seed {args.seed}",
           "notes": len(notes), "date_of_birth_recall": round(dob / len(notes), 3),
           "diagnosis_recall": round(dx / len(notes), 3),
           "diagnosis_recall_without_cue": round(dx_plain / max(1, len(plain)), 3), "notes_without_cue": len(plain),
           "diagnoses_missed": missed,
           "example": notes[0]["text"]}
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
