"""The pre-fitted concept artefacts shipped for the default model."""

from __future__ import annotations

import numpy as np
import pytest

from private_vectors.encoders import DEFAULT_MODEL
from private_vectors.fitted import BUILTIN_CONCEPTS, FittedConcept, load_concept, shipped_artefact


@pytest.mark.parametrize("name", BUILTIN_CONCEPTS)
def test_every_builtin_ships_for_the_default_model(name: str) -> None:
    folder = shipped_artefact(name, DEFAULT_MODEL)
    assert folder is not None, f"no shipped artefact for {name}"
    fc = FittedConcept.load(folder)
    assert (fc.name, fc.estimator, fc.dim) == (name, "subspace", 384)
    assert fc.basis.shape == (384, 64) and fc.share == 0.9
    np.testing.assert_allclose(fc.basis.T @ fc.basis, np.eye(64), atol=1e-4)
    assert fc.fingerprint["model_id"] == DEFAULT_MODEL
    assert fc.config["concept"]["type"] == "builtin" and fc.config["fit"]["pairs"] == 2000
    assert sum(p.stat().st_size for p in folder.iterdir() if p.is_file()) < 250_000  # small
    mask_folder = shipped_artefact(name, DEFAULT_MODEL, "mask")
    assert mask_folder is not None and mask_folder.parent == folder
    mask = FittedConcept.load(mask_folder)
    assert mask.estimator == "mask" and mask.mask.shape == (384,)
    assert 1 <= int(np.sum(mask.mask > 0.5)) < 384


def test_load_builtin_with_default_model_needs_no_training(caplog: pytest.LogCaptureFixture) -> None:
    from private_vectors.encoders import load_encoder
    from private_vectors.errors import ModelNotAvailableError

    try:
        enc = load_encoder(None)
    except ModelNotAvailableError:
        pytest.skip("default model package not installed")
    fc = load_concept("PII", enc)
    assert fc.source == "builtin" and "on the fly" not in caplog.text
    assert fc.reference()["type"] == "builtin"
    assert load_concept("pii", enc, estimator="mask").estimator == "mask"
    mech = fc.mechanism(epsilon=10.0, unit=1 / np.sqrt(384), random_state=0)
    assert mech.perturb(enc.encode(["Call Maria Lopez at 555-0199."])).shape == (1, 384)
