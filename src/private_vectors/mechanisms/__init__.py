"""Noise mechanisms: small classes with keyword-only validated parameters and one verb,
``perturb(X)``. See each module for the formula and the paper it comes from.

Metric-DP noise: Laplace, Mahalanobis, Purkayastha, Gaussian (and the identity baseline).
Learned perturbations with trained weights: CAPE and TextCrafter (:mod:`.learned` holds their
shared base and artefact I/O). :mod:`.factory` builds a mechanism from a name, a learned
folder or an instance.
"""

from .base import Mechanism, unit_sphere
from .cape import CapeEncoder
from .factory import MECHANISMS, build_mechanism, is_learned_folder, load_learned
from .gaussian import GaussianMechanism
from .identity import IdentityMechanism
from .laplace import LaplaceMechanism
from .learned import LearnedMechanism, NotFittedError
from .mahalanobis import MASK_FLOOR, MahalanobisMechanism
from .purkayastha import PurkayasthaMechanism
from .textcrafter import TextCrafter

__all__ = [
    "MASK_FLOOR",
    "MECHANISMS",
    "CapeEncoder",
    "GaussianMechanism",
    "IdentityMechanism",
    "LaplaceMechanism",
    "LearnedMechanism",
    "MahalanobisMechanism",
    "Mechanism",
    "NotFittedError",
    "PurkayasthaMechanism",
    "TextCrafter",
    "build_mechanism",
    "is_learned_folder",
    "load_learned",
    "unit_sphere",
]
