"""Generative embedding inversion in the GEIA style: a decoder that writes the sentence back.

GEIA (Li et al., 2023, "Sentence Embedding Leaks More Information than You Expect:
Generative Embedding Inversion Attack to Recover the Whole Sentence", Findings of ACL)
projects a sentence vector into the prefix of a decoder language model and fine-tunes the
decoder to reconstruct the sentence from it. This module follows that recipe with a small
decoder trained from scratch (issue 8 allows it), because fine-tuning SmolLM2-135M costs
≈ 1.9 s per step on the project's 2-core CPU:

* the (possibly perturbed) vector ``v`` is layer-normalised (the attacker may rescale
  noisy vectors at will), then projected to (i) a prefix embedding fed as the decoder's
  first input, as in GEIA, (ii) the GRU's initial state and (iii) a context vector
  concatenated to every input step, so a small decoder keeps hold of it;
* the output vocabulary is the WordPiece vocabulary of the packaged all-MiniLM-L6-v2
  tokenizer restricted to the pieces seen in the attacker's training sentences (so words
  never seen whole can still be spelled from pieces), or a plain word vocabulary;
* training is teacher-forced cross-entropy (Adam, gradient clipping, early stopping on a
  held-out share of the training set).

Sensitive tokens are scored the same way as for the other attackers: each gets a
probability — the share of ``n_samples`` ancestral samples from the decoder (temperature
``temperature``) that contain the token as whole word(s) — and leakage/confidence follow
the SPARSE paper's eq. 13/14 (share of sensitive token instances recovered; mean
probability assigned to them). A token counts as recovered when it is among the
sentence's k_s most probable words (``rule="top-k"``, the project's default for every
attacker) or when its probability reaches ``threshold`` (``rule="threshold"``); the share
of tokens found in the greedy reconstruction (GEIA's own criterion) is reported alongside.

Modules: :mod:`.vocabulary` (text ↔ units ↔ ids), :mod:`.model` (the vector-conditioned GRU
decoder), :mod:`.training` (teacher-forced training loop), :mod:`.decoding` (greedy and
ancestral decoding), :mod:`.attacker` (:class:`GenerativeInversion`: fit, scoring, persistence).
"""

from .attacker import GenerativeInversion
from .vocabulary import TokenVocabulary, _contains

__all__ = ["GenerativeInversion", "TokenVocabulary", "_contains"]
