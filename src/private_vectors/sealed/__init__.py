"""Sealed stores: with a key, a store keeps nothing readable but the noisy vectors.

Per document one AEAD record (:mod:`~private_vectors.sealed.records`) holds what an unsealed
store keeps in clear (sanitized text, restore record, metadata) and the exact vector; the data
key that protects them is wrapped by the user's key or a KMS (:mod:`~private_vectors.sealed.datakey`);
the key holder re-ranks noisy candidates with the exact vectors (:mod:`~private_vectors.sealed.rerank`).
Options: :class:`Sealing`, passed as ``PrivateEmbedding(seal=...)``.
"""

from __future__ import annotations

from .datakey import KeyringFile, KeyStore, KeyWrapper, LocalKeyWrapper
from .options import Sealing, resolve_sealing
from .records import SEALED_KEY, SealedPayload, Sealer
from .rerank import candidate_count

__all__ = ["SEALED_KEY", "KeyStore", "KeyWrapper", "KeyringFile", "LocalKeyWrapper", "SealedPayload", "Sealer",
           "Sealing", "candidate_count", "resolve_sealing"]
