"""The audit's options, resolved once (:func:`audit_options`) and passed down to every measure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Described, InvalidParameterError

__all__ = ["AuditOptions", "audit_options"]

DEFAULT_ATTACKERS: dict[str, dict[str, Any]] = {"mlc": {}, "nn": {}, "prior": {}}
"""The harness attackers an audit runs (names and parameters as in a bench config)."""

FULL: dict[str, Any] = {"max_docs": 5000, "presidio_docs": 5000, "clean_docs": 5000, "self_queries": 1000}
QUICK: dict[str, Any] = {"max_docs": 5000, "presidio_docs": 500, "clean_docs": 1000, "self_queries": 200}
"""Sample sizes of a full and a ``quick=True`` audit: documents audited (a seeded sample beyond
``max_docs``), documents the detectors read, documents encoded clean (the clean-vector attack and
the retrieval comparison run on this sample) and self-retrieval queries. The attacks on the stored
vectors — the headline — use every audited document in both (``benchmarks/audit_timing.py``
compares the quick run's name recovery with the full run's)."""


@dataclass(frozen=True)
class AuditOptions:
    """What an audit does (every argument of :func:`~private_vectors.eval.audit.audit` but the
    store, the raw documents and the key), resolved by :func:`audit_options`.

    ``attackers`` always holds ``prior`` (the baseline); ``settings`` the sample sizes
    (:data:`FULL` or :data:`QUICK`, ``max_docs`` applied).
    """

    kind: str = "auto"
    collection: str | None = None
    model: str | None = None
    concept: Any = "PII"
    eps: float = 10.0
    compare: bool = True
    queries: Any = None
    qrels: Any = None
    quick: bool = False
    seed: int = 0
    attackers: Mapping[str, Any] = field(default_factory=dict)
    clean_baseline: bool = True
    show_values: bool = False
    cache_dir: str | Path | None = None
    id_field: str = "id"
    text_field: str = "text"
    progress: bool = True
    out: str | Path | None = None
    settings: Mapping[str, Any] = field(default_factory=lambda: dict(FULL))


def audit_options(store: str | Path, *, attackers: Mapping[str, Any] | None = None, quick: bool = False,
                  max_docs: int | None = None, cache_dir: str | Path | None = None, **given: Any) -> AuditOptions:
    """The resolved options of an audit of ``store`` (pure: nothing is read).

    Raises:
        InvalidParameterError: ``cache_dir`` inside the audited store.
    """
    settings = dict(QUICK if quick else FULL)
    if max_docs is not None:
        settings["max_docs"] = int(max_docs)
    spec = dict(DEFAULT_ATTACKERS if attackers is None else attackers)
    spec.setdefault("prior", {})
    store_path = Path(store).resolve()
    if cache_dir is not None and (Path(cache_dir).resolve() == store_path or
                                  store_path in Path(cache_dir).resolve().parents):
        raise InvalidParameterError("cache_dir", "a folder outside the audited store", Described(str(cache_dir)))
    return AuditOptions(attackers=spec, quick=quick, cache_dir=cache_dir, settings=settings, **given)
