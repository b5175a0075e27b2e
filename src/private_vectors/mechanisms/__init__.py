"""Noise mechanisms: small classes with keyword-only validated parameters and one verb,
``perturb(X)``. See each module for the formula and the paper it comes from."""

from .base import Mechanism, unit_sphere
from .gaussian import GaussianMechanism
from .identity import IdentityMechanism
from .laplace import LaplaceMechanism
from .mahalanobis import MASK_FLOOR, MahalanobisMechanism
from .purkayastha import PurkayasthaMechanism

__all__ = [
    "MASK_FLOOR",
    "GaussianMechanism",
    "IdentityMechanism",
    "LaplaceMechanism",
    "MahalanobisMechanism",
    "Mechanism",
    "PurkayasthaMechanism",
    "unit_sphere",
]
