"""Text ↔ units (WordPiece pieces or lower-cased words) ↔ ids for the generative attacker."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ....errors import InvalidParameterError

__all__ = ["TokenVocabulary", "token_prior"]

_PAD, _BOS, _EOS = "[PAD]", "[BOS]", "[EOS]"
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)


class TokenVocabulary:
    """Text ↔ units (WordPiece pieces or lower-cased words) ↔ ids, over a closed unit set.

    Args:
        kind: ``"wordpiece"`` (the packaged MiniLM tokenizer, lower-cased, accents stripped)
            or ``"word"`` (lower-cased words and punctuation marks, no dependency).
        units: the unit list (ids follow its order after the three specials).
    """

    def __init__(self, kind: str, units: Sequence[str] = ()) -> None:
        if kind not in ("wordpiece", "word"):
            raise InvalidParameterError("tokenizer", "'wordpiece' or 'word'", kind)
        self.kind = kind
        self.itos: list[str] = [_PAD, _BOS, _EOS, *[u for u in units if u not in (_PAD, _BOS, _EOS)]]
        self.stoi = {u: i for i, u in enumerate(self.itos)}
        self._tokenizer: Any = None

    def __len__(self) -> int:
        return len(self.itos)

    def split(self, text: str) -> list[str]:
        """Units of ``text`` (pieces or words), before restriction to the vocabulary."""
        if self.kind == "word":
            return _WORD.findall(text.lower())
        if self._tokenizer is None:
            self._tokenizer = _load_wordpiece()
        return list(self._tokenizer.tokenize(text))

    def encode(self, text: str) -> list[int]:
        """Ids of the in-vocabulary units of ``text`` (unknown units are dropped)."""
        return [self.stoi[u] for u in self.split(text) if u in self.stoi]

    def units(self, ids: Sequence[int]) -> list[str]:
        """Units of an id sequence, specials removed."""
        return [self.itos[i] for i in ids if i > 2]

    def join(self, units: Sequence[str]) -> str:
        """Readable text from units (WordPiece ``##`` continuations glued back)."""
        text = " ".join(units)
        return text.replace(" ##", "") if self.kind == "wordpiece" else text

    def is_continuation(self, unit: str) -> bool:
        """Whether ``unit`` continues the previous word (WordPiece ``##`` pieces)."""
        return self.kind == "wordpiece" and unit.startswith("##")


def _load_wordpiece() -> Any:
    """The packaged all-MiniLM-L6-v2 WordPiece tokenizer (offline)."""
    from transformers import AutoTokenizer

    from ....encoders import default_model_path

    return AutoTokenizer.from_pretrained(str(default_model_path()), local_files_only=True)


def _contains(generated: Sequence[str], token: Sequence[str], vocab: TokenVocabulary) -> bool:
    """Whether ``token``'s units occur contiguously in ``generated`` as whole word(s)."""
    k = len(token)
    if k == 0:
        return False
    for i in range(len(generated) - k + 1):
        if list(generated[i : i + k]) == list(token):
            end = i + k
            if end == len(generated) or not vocab.is_continuation(generated[end]):
                return True
    return False


def token_prior(token_lists: Sequence[Sequence[str]], vocab: TokenVocabulary) -> dict[str, float]:
    """{token in the vocabulary's normal form: share of sentences holding it}, most frequent first."""
    # dict.fromkeys, not a set: most_common breaks ties by first-seen order, which must not
    # depend on the process's string-hash seed (PYTHONHASHSEED)
    counts = Counter(k for toks in token_lists
                     for k in dict.fromkeys(vocab.join(vocab.split(t)) for t in toks) if k)
    return {k: c / len(token_lists) for k, c in counts.most_common()}

