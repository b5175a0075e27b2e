"""The attribute-attacker family and the semi-synthetic vignette generator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from private_vectors.errors import InvalidParameterError
from private_vectors.eval.attacks.family import (
    ATTACKER_FAMILY,
    attack_family,
    identity_split,
    strongest,
)
from private_vectors.eval.vignettes import (
    Profile,
    generate_vignettes,
    load_pri_ddxplus_profiles,
)

PRI_DDXPLUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "medical" / "pri-ddxplus"


def _xor_data(m: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two regions; the attribute moves along +e0 in one region and −e0 in the other.

    The class means are equal overall (a linear probe reads nothing), but a classifier that
    sees the region (e1) reads the attribute.
    """
    rng = np.random.default_rng(seed)
    region = rng.integers(0, 2, m)
    z = rng.integers(0, 2, m)
    X = rng.normal(scale=0.3, size=(m, 6))
    X[:, 1] += 3.0 * (2 * region - 1)
    X[:, 0] += 1.5 * (2 * z - 1) * (2 * region - 1)
    return X, z, np.arange(m) // 2  # two rows per identity


def test_family_reads_a_nonlinear_attribute_that_a_linear_probe_cannot():
    X, z, groups = _xor_data()
    train, test = identity_split(groups, 0.6, seed=0)
    res = attack_family(X, z, groups, train, test, seed=0)
    assert set(res) == set(ATTACKER_FAMILY)
    assert res["logistic"]["accuracy"] < 0.65
    assert res["mlp256"]["accuracy"] > 0.9 and res["gbt"]["accuracy"] > 0.9
    name, acc = strongest(res)
    assert acc == max(r["accuracy"] for r in res.values()) and name != "logistic"
    assert 0 <= res["mlp256x128"]["ci_low"] <= res["mlp256x128"]["accuracy"] <= res["mlp256x128"]["ci_high"] <= 1


def test_family_refuses_identities_on_both_sides():
    X, z, groups = _xor_data(m=60)
    rows = np.arange(60)
    with pytest.raises(InvalidParameterError, match="test"):
        attack_family(X, z, groups, rows[:40], rows[39:], attackers=("logistic",))
    with pytest.raises(InvalidParameterError, match="attacker"):
        train, test = identity_split(groups, 0.5, seed=0)
        attack_family(X, z, groups, train, test, attackers=("svm",))


def test_identity_split_keeps_identities_whole():
    groups = np.repeat(np.arange(50), 3)
    a, b = identity_split(groups, 0.3, seed=1)
    assert len(a) + len(b) == len(groups)
    assert not set(groups[a]) & set(groups[b])
    assert len(set(groups[a])) == 15


def _toy_profiles() -> list[Profile]:
    demo = [(30, "F"), (40, "M"), (8, "F"), (70, "M")]
    return [
        Profile("Anemia", {"pale skin": 0.9, "fatigue": 0.6, "dizziness": 0.5, "pain": 0.8, "weakness": 0.4},
                {"pregnancy": 1.0, "abundant menstruation": 1.0, "poor diet": 0.7}, demo),
        Profile("Otitis", {"pain": 1.0, "fever": 0.7, "cough": 0.6, "nasal congestion": 0.7, "mood instability": 0.5},
                {"recent vaccinations": 0.8, "oral antibiotic usage": 0.6}, demo),
    ]


def test_vignettes_are_consistent_and_distinct():
    vig = generate_vignettes(_toy_profiles(), 300, seed=3)
    notes = [v for v in vig if v.kind == "note"]
    assert len(notes) == 600 and sum(v.kind == "query" for v in vig) == 300
    assert len({v.text for v in notes}) > 450
    for v in notes:
        if v.sex == "M" or v.age < 12:
            assert "pregnancy" not in v.text and "menstruation" not in v.text
        assert f"{v.age}-year-old" in v.text  # explicit demographics, for the text stage to remove
    assert {v.patient for v in notes} == set(range(300))
    assert generate_vignettes(_toy_profiles(), 20, seed=3)[0].text == vig[0].text  # seeded


@pytest.mark.skipif(not PRI_DDXPLUS.exists(), reason="Pri-DDXPlus not on disk")
def test_profiles_from_pri_ddxplus():
    profiles = load_pri_ddxplus_profiles(PRI_DDXPLUS)
    assert len(profiles) >= 10
    for p in profiles:
        assert len(p.demographics) >= 5 and p.symptoms
        assert all(0 < f <= 1 for f in [*p.symptoms.values(), *p.antecedents.values()])
