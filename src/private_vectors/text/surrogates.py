"""Keyed surrogates: the same entity gets the same fake value everywhere, without a mapping table.

A surrogate is chosen by ``HMAC-SHA256(surrogate subkey, slot ‖ normalised token)`` as an
index into a pool shipped with the package (``data/text/surrogate_pool_v<N>.json``, built by
``scripts/build_name_pool.py`` from Faker's Latin-script locales: tens of thousands of first
and last names, male and female lists merged so a surrogate never carries the person's sex,
and city names). The pool is versioned and its sha256 is recorded in the Sanitizer's config,
so a Faker upgrade never changes existing surrogates.

Person names are replaced **token by token**: "Ms Amelia Okafor", "Amelia" and "Okafor" get
consistent surrogates because each token's surrogate depends on that token only (its slot —
first- or last-name pool — is decided by whether the token is a known first name, not by its
position). Titles and initials' punctuation are kept; case follows the original token.
E-mails become ``first.last@example.{com,net,org}`` (RFC 2606 domains), phone numbers, SSNs,
cards, IBANs keep their format with keyed digits (cards stay Luhn-valid), IP addresses become
addresses in 10.0.0.0/8. Labels without a surrogate kind (DATE_TIME, MEDICAL, NRP, ...) are
redacted by the surrogate operator.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import ArtefactError
from ..keys import SecretKey, surrogate_subkey
from .recognizers.numbers import luhn_ok

__all__ = ["NAME_TOKEN", "POOL_VERSION", "SURROGATE_LABELS", "SurrogateGenerator", "load_pool", "normalise_token"]

POOL_VERSION = "1"
_POOL_DIR = Path(__file__).resolve().parents[1] / "data" / "text"
_POOL_SHA256 = {"1": "50ba63224e52c6f169555202deb2929475fa47b925f0dc83bdf127211ff40c14"}

SURROGATE_LABELS: tuple[str, ...] = ("PERSON", "LOCATION", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD",
                                     "US_SSN", "IBAN_CODE", "IP_ADDRESS")
"""Labels the surrogate operator can replace by a fake value (others are redacted)."""

TITLES = frozenset(["mr", "mrs", "ms", "miss", "mx", "dr", "prof", "sir", "madam", "dame", "lord", "lady", "rev", "fr"])
NAME_TOKEN = re.compile(r"[^\W\d_](?:[\w'’-]*[^\W_])?", re.UNICODE)
"""A word of a name (letters, inner apostrophes and hyphens): what a surrogate replaces word by word."""


def _surrogate_subkey(key: SecretKey | str | bytes) -> bytes:
    """The subkey surrogates are derived from (the one place the text stage derives it): the
    stretched key's HKDF surrogate subkey (:func:`private_vectors.keys.surrogate_subkey`), so a
    known name with its surrogate lets an attacker test key guesses only at scrypt speed."""
    return surrogate_subkey(key)  # SecretBytes: a repr or traceback shows <secret>


def normalise_token(token: str) -> str:
    """NFKC, case-folded, possessive ``'s`` and surrounding punctuation removed."""
    t = unicodedata.normalize("NFKC", token).casefold().strip(" .,;:!?\"()[]{}")
    t = re.sub(r"['’]s$", "", t)
    return " ".join(t.split())


class Pool:
    """The shipped surrogate pool (sorted lists; indices are stable within a version)."""

    def __init__(self, version: str, data: dict[str, Any], sha256: str) -> None:
        self.version = version
        self.sha256 = sha256
        self.first: list[str] = list(data["first"])
        self.last: list[str] = list(data["last"])
        self.cities: list[str] = list(data["cities"])
        self.first_keys = frozenset(w.casefold() for w in self.first)

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "sha256": self.sha256, "first": len(self.first),
                "last": len(self.last), "cities": len(self.cities)}


@lru_cache(maxsize=2)
def load_pool(version: str = POOL_VERSION) -> Pool:
    """Load and verify pool ``version`` (ArtefactError when missing or not the shipped bytes)."""
    path = _POOL_DIR / f"surrogate_pool_v{version}.json"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ArtefactError(f"surrogate pool version {version!r}: cannot read {path}: {exc}") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if version in _POOL_SHA256 and digest != _POOL_SHA256[version]:
        raise ArtefactError(f"surrogate pool {path.name}: sha256 {digest[:12]}… is not the shipped "
                            f"{_POOL_SHA256[version][:12]}…; the pool was modified (surrogates would change)")
    return Pool(version, json.loads(raw), digest)


def _match_case(template: str, value: str) -> str:
    if template.isupper() and len(template) > 1:
        return value.upper()
    if template.islower():
        return value.lower()
    return value


