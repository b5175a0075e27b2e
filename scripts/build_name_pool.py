"""Build the surrogate pool shipped with the package (run once; the output is committed).

    .venv/bin/python scripts/build_name_pool.py [--version 1]

Writes ``src/private_vectors/data/text/surrogate_pool_v<version>.json``: first names
(male, female and unisex lists merged: the pool is gender-neutral, a surrogate never
reveals the sex a gendered list would), last names and city names from every Faker locale,
kept only when written in Latin script, deduplicated case-insensitively and sorted. The
file is versioned: surrogates are chosen by index into these sorted lists, so a Faker
upgrade never changes an existing pool; a new pool is a new version. The Sanitizer records
the version and the file's sha256 in its config.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import unicodedata
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "src" / "private_vectors" / "data" / "text"
_FIRST_ATTRS = ("first_names", "first_names_male", "first_names_female", "first_names_nonbinary",
                "first_names_unisex")


def _latin(word: str) -> bool:
    """A name of Latin letters (accents allowed), at most one inner hyphen or apostrophe."""
    if len(word) < 2 or not word[0].isupper():
        return False
    for ch in word:
        if ch in "-'":
            continue
        if not ch.isalpha() or "LATIN" not in unicodedata.name(ch, ""):
            return False
    return word[-1].isalpha() and word.count("-") + word.count("'") <= 1


def _names(values: object) -> list[str]:
    out = []
    if isinstance(values, dict):  # weighted lists (OrderedDict name -> weight)
        values = list(values)
    if not isinstance(values, (list, tuple, set, frozenset)):
        return out  # properties and other computed attributes of some locales
    for v in values:
        s = unicodedata.normalize("NFC", str(v).strip())
        if " " not in s and _latin(s):
            out.append(s)
    return out


def _dedupe(words: list[str]) -> list[str]:
    seen: dict[str, str] = {}
    for w in sorted(words):
        seen.setdefault(w.casefold(), w)
    return sorted(seen.values(), key=lambda w: (w.casefold(), w))


def build(version: str) -> Path:
    import faker
    import faker.providers.address as address
    import faker.providers.person as person

    first: list[str] = []
    last: list[str] = []
    cities: list[str] = []
    locales = []
    for mod in pkgutil.iter_modules(person.__path__):
        prov = importlib.import_module(f"faker.providers.person.{mod.name}").Provider
        got_first = [n for a in _FIRST_ATTRS for n in _names(getattr(prov, a, ()))]
        got_last = _names(getattr(prov, "last_names", ()))
        if got_first or got_last:
            locales.append(mod.name)
        first += got_first
        last += got_last
    for mod in pkgutil.iter_modules(address.__path__):
        prov = importlib.import_module(f"faker.providers.address.{mod.name}").Provider
        for v in getattr(prov, "cities", ()) or ():
            s = unicodedata.normalize("NFC", str(v).strip())
            if s and all(_latin(w) for w in s.replace("-", " ").split()) and len(s.split()) <= 3:
                cities.append(s)
    first_d = _dedupe(first)
    first_keys = {w.casefold() for w in first_d}
    # a token is looked up in the first-name list first, so names in both lists stay first names
    last_d = [w for w in _dedupe(last) if w.casefold() not in first_keys]
    pool = {
        "version": version,
        "source": f"Faker {faker.VERSION}: person providers of {len(locales)} locales, Latin script only",
        "first": first_d,
        "last": last_d,
        "cities": _dedupe(cities),
    }
    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"surrogate_pool_v{version}.json"
    path.write_text(json.dumps(pool, ensure_ascii=False, indent=0) + "\n", "utf-8")
    print(f"{path}: {len(first_d)} first, {len(last_d)} last, {len(pool['cities'])} cities")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--version", default="1")
    build(parser.parse_args().version)
