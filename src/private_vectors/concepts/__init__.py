"""Moved to :mod:`private_vectors.fitted` (this path works until 0.3.0, with a DeprecationWarning);
``private_vectors.concepts.text`` is :mod:`private_vectors.fitted.removal`."""

from .._lazy import moved

moved(__name__, "private_vectors.fitted", renamed={"text": "removal"})
