"""Semi-synthetic clinical vignettes with sex and age band: a set where attribute erasure can fail.

The Pri-DDXPlus table (``benchmarks/attribute_erasure.py``) cannot separate erasure methods:
after the text stage it holds 144 distinct texts, and its symptom lists carry nothing about
sex or age beyond the diagnosis. This module generates many distinct vignettes in the same
vocabulary, with patients (identities) that each have several notes, so that attackers
can be trained on thousands of protected vectors and scored on patients they never saw.

Provenance: the diagnoses, the symptom and antecedent phrases, their per-diagnosis
frequencies and the joint (diagnosis, sex, age) of each patient are read from Pri-DDXPlus
(derived from DDXPlus, Fansi Tchango et al. NeurIPS 2022 Datasets and Benchmarks,
CC BY 4.0) at run time; nothing is copied into the repository.

What the generator adds, by construction (so results on this set are evidence about the
methods against such signals, not about real clinical text):

* **sex- and age-consistent histories**: "pregnancy", "abundant menstruation", "vaginal
  discharge" and "hormone intake" are female-only (and pregnancy and menstruation need an age
  of 12 or more), where Pri-DDXPlus lists them for men too;
* **presentation differences that depend on the diagnosis**: for each diagnosis a few of its
  phrases are more frequent in one sex and less in the other (the direction drawn per
  diagnosis and phrase), and a few others change with age band. Averaged over diagnoses the
  shifts nearly cancel, which is what a linear eraser sees; inside a diagnosis they do not,
  which is what a non-linear attacker can use;
* frequencies softened to ``0.15 + 0.7 p`` so that no two notes need repeat.

Every note states the demographics explicitly ("A 46-year-old woman ..."), for the text
stage to remove; pronouns are never written.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["AGE_BANDS", "Vignette", "age_band", "generate_vignettes", "load_pri_ddxplus_profiles"]

AGE_BANDS = ((0, 18, "<18"), (18, 45, "18-44"), (45, 65, "45-64"), (65, 200, "65+"))
FEMALE_ONLY = ("pregnancy", "abundant menstruation", "vaginal discharge", "hormone intake")
NEEDS_PUBERTY = ("pregnancy", "abundant menstruation")
MIN_RECORDS = 5
SEX_SHIFT = 0.3
AGE_SHIFT = 0.25
N_SEX_PHRASES = 4
N_AGE_PHRASES = 3


def age_band(age: int) -> str:
    """The band name of an age in years (``<18``, ``18-44``, ``45-64``, ``65+``)."""
    for lo, hi, name in AGE_BANDS:
        if lo <= age < hi:
            return name
    return AGE_BANDS[-1][2]


@dataclass
class Profile:
    """One diagnosis: phrase frequencies and the (age, sex) of its Pri-DDXPlus records."""

    diagnosis: str
    symptoms: dict[str, float]
    antecedents: dict[str, float]
    demographics: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Vignette:
    """One note of one synthetic patient."""

    text: str
    patient: int
    note: int
    diagnosis: str
    sex: str
    age: int
    kind: str  # "note" (stored) or "query" (a short question)

    @property
    def age_band(self) -> str:
        return age_band(self.age)


def load_pri_ddxplus_profiles(data: Path, min_records: int = MIN_RECORDS) -> list[Profile]:
    """Per-diagnosis phrase frequencies and demographics from Pri-DDXPlus (repeats dropped)."""
    rows, seen = [], set()
    for split in ("test", "dev"):
        for line in (Path(data) / f"{split}.json").read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                if r["question_init"] not in seen:
                    seen.add(r["question_init"])
                    rows.append(r)
    by: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by[r["correct_answer"]].append(r)
    out = []
    for diag in sorted(by):
        rs = by[diag]
        if len(rs) < min_records:
            continue
        sym = Counter(p for r in rs for p in set(r["symptoms"]))
        ant = Counter(p for r in rs for p in set(r["antecedents"]) - set(r["symptoms"]))
        out.append(Profile(diag, {p: c / len(rs) for p, c in sorted(sym.items())},
                           {p: c / len(rs) for p, c in sorted(ant.items())},
                           [(int(r["age"]), str(r["sex"])) for r in rs]))
    return out


def _shifts(profiles: list[Profile], rng: np.random.Generator) -> dict[str, dict[str, tuple[str, float]]]:
    """Per diagnosis: phrase -> ("sex" | "age", signed shift), the directions drawn at random."""
    out: dict[str, dict[str, tuple[str, float]]] = {}
    for p in profiles:
        phrases = [q for q in [*p.symptoms, *p.antecedents] if q not in FEMALE_ONLY]
        rng.shuffle(phrases)
        chosen: dict[str, tuple[str, float]] = {}
        for q in phrases[:N_SEX_PHRASES]:
            chosen[q] = ("sex", SEX_SHIFT * rng.choice([-1.0, 1.0]))
        for q in phrases[N_SEX_PHRASES:N_SEX_PHRASES + N_AGE_PHRASES]:
            chosen[q] = ("age", AGE_SHIFT * rng.choice([-1.0, 1.0]))
        out[p.diagnosis] = chosen
    return out


def _present(q: str, base: float, sex: str, age: int, shift: tuple[str, float] | None) -> float:
    if q in FEMALE_ONLY and (sex != "F" or (q in NEEDS_PUBERTY and age < 12)):
        return 0.0
    p = 0.15 + 0.7 * base
    if shift is not None:
        kind, s = shift
        if kind == "sex":
            p += s if sex == "F" else -s
        else:
            band = [b[2] for b in AGE_BANDS].index(age_band(age))
            p += s * (band - 1.5) / 1.5
    return float(min(0.95, max(0.03, p)))


def _who(age: int, sex: str, rng: np.random.Generator) -> str:
    if age < 18:
        noun = "girl" if sex == "F" else "boy"
    else:
        noun = rng.choice(["woman", "female"] if sex == "F" else ["man", "male"])
    return f"{age}-year-old {noun}"


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


_OPEN = ("A {who} presents with {sym}.", "A {who} comes in complaining of {sym}.",
         "A {who} reports {sym}.", "Seen today: a {who} with {sym}.")
_HIST = ("History of {ant}.", "Past history includes {ant}.", "Known {ant}.", "Relevant background: {ant}.")
_FOLLOW = ("Follow-up visit of a {who}: {sym} persist.", "The {who} returns; {sym} continue.",
           "Review of a {who}, still reporting {sym}.")
_QUERY = ("Which condition explains {sym}?", "Likely diagnosis for {sym}?", "What causes {sym}?")


def _sample(phrases: dict[str, float], sex: str, age: int, shifts: dict[str, tuple[str, float]],
            rng: np.random.Generator) -> list[str]:
    return [q for q, base in phrases.items() if rng.random() < _present(q, base, sex, age, shifts.get(q))]


def generate_vignettes(profiles: list[Profile], n_patients: int, *, seed: int = 0,
                       notes_per_patient: int = 2) -> list[Vignette]:
    """``notes_per_patient`` stored notes and one query per synthetic patient.

    The diagnosis is uniform over the profiles; (age, sex) is a Pri-DDXPlus record of that
    diagnosis with the age moved by up to 3 years; phrases are drawn per note from the
    patient's frequencies (shared within the patient: each note re-draws from the patient's
    own set so that notes overlap but differ).
    """
    rng = np.random.default_rng(seed)
    shifts = _shifts(profiles, np.random.default_rng(seed + 1))
    out: list[Vignette] = []
    for pid in range(n_patients):
        prof = profiles[int(rng.integers(len(profiles)))]
        age0, sex = prof.demographics[int(rng.integers(len(prof.demographics)))]
        age = int(max(0, age0 + rng.integers(-3, 4)))
        sh = shifts[prof.diagnosis]
        sym = _sample(prof.symptoms, sex, age, sh, rng) or [max(prof.symptoms, key=prof.symptoms.get)]
        ant = _sample(prof.antecedents, sex, age, sh, rng)
        for k in range(notes_per_patient):
            s = [q for q in sym if rng.random() < 0.8] or sym[:1]
            a = [q for q in ant if rng.random() < 0.8]
            rng.shuffle(s)
            rng.shuffle(a)
            who = _who(age, sex, rng)
            tmpl = _OPEN if k == 0 else _FOLLOW
            text = str(rng.choice(tmpl)).format(who=who, sym=_join(s))
            if a:
                text += " " + str(rng.choice(_HIST)).format(ant=_join(a))
            out.append(Vignette(text, pid, k, prof.diagnosis, sex, age, "note"))
        q = list(rng.choice(sym, size=min(len(sym), 3), replace=False))
        out.append(Vignette(str(rng.choice(_QUERY)).format(sym=_join(q)), pid, notes_per_patient, prof.diagnosis,
                            sex, age, "query"))
    return out
