"""Moved to :mod:`private_vectors.eval.metrics` (this path works until 0.3.0, with a DeprecationWarning)."""

from ._lazy import moved

moved(__name__, "private_vectors.eval.metrics")