class SurrogateGenerator:
    """Keyed surrogate values for detected spans.

    Args:
        key: the user's secret (a :class:`~private_vectors.keys.SecretKey`, str or bytes of >= 16
            bytes); only its surrogate subkey is kept.
        pool: a :class:`Pool` (default: the shipped current version).
    """

    def __init__(self, key: SecretKey | str | bytes, pool: Pool | None = None) -> None:
        self._subkey = _surrogate_subkey(key)
        self.pool = pool or load_pool()

    def __repr__(self) -> str:  # never show key material
        return f"SurrogateGenerator(pool=v{self.pool.version})"

    def _draw(self, slot: str, value: str) -> int:
        mac = hmac.new(self._subkey, slot.encode() + b"\x00" + value.encode("utf-8"), hashlib.sha256).digest()
        return int.from_bytes(mac[:8], "big")

    def _pick(self, slot: str, value: str, options: list[str]) -> str:
        return options[self._draw(slot, value) % len(options)]

    # -- per kind -----------------------------------------------------------------------
    def name_token(self, token: str) -> str:
        """The surrogate of one name token (slot from the token itself, not its position)."""
        norm = normalise_token(token)
        if len(norm) == 1:  # an initial
            letter = "ABCDEFGHIJKLMNOPRSTVW"[self._draw("INITIAL", norm) % 21]
            return _match_case(token, letter)
        slot, options = ("FIRST", self.pool.first) if norm in self.pool.first_keys else ("LAST", self.pool.last)
        return _match_case(token, self._pick(slot, norm, options))

    def person(self, text: str) -> str:
        out, pos = [], 0
        for m in NAME_TOKEN.finditer(text):
            out.append(text[pos:m.start()])
            tok = m.group(0)
            poss = re.search(r"['’]s$", tok)
            core = tok[:poss.start()] if poss else tok
            if normalise_token(core) in TITLES:
                out.append(tok)
            else:
                out.append(self.name_token(core) + (poss.group(0) if poss else ""))
            pos = m.end()
        out.append(text[pos:])
        return "".join(out)

    def location(self, text: str) -> str:
        norm = normalise_token(text)
        if any(c.isdigit() for c in text):  # a street address
            number = 1 + self._draw("STREET_NO", norm) % 999
            return f"{number} {self._pick('STREET', norm, self.pool.last)} Street"
        return _match_case(text, self._pick("CITY", norm, self.pool.cities))

    def email(self, text: str) -> str:
        norm = normalise_token(text)
        first = self._pick("EMAIL_FIRST", norm, self.pool.first)
        last = self._pick("EMAIL_LAST", norm, self.pool.last)
        domain = ("example.com", "example.net", "example.org")[self._draw("EMAIL_DOMAIN", norm) % 3]
        local = unicodedata.normalize("NFKD", f"{first}.{last}").encode("ascii", "ignore").decode().lower()
        local = re.sub(r"[^a-z0-9.]", "", local) or "user"
        return f"{local}@{domain}"

    def digits(self, text: str, label: str) -> str:
        """Keyed digits in the original format (same digits -> same surrogate)."""
        digits = re.sub(r"\D", "", text)
        stream = hashlib.shake_256(hmac.new(self._subkey, label.encode() + b"\x00" + digits.encode(),
                                            hashlib.sha256).digest()).digest(len(digits) + 1)
        new = [str(b % 10) for b in stream[:len(digits)]]
        if new and label == "CREDIT_CARD":
            new[-1] = _luhn_digit("".join(new[:-1]))
        it = iter(new)
        return "".join(next(it) if c.isdigit() else c for c in text)

    def ip(self, text: str) -> str:
        d = self._draw("IP", normalise_token(text))
        return f"10.{(d >> 16) % 256}.{(d >> 8) % 256}.{1 + d % 254}"

    def surrogate(self, label: str, text: str) -> str | None:
        """A surrogate for ``text`` of ``label``, or None when the label has no surrogate kind."""
        kind = {"PERSON": self.person, "LOCATION": self.location, "EMAIL_ADDRESS": self.email,
                "IP_ADDRESS": self.ip}.get(label)
        if kind is not None:
            return kind(text)
        if label in ("PHONE_NUMBER", "CREDIT_CARD", "US_SSN", "IBAN_CODE") and any(c.isdigit() for c in text):
            return self.digits(text, label)
        return None


def _luhn_digit(body: str) -> str:
    """The check digit making ``body`` + digit pass the Luhn test."""
    return next(d for d in "0123456789" if luhn_ok(body + d))
