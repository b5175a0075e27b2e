"""Training data of the learned tagger: public corpora (provenance in ``tagger_sources.json``) and
generated sentences, as ``Example(text, spans)`` with the tagger's four labels.

Readers:

* CoNLL two-column files (WNUT-17 train, Broad Twitter Corpus train): tokens joined by spaces;
* GUM ``.conllu`` (entity layer in the MISC column, CorefUD style): a person, place or
  organization mention whose head word is a proper noun is labelled from its first to its last
  proper noun; a time mention with a digit or a proper noun (a month, a weekday) is a date;
* TAB JSON lines (the ``train`` documents only), PERSON / LOC / ORG and DATETIME spans with a
  digit or a month name.

:func:`refuse_split` keeps every test split (and the evaluation sets) out: TAB test and dev,
CoNLL-2003 (any split: its terms), WNUT-17 test and dev, BTC's test section (F) and GUM's dev,
test and GENTLE documents.

The generator writes sentences, records and rows from :data:`TEMPLATES` (the project's own, none
shared with ``benchmarks/evasion.py``) with Faker's names, cities, countries, companies and dates
from many locales, and varies the form of names (initials, possessives, hashtags, handles,
``Last, First``, a line break between the parts) and the letter case of whole texts. The
encoder's tokenizer is uncased, so letter case changes no token; the case variants are kept so
the data say what the tagger is meant to read.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import random
import re
import subprocess
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SOURCES_FILE = ROOT / "scripts" / "tagger_sources.json"
LABELS = ("PERSON", "LOCATION", "ORGANIZATION", "DATE_TIME")
TAGS = ("O", *(f"{p}-{label}" for label in LABELS for p in ("B", "I")))

_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
           "dec", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


@dataclass(frozen=True)
class Example:
    """A text and its labelled character spans ``(start, end, label)``."""

    text: str
    spans: tuple[tuple[int, int, str], ...]
    source: str


# -- refusing test splits -------------------------------------------------------------------
_REFUSED = (
    (re.compile(r"(^|/)echr_(test|dev)\.json$"), "TAB's test and dev files"),
    (re.compile(r"conll.?2003|(^|/)eng\.(train|testa|testb)"), "CoNLL-2003 (its terms forbid shipping weights trained on it)"),
    (re.compile(r"ontonotes", re.I), "OntoNotes (its terms)"),
    (re.compile(r"(^|/)emerging\.(test|dev)"), "WNUT-17 test and dev"),
    (re.compile(r"(^|/)btc\.(test|dev)$|(^|/)f\.(conll|json|no-labels\.json)$"), "the Broad Twitter Corpus test section (F) and dev set"),
    (re.compile(r"(^|/)GENTLE_"), "GUM's GENTLE test2 documents"),
)
_TEST_NAME = re.compile(r"(^|[_.-])test([_.\d-]|$)", re.I)


def refuse_split(path: str, *, gum_held_out: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` if ``path`` names a test split, an evaluation set or a corpus whose terms
    rule it out for shipped weights."""
    for pattern, what in _REFUSED:
        if pattern.search(path):
            raise ValueError(f"refused training path {path!r}: {what} is never used for training")
    if _TEST_NAME.search(Path(path).name):
        raise ValueError(f"refused training path {path!r}: a test split is never used for training")
    stem = Path(path).stem
    if stem in set(gum_held_out):
        raise ValueError(f"refused training path {path!r}: GUM's dev and test documents are never used for training")


# -- reading sources ------------------------------------------------------------------------
def sources() -> dict[str, dict[str, Any]]:
    """The provenance entries of ``tagger_sources.json`` by name."""
    return {s["name"]: s for s in json.loads(SOURCES_FILE.read_text("utf-8"))["sources"]}


def read_source_file(root: Path, repository: str, commit: str, path: str, sha256: str | None = None) -> str:
    """The text of ``path`` at ``commit`` of ``repository`` under ``root``: a bare mirror at
    ``root/<owner>+<name>/repo`` (read with ``git show``) or a checkout at ``root/<owner>+<name>/``;
    its sha256 must match ``sha256`` when given."""
    refuse_split(path)
    folder = root / repository.replace("/", "+")
    plain = folder / path
    if plain.is_file():
        data = plain.read_bytes()
    else:
        git_dir = folder / "repo"
        if not git_dir.exists():
            raise FileNotFoundError(f"{repository}: neither {plain} nor a mirror at {git_dir}")
        data = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"], check=True,
                              capture_output=True).stdout
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{repository}:{path} does not match the sha256 recorded in {SOURCES_FILE.name}")
    return data.decode("utf-8")


