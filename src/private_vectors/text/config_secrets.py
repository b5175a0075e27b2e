"""Hiding what a user asked to hide or keep in a text-stage config: token lists, patterns, allow and deny lists.

A config is stored beside the protected vectors, so the lists a user gave (the names to hide,
the company name to keep) never appear in it: each is replaced by the keyed HMACs of its
values (with a key, so two configs still compare) or by a ``{"withheld": true}`` marker
(without one). A config holding such values cannot rebuild them; the store is reopened with the
same text stage instead.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["SECRET_FIELDS", "ConfigSecrets", "has_hidden", "is_hidden", "listed"]

SECRET_FIELDS = ("tokens", "patterns", "allow_list", "deny_list")
"""Config fields that list what a user asked to hide or keep: stored only as keyed HMACs."""


def _hide(obj: Any, mac: Callable[[str], str] | None) -> Any:
    if isinstance(obj, dict):
        return {k: _hidden(v, mac) if k in SECRET_FIELDS and isinstance(v, (list, tuple)) else _hide(v, mac)
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_hide(v, mac) for v in obj]
    return obj


def _hidden(values: Sequence[str], mac: Callable[[str], str] | None) -> Any:
    if not values:
        return []
    if mac is None:
        return {"withheld": True}
    return {"hmac": sorted({mac(str(v)) for v in values})}


def is_hidden(value: Any) -> bool:
    """Whether ``value`` is a hidden list (HMACs or the withheld marker)."""
    return isinstance(value, Mapping) and ("hmac" in value or "withheld" in value)


def has_hidden(obj: Any) -> bool:
    """Whether ``obj`` (a config fragment) holds a hidden list anywhere."""
    if isinstance(obj, Mapping):
        return any(is_hidden(v) or has_hidden(v) for v in obj.values())
    if isinstance(obj, list):
        return any(has_hidden(v) for v in obj)
    return False


def listed(recognizer_configs: Any) -> list[Any]:
    """The token lists and patterns of recognizer configs (what may be the user's)."""
    if not isinstance(recognizer_configs, list):
        return []
    return [(d.get("type"), d.get("tokens"), d.get("patterns")) for d in recognizer_configs
            if isinstance(d, Mapping) and ("tokens" in d or "patterns" in d)]


class ConfigSecrets:
    """Hides :data:`SECRET_FIELDS` under a config subkey (None: withheld, nothing to compare).

    Args:
        key: the config subkey (see :class:`~private_vectors.text.keycheck.StageKeys`), or None
            for a text stage without a key.
    """

    def __init__(self, key: bytes | None) -> None:
        self._key = key

    def __repr__(self) -> str:
        return "ConfigSecrets(<key>)" if self._key is not None else "ConfigSecrets(None)"

    def _mac(self, value: str) -> str:
        assert self._key is not None
        return hmac.digest(self._key, value.encode("utf-8"), "sha256").hex()[:32]

    def hide(self, obj: Any) -> Any:
        """``obj`` (a config fragment) with its secret lists replaced by HMACs or withheld."""
        return _hide(obj, self._mac if self._key is not None else None)
