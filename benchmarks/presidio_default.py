"""presidio's defaults, offline, on the project's spaCy small English model (benchmark baselines).

``AnalyzerEngine`` with its default recognizer registry and the full spaCy pipeline (presidio's
default NLP engine asks for ``en_core_web_lg``; the project ships the small model, resolved and
hash-checked by :func:`private_vectors.text.recognizers.presidio.resolve_spacy_model`), and
``AnonymizerEngine`` with its default operator (replace each result with ``<ENTITY_TYPE>``).
One change keeps it offline: the e-mail recognizer validates domains with the public-suffix
snapshot bundled with ``tldextract`` instead of downloading the list (same results).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any


def _offline_email() -> Any:
    import tldextract
    from presidio_analyzer.predefined_recognizers import EmailRecognizer

    extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return bool(extract(pattern_text).fqdn)

    return OfflineEmailRecognizer()


@lru_cache(maxsize=1)
def spacy_target() -> str:
    """The spaCy model the project resolves (a package name or a verified folder)."""
    from private_vectors.text.recognizers.presidio import resolve_spacy_model

    return resolve_spacy_model()[0]


@lru_cache(maxsize=1)
def presidio_defaults() -> tuple[Any, Any]:
    """(AnalyzerEngine, AnonymizerEngine) with presidio's defaults on spaCy small."""
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_anonymizer import AnonymizerEngine

    provider = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": spacy_target()}]})
    analyzer = AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=["en"])
    analyzer.registry.remove_recognizer("EmailRecognizer")
    analyzer.registry.add_recognizer(_offline_email())
    return analyzer, AnonymizerEngine()


@lru_cache(maxsize=1)
def spacy_nlp() -> Any:
    """spaCy small English, full pipeline (for "spaCy NER alone")."""
    import spacy

    return spacy.load(spacy_target())