def _join_tokens(tokens: Sequence[str], tags: Sequence[str], label_map: Mapping[str, str], source: str) -> Example:
    text_parts: list[str] = []
    spans: list[tuple[int, int, str]] = []
    pos = 0
    current: list[Any] | None = None
    for tok, tag in zip(tokens, tags, strict=True):
        start = pos + (1 if text_parts else 0)
        text_parts.append(tok)
        pos = start + len(tok)
        kind = label_map.get(tag[2:]) if tag != "O" else None
        if kind and current is not None and current[2] == kind and tag.startswith("I-"):
            current[1] = pos
            continue
        if current is not None:
            spans.append(tuple(current))  # type: ignore[arg-type]
            current = None
        if kind:
            current = [start, pos, kind]
    if current is not None:
        spans.append(tuple(current))  # type: ignore[arg-type]
    return Example(" ".join(text_parts), tuple(spans), source)


def parse_conll(text: str, label_map: Mapping[str, str], source: str) -> list[Example]:
    """Sentences of a two-column (token, BIO tag) file, blank lines between sentences."""
    out: list[Example] = []
    tokens: list[str] = []
    tags: list[str] = []
    for line in [*text.splitlines(), ""]:
        parts = line.split()
        if not parts or parts[0] == "-DOCSTART-":
            if tokens:
                out.append(_join_tokens(tokens, tags, label_map, source))
            tokens, tags = [], []
            continue
        if len(parts) < 2:
            continue
        tokens.append(parts[0])
        tags.append(parts[-1])
    return out


_ENTITY = re.compile(r"\((\d+)-([^()]*?)(\))?(?=\(|\d+\)|$)|(\d+)\)")


def parse_gum(text: str, label_map: Mapping[str, str], source: str) -> Example:
    """One GUM ``.conllu`` document (its sentences joined by line breaks) with named mentions."""
    toks: list[tuple[int, int, str, int, int]] = []  # start, end, upos, head (doc index), sentence start
    chars: list[str] = []
    pos = 0
    mentions: list[tuple[int, int, str]] = []  # token range (inclusive) and etype
    open_: dict[str, list[tuple[int, str]]] = {}
    sent_start = 0
    for line in text.splitlines():
        if not line.strip():
            if chars and not chars[-1].endswith("\n"):
                chars.append("\n")
                pos += 1
            sent_start = len(toks)
            continue
        if line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 10 or not cols[0].isdigit():
            continue
        form, upos, head, misc = cols[1], cols[3], int(cols[6]), cols[9]
        start = pos
        chars.append(form)
        pos += len(form)
        if "SpaceAfter=No" not in misc:
            chars.append(" ")
            pos += 1
        i = len(toks)
        toks.append((start, start + len(form), upos, sent_start + head - 1 if head else -1, sent_start))
        entity = next((f[7:] for f in misc.split("|") if f.startswith("Entity=")), "")
        for m in _ENTITY.finditer(entity):
            if m.group(4):  # a closing bracket
                stack = open_.get(m.group(4))
                if stack:
                    begin, etype = stack.pop()
                    mentions.append((begin, i, etype))
                continue
            eid, etype = m.group(1), m.group(2).split("-")[0]
            if m.group(3):
                mentions.append((i, i, etype))
            else:
                open_.setdefault(eid, []).append((i, etype))
    doc = "".join(chars)
    spans: list[tuple[int, int, str]] = []
    for a, b, etype in sorted(mentions, key=lambda m: (m[0], -m[1])):
        label = label_map.get(etype)
        if label is None:
            continue
        rng = range(a, b + 1)
        if label == "DATE_TIME":
            words = [doc[toks[i][0]:toks[i][1]] for i in rng]
            if not any(re.search(r"\d", w) or toks[i][2] == "PROPN" for w, i in zip(words, rng, strict=True)):
                continue
            first = next(i for i in rng if toks[i][2] not in ("DET", "ADP"))
            spans.append((toks[first][0], toks[b][1], label))
            continue
        heads = [i for i in rng if not a <= toks[i][3] <= b]
        if len(heads) != 1 or toks[heads[0]][2] != "PROPN":
            continue
        proper = [i for i in rng if toks[i][2] == "PROPN"]
        spans.append((toks[proper[0]][0], toks[proper[-1]][1], label))
    return Example(doc, tuple(_outermost(spans)), source)


def _outermost(spans: Sequence[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    for s in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and s[0] < out[-1][1]:
            continue
        out.append(s)
    return out


def _tab_date(value: str) -> bool:
    return bool(re.search(r"\d", value)) or any(w in _MONTHS for w in re.findall(r"[a-z]+", value.lower()))


def load_tab(path: Path, label_map: Mapping[str, str], sha256: str | None = None) -> list[Example]:
    """TAB documents whose ``dataset_type`` is ``train``; their PERSON, LOC, ORG and dated DATETIME
    mentions (a leading "the" left out)."""
    refuse_split(str(path))
    data = path.read_bytes()
    if sha256 is not None and hashlib.sha256(data).hexdigest() != sha256:
        raise ValueError(f"{path} does not match the sha256 recorded in {SOURCES_FILE.name}")
    out = []
    for line in data.decode("utf-8").splitlines():
        doc = json.loads(line)
        if doc["metadata"]["provenance"]["dataset_type"] != "train":
            continue
        text = doc["text"]
        spans = []
        for e in doc["entities"]:
            label = label_map.get(e["entity_type"])
            s, t = int(e["start_offset"]), int(e["end_offset"])
            if label is None or (label == "DATE_TIME" and not _tab_date(text[s:t])):
                continue
            if text[s:t].lower().startswith("the "):
                s += 4
            spans.append((s, t, label))
        out.append(Example(text, tuple(_outermost(spans)), "tab"))
    return out


def gum_documents(root: Path, entry: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(train documents of the licensed genres, held-out documents) from GUM's ``splits.md``."""
    splits = read_source_file(root, entry["repository"], entry["commit"], entry["splits"], entry["splits_sha256"])
    part, by_part = None, {}
    for line in splits.splitlines():
        if line.startswith("## "):
            part = line[3:].strip()
        elif line.strip().startswith("* ") and part:
            by_part.setdefault(part, []).append(line.strip()[2:].strip())
    genres = set(entry["genres"])
    train = [d for d in by_part.get("train", []) if d.split("_")[1] in genres]
    held = [d for p in ("dev", "test", "test2") for d in by_part.get(p, [])]
    return train, held


def load_corpora(root: Path, data: Path, names: Sequence[str] = ("tab", "wnut17", "btc", "gum")) -> dict[str, list[Example]]:
    """The real corpora of ``tagger_sources.json`` (``root``: mirrors/checkouts; ``data``: the
    project's data folder, for TAB)."""
    entries = sources()
    out: dict[str, list[Example]] = {}
    for name in names:
        e = entries[name]
        if name == "tab":
            out[name] = load_tab(data / e["local"], e["labels"], e["sha256"])
        elif name == "gum":
            train, held = gum_documents(root, e)
            docs = []
            for doc in train:
                path = e["path"].format(doc=doc)
                refuse_split(path, gum_held_out=held)
                docs.append(parse_gum(read_source_file(root, e["repository"], e["commit"], path), e["labels"], name))
            out[name] = docs
        else:
            text = read_source_file(root, e["repository"], e["commit"], e["path"], e["sha256"])
            out[name] = parse_conll(text, e["labels"], name)
    return out


# -- the generator ----------------------------------------------------------------------------
TEMPLATES: tuple[str, ...] = (
    # chat and social
    "hey {P} are you still coming to {C} on {D}?",
    "omg just ran into {P} at the airport lol",
    "{P} wants the slides by tonight, can someone ping {P2}",
    "congrats to {P} on the new job at {O}!!",
    "anyone know if {P} moved back to {C}?",
    "just landed in {C}, {P} is picking me up",
    "shoutout to {P} and {P2} for organising the bake sale",
    "miss you {P} x",
    "ok so {P} told me {P2} is leaving {O} in {D}",
    "can't believe {P} never replied to my text",
    "{P}: running late, be there in 10",
    "thanks {P} for the lift to {C} yesterday",
    # support tickets and emails
    "Ticket 4471: customer {P} cannot log in since {D}.",
    "Hi {P}, your order will ship from our {C} warehouse on {D}.",
    "Dear {P}, thank you for contacting {O} support.",
    "Escalated by {P} (team lead) after a call with {P2}.",
    "Refund approved for {P}; card ending 0000 will be credited within five days.",
    "Caller said her name was {P} and that she lives in {C}.",
    "Please cc {P} on every reply about the {C} contract.",
    "Forwarding the complaint from {P} regarding the delivery on {D}.",
    "Kind regards,\n{P}\n{O}\n{C}, {K}",
    "From: {P}\nTo: {P2}\nSubject: visit to {C} on {D}",
    # records, forms and notes
    "Patient {P} was seen at {O} on {D} for a follow-up.",
    "Name: {P}\nDate of visit: {D}\nClinic: {O}, {C}",
    "Next of kin: {P} (sister), address {A}.",
    "{P} was admitted on {D} and discharged three days later.",
    "Referred by Dr {P2} of {O}.",
    "Applicant {P}, born in {C}, {K}, applied on {D}.",
    "The witness, {P}, stated that she had been in {C} that night.",
    "Tenant: {P}. Property: {A}. Lease start: {D}.",
    "Employee {P} transferred from the {C} office to {O} on {D}.",
    "Emergency contact - {P}, tel. on file",
    "Signed: {P}, {D}",
    "Consultation notes ({D}): {P} reports headaches since moving to {C}.",
    "Interview with {P} conducted by {P2} in {C}.",
    "Guardian {P} gave written consent on {D}.",
    # narrative and news-like
    "{P} grew up in {C} before studying in {K}.",
    "Last spring {P} opened a small bakery near {A}.",
    "The award went to {P} of {O}.",
    "{P}, a teacher from {C}, spoke at the hearing on {D}.",
    "According to {P2}, the bridge in {C} will close until {D}.",
    "{O} appointed {P} as its new chief financial officer.",
    "Police in {C} are looking for {P}, who was last seen on {D}.",
    "{P} and {P2} were married in {C} in {Y}.",
    "The mayor of {C} met {P} to discuss the flooding.",
    "{P} has lived at {A} for twenty years.",
    "It was {P} who first noticed the leak.",
    "My neighbour {P} works for {O} in {C}.",
    "We stayed with {Q} family outside {C}.",
    "{Q} car was towed from the car park on {D}.",
    "i think that's {Q} jacket on the chair",
    "Is this {Q} signature on the lease?",
    "{Q} appointment was moved to {D}.",
    "copied {Q} notes from the {C} trip",
    "{P} sold the house to {P2} in {D}.",
    "Born on {D} in {C}, {P} emigrated to {K} as a child.",
    # queries and search-like
    "{P} phone number",
    "where does {P} live now",
    "{P} {C} address",
    "is {P} still at {O}",
    "flights from {C} to {C2} on {D}",
    "{O} head office {C}",
    "who is {P} married to",
    # places in the news and in posts (a country or city acting as a party is still a place)
    "{K} and {K2} agreed to reopen the border crossing near {C}.",
    "Talks between {K} and {K2} resumed in {C} on {D}.",
    "{C} was hit by heavy flooding for the second time this year.",
    "Exports from {K} fell sharply after the strike in {C}.",
    "{K} said it would send aid to the region.",
    "The train from {C} to {C2} was delayed by two hours.",
    "heading back to {C} tomorrow, anyone around? #{C}",
    "sunset over {C} tonight #travel #{K}",
    "The festival moves from {C} to {S} next summer.",
    "She was raised in {S} and now teaches in {C}, {K}.",
    "{O} closed its offices in {C} and {C2}.",
    "Residents of {C} voted against the new motorway.",
    "{P} represented {K} at the summit in {C}.",
    # more possessives and tags
    "{Q} flight to {C} was cancelled.",
    "Everyone loved {Q} speech at the wedding.",
    "we're meeting at {Q} place after work",
    "Happy retirement {P}! #{H}",
    "so proud of my sister #{H} #graduation",
    "Vote {P} for mayor #{H}",
    # lists and structured text
    "Attendees: {P}, {P2}, {P3}",
    "1. {P} - {C}\n2. {P2} - {C2}\n3. {P3} - {C}",
    "{P}\n{A}\n{C}\n{K}",
    "Winner: {P} ({C})",
    "Speakers: {P} ({O}) and {P2} ({O2})",
)
"""The generator's templates: {P}, {P2}, {P3} a person, {Q} a person's (possessive), {H} a person's
name joined into a hashtag, {C}, {C2} a city, {K}, {K2} a country, {S} a region or state, {O}, {O2}
an organisation, {A} a street address, {D} a date, {Y} a year."""

NEGATIVE_TEMPLATES: tuple[str, ...] = (
    "Training is cancelled tonight because of the storm warning.",
    "Please bring a pen, a notebook and a packed lunch.",
    "The model was fitted with a Cox proportional hazards regression.",
    "Survival was estimated with the Kaplan-Meier method and compared with a log-rank test.",
    "We used a Gaussian mixture and a Bayesian prior over the weights.",
    "Patients with Parkinson's disease and Alzheimer's disease were excluded.",
    "The Western blot showed a band at 42 kDa.",
    "I will bring the bill on Monday, if the shop is open.",
    "She may rose early, but the grace period ends soon.",
    "The Mann-Whitney U test and Fisher's exact test gave similar results.",
    "Turn left at the second light and park behind the gym.",
    "The price went up by 3 percent over the last quarter.",
    "Mark the boxes that apply and sign at the bottom of the page.",
    "Our team won 3-1 after extra time.",
    "Results: 12 4 0 3 1 15 9 6 2",
    "The Michaelis-Menten constant was estimated from the Lineweaver-Burk plot.",
    "Hope you feel better soon, get some rest.",
    "The Hodgkin lymphoma cohort received the standard regimen.",
    "Newton's second law relates force and acceleration.",
    "The Doppler effect shifts the frequency of the signal.",
)
"""Texts without a name, place, organisation or date (eponyms, scientific terms, words that are
also given names)."""

POST_OPENINGS: tuple[str, ...] = (
    "what a night", "cannot stop smiling", "best weekend in ages", "thank you all for coming", "new blog post is up",
    "finally finished the marathon", "look who turned up at the market", "we did it", "so much rain today",
    "happy anniversary", "first day at the new job", "miss these two", "game day", "throwback to last summer",
    "can anyone recommend a dentist", "sending love", "rest in peace", "what a goal", "road trip", "proud parent moment",
)
"""Openings of generated social posts (hashtags follow)."""
GENERIC_TAGS: tuple[str, ...] = (
    "tbt", "love", "news", "football", "travel", "mondaymotivation", "photography", "family", "food", "music",
    "blessed", "weekend", "summer", "art", "fitness", "nofilter", "election", "breaking", "friends", "goals",
)
"""Hashtags that name no one."""

_LOCALES = ("en_US", "en_GB", "en_IE", "en_AU", "en_IN", "hi_IN", "en_NG", "yo_NG", "ig_NG", "ha_NG", "zu_ZA",
            "en_KE", "sw", "tw_GH", "es_ES", "es_MX", "es_AR", "es_CO", "pt_BR", "pt_PT", "fr_FR", "fr_CA",
            "de_DE", "de_AT", "it_IT", "nl_NL", "pl_PL", "cs_CZ", "ro_RO", "hu_HU", "sv_SE", "no_NO", "fi_FI",
            "da_DK", "ru_RU", "uk_UA", "bg_BG", "el_GR", "tr_TR", "ar_AA", "ar_EG", "fa_IR", "he_IL", "en_PK",
            "bn_BD", "zh_CN", "zh_TW", "ja_JP", "ko_KR", "vi_VN", "th_TH", "id_ID", "fil_PH", "ka_GE", "hy_AM",
            "az_AZ", "lt_LT", "et_EE", "ga_IE", "is_IS")
_TITLES = ("Mr", "Mrs", "Ms", "Dr", "Dr.", "Prof.", "Mr.", "Mrs.", "Miss")


class Generator:
    """Generated examples from :data:`TEMPLATES` with Faker values from many locales.

    Args:
        seed: seeds Python's ``random`` and every Faker instance.
    """

    def __init__(self, seed: int = 0) -> None:
        from faker import Faker

        self.rng = random.Random(seed)
        self.fakers = []
        for i, loc in enumerate(_LOCALES):
            f = Faker(loc)
            f.seed_instance(seed * 1000 + i)
            self.fakers.append(f)
        self.en = Faker("en_US")
        self.en.seed_instance(seed)

    def _faker(self) -> Any:
        return self.rng.choice(self.fakers)

    def _safe(self, fn: str, *, latin: bool = False) -> str:
        for _ in range(20):
            f = self._faker()
            try:
                if latin and hasattr(f, f"{fn}_romanized"):
                    value = getattr(f, f"{fn}_romanized")()
                else:
                    value = getattr(f, fn)()
            except (AttributeError, TypeError):
                continue
            value = " ".join(str(value).split())
            if value and (not latin or value.isascii()):
                return value
        return getattr(self.en, fn)()

    def _name_parts(self, f: Any = None) -> tuple[str, str]:
        f = f or self._faker()
        for _ in range(10):
            try:
                first, last = f.first_name(), f.last_name()
            except AttributeError:
                f = self._faker()
                continue
            if hasattr(f, "first_romanized_name") and self.rng.random() < 0.5:
                first, last = f.first_romanized_name(), f.last_romanized_name()
            return " ".join(first.split()), " ".join(last.split())
        return self.en.first_name(), self.en.last_name()

    def person(self, possessive: bool = False) -> tuple[str, int, int]:
        """A name in one of several forms: (text, start, end) of the name within the text."""
        f = self._faker()
        first, last = self._name_parts(f)
        if possessive:
            name = self.rng.choice((f"{first} {last}", last, first, f"{first[0]}. {last}"))
            return name + self.rng.choice(("'s", "’s", "s'", "'")) if name.endswith("s") else name + self.rng.choice(
                ("'s", "’s")), 0, len(name)
        r = self.rng.random()
        if r < 0.35:
            name = f"{first} {last}"
        elif r < 0.45:
            name = f"{first[0]}. {last}" if self.rng.random() < 0.7 else f"{first[0]} {last}"
        elif r < 0.52:
            name = f"{first} {last[0]}."
        elif r < 0.58:
            name = f"{last}, {first}"
        elif r < 0.66:
            name = first
        elif r < 0.72:
            name = last
        elif r < 0.78:
            name = f"{first}\n{last}"
        elif r < 0.84:
            middle = self._name_parts(f)[0]
            name = f"{first} {middle} {last}"
        elif r < 0.86:
            title = self.rng.choice(_TITLES)
            return f"{title} {last}", len(title) + 1, len(title) + 1 + len(last)
        else:
            body = self.rng.choice((f"{first}{last}", f"{first}_{last}", f"{first.lower()}{last.lower()}",
                                    f"{first}{last}{self.rng.randrange(10, 99)}"))
            mark = self.rng.choice("#@")
            return f"{mark}{body}", 1, 1 + len(body)
        return name, 0, len(name)

    def date(self) -> str:
        # fixed bounds: a range relative to today would make the data depend on the day it is made
        d = self.en.date_between(datetime.date(1966, 1, 1), datetime.date(2028, 1, 1))
        fmt = self.rng.choice(("%d %B %Y", "%B %d, %Y", "%d/%m/%Y", "%m/%d/%Y", "%Y-%m-%d", "%d.%m.%Y", "%B %Y",
                               "%d %b %Y", "%A %d %B", "%b %d"))
        return d.strftime(fmt).lstrip("0")

    def value(self, slot: str) -> tuple[str, int, int, str]:
        """(text, start, end, label) for a template slot."""
        kind = slot.rstrip("0123456789")
        if kind in ("P", "Q"):
            text, s, e = self.person(possessive=kind == "Q")
            return text, s, e, "PERSON"
        if kind == "C":
            v = self._safe("city", latin=self.rng.random() < 0.7)
            return v, 0, len(v), "LOCATION"
        if kind == "K":
            v = self.en.country()
            return v, 0, len(v), "LOCATION"
        if kind == "S":
            v = self._safe("administrative_unit", latin=True)
            return v, 0, len(v), "LOCATION"
        if kind == "H":
            first, last = self._name_parts()
            v = re.sub(r"\W", "", self.rng.choice((f"{first}{last}", f"{first}_{last}", last, f"team{last}")))
            start = 4 if v.startswith("team") else 0
            return v, start, len(v), "PERSON"
        if kind == "A":
            v = self._safe("street_address", latin=self.rng.random() < 0.7)
            return v, 0, len(v), "LOCATION"
        if kind == "O":
            v = self._safe("company", latin=self.rng.random() < 0.7)
            return v, 0, len(v), "ORGANIZATION"
        if kind == "D":
            v = self.date()
            return v, 0, len(v), "DATE_TIME"
        if kind == "Y":
            v = str(self.rng.randrange(1950, 2025))
            return v, 0, len(v), "DATE_TIME"
        raise ValueError(f"unknown slot {slot!r}")

    def fill(self, template: str) -> Example:
        text, spans, pos = "", [], 0
        for m in re.finditer(r"\{([A-Z]\d?)\}", template):
            text += template[pos:m.start()]
            value, s, e, label = self.value(m.group(1))
            if text.endswith("#"):  # a hashtag: the value's words joined
                value = re.sub(r"\W", "", value[s:e])
                s, e = 0, len(value)
            spans.append((len(text) + s, len(text) + e, label))
            text += value
            pos = m.end()
        text += template[pos:]
        return Example(text, tuple(spans), "generated")

    def row(self) -> Example:
        """A JSON object or a CSV line holding a person, a city and a date (keys or header vary)."""
        parts = [("name", *self.value("P")), ("city", *self.value("C")), ("date", *self.value("D"))]
        if self.rng.random() < 0.5:
            parts.append(("employer", *self.value("O")))
        self.rng.shuffle(parts)
        spans = []
        if self.rng.random() < 0.5:
            text = "{"
            for i, (key, v, s, e, label) in enumerate(parts):
                v = v.replace("\n", " ")
                text += ("" if i == 0 else ", ") + f'"{key}": "'
                spans.append((len(text) + s, len(text) + e, label))
                text += v + '"'
            text += "}"
        else:
            sep = self.rng.choice((",", ";", "\t", "|"))
            text = sep.join(k for k, *_ in parts) + "\n" if self.rng.random() < 0.5 else ""
            text += str(self.rng.randrange(1, 9999)) + sep
            for i, (_, v, s, e, label) in enumerate(parts):
                v = v.replace("\n", " ").replace(sep, " ")
                if i:
                    text += sep
                spans.append((len(text) + s, len(text) + e, label))
                text += v
        return Example(text, tuple(spans), "generated")

    def post(self) -> Example:
        """A social post: an opening, sometimes a mention, then hashtags, one of them often a name
        (its parts joined) or a place."""
        text = self.rng.choice(POST_OPENINGS) + self.rng.choice(("! ", " ", "... ", ". ", "!! "))
        spans = []
        if self.rng.random() < 0.3:
            value, s, e = self.person()
            spans.append((len(text) + s, len(text) + e, "PERSON"))
            text += value + " "
        tags: list[tuple[str, str | None]] = [(t, None) for t in self.rng.sample(GENERIC_TAGS, self.rng.randrange(0, 3))]
        r = self.rng.random()
        if r < 0.65:
            first, last = self._name_parts()
            form = self.rng.choice((f"{first}{last}", f"{first}{last}", f"{first.lower()}{last.lower()}",
                                    f"{first}_{last}", f"{last}{first}", f"{first}{last}{self.rng.randrange(1, 99)}"))
            tags.insert(self.rng.randrange(len(tags) + 1), (re.sub(r"[^\w]", "", form), "PERSON"))
        elif r < 0.85:
            tags.insert(self.rng.randrange(len(tags) + 1), (re.sub(r"\W", "", self.value("C")[0]), "LOCATION"))
        for tag, label in tags:
            text += " #" if not text.endswith(" ") else "#"
            if label:
                spans.append((len(text), len(text) + len(tag), label))
            text += tag
        return Example(text, tuple(spans), "generated")

    def example(self) -> Example:
        r = self.rng.random()
        if r < 0.1:
            ex = Example(self.rng.choice(NEGATIVE_TEMPLATES), (), "generated")
        elif r < 0.18:
            ex = self.post()
        elif r < 0.3:
            ex = self.row()
        else:
            ex = self.fill(self.rng.choice(TEMPLATES))
        return recase(ex, self.rng)

    def examples(self, n: int) -> list[Example]:
        return [self.example() for _ in range(n)]


def recase(ex: Example, rng: random.Random) -> Example:
    """The example in lower case (30 %), upper case (10 %) or as it is; spans keep their offsets
    (only when the case change keeps the length)."""
    r = rng.random()
    text = ex.text.lower() if r < 0.3 else ex.text.upper() if r < 0.4 else ex.text
    return Example(text, ex.spans, ex.source) if len(text) == len(ex.text) else ex


def iter_examples(corpora: Mapping[str, Sequence[Example]]) -> Iterator[Example]:
    for exs in corpora.values():
        yield from exs
