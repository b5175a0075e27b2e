"""The GEIA-style generative inversion attacker: fit, token probabilities, evaluation, persistence.

See :mod:`private_vectors.eval.attacks.generative` for the method (Li et al., 2023, Findings of ACL)
and how sensitive tokens are scored.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...._validation import (
    as_float_matrix,
    check_int,
    check_non_negative_finite,
    check_positive_finite,
    check_probability,
    check_texts,
)
from ....errors import ArtefactError, InvalidParameterError, InvalidTypeError
from ....random import resolve_random_state
from ...metrics import confidence, leakage
from ..base import Attacker, check_token_lists, normalize_token
from .decoding import decode
from .model import build_decoder, resolve_device
from .training import train, unit_weights
from .vocabulary import TokenVocabulary, _contains, token_prior

__all__ = ["GenerativeInversion"]

_SAVE_VERSION = 1


class GenerativeInversion(Attacker):
    """GEIA-style generative inversion with a small decoder trained from scratch.

    Unlike the other attackers it learns from the sentences themselves, so :meth:`fit`
    takes ``(vectors, sentences, token_lists=None)``.

    Args:
        tokenizer: ``"wordpiece"`` (packaged MiniLM tokenizer; default) or ``"word"``.
        embedding_size: token and prefix embedding size.
        hidden_size: GRU hidden size.
        num_layers: GRU layers.
        dropout: dropout on decoder inputs/outputs while training.
        word_dropout: share of teacher-forced input tokens replaced by padding while
            training, so the decoder must read the vector rather than guess from context
            (Bowman et al., 2016).
        max_length: longest unit sequence trained on and generated (longer ones are cut).
        epochs: maximum training epochs.
        batch_size: sentences per step.
        learning_rate: Adam learning rate.
        validation_share: share of the training set held out for early stopping (0 = none).
        patience: epochs without validation improvement before stopping.
        sensitive_weight: loss weight of the units belonging to sensitive tokens when
            ``token_lists`` are given to :meth:`fit` (1 = plain GEIA objective).
        n_samples: samples per vector used for token probabilities.
        temperature: sampling temperature for token probabilities.
        prior_weight: pseudo-samples α of the training token prior mixed into every token's
            probability, p(t) = (S·share(t) + α·π(t)) / (S + α) with S = ``n_samples`` and
            π(t) the share of training sentences holding t (needs ``token_lists`` in
            :meth:`fit`). 0 (default) is plain GEIA: a token no sample spells gets 0. With
            α ≤ 1 a token any sample spells still outranks every token it does not, and the
            prior orders the rest, as the MLC attacker's output biases do.
        rule: when a token counts as recovered for leakage (see :class:`Attacker`):
            ``"top-k"`` (default, like the other attackers: among the sentence's k_s most
            probable words, k_s = its number of distinct sensitive tokens) or ``"threshold"``.
        threshold: probability at which a sensitive token counts as recovered (``rule="threshold"``).
        device: torch device; default CUDA when available, else CPU.
        random_state: None (fresh OS entropy) or an int seed (tests/benchmarks only).
        show_progress: tqdm progress bars.
    """

    name = "generative"
    fit_needs_sentences = True

    def __init__(
        self,
        *,
        tokenizer: str = "wordpiece",
        embedding_size: int = 128,
        hidden_size: int = 384,
        num_layers: int = 1,
        dropout: float = 0.1,
        word_dropout: float = 0.0,
        max_length: int = 48,
        epochs: int = 40,
        batch_size: int = 32,
        learning_rate: float = 3e-3,
        validation_share: float = 0.1,
        patience: int = 4,
        sensitive_weight: float = 1.0,
        n_samples: int = 10,
        temperature: float = 1.0,
        prior_weight: float = 0.0,
        rule: str = "top-k",
        threshold: float = 0.5,
        device: str | None = None,
        random_state: Any = None,
        show_progress: bool = True,
    ) -> None:
        if tokenizer not in ("wordpiece", "word"):
            raise InvalidParameterError("tokenizer", "'wordpiece' or 'word'", tokenizer)
        self.tokenizer = tokenizer
        self.embedding_size = check_int(embedding_size, "embedding_size", minimum=1)
        self.hidden_size = check_int(hidden_size, "hidden_size", minimum=1)
        self.num_layers = check_int(num_layers, "num_layers", minimum=1)
        self.dropout = _check_unit_interval(dropout, "dropout", upper_open=True)
        self.word_dropout = _check_unit_interval(word_dropout, "word_dropout", upper_open=True)
        self.max_length = check_int(max_length, "max_length", minimum=1)
        self.epochs = check_int(epochs, "epochs", minimum=1)
        self.batch_size = check_int(batch_size, "batch_size", minimum=1)
        self.learning_rate = check_positive_finite(learning_rate, "learning_rate")
        self.validation_share = _check_unit_interval(validation_share, "validation_share", upper_open=True)
        self.patience = check_int(patience, "patience", minimum=1)
        self.sensitive_weight = check_positive_finite(sensitive_weight, "sensitive_weight")
        self.n_samples = check_int(n_samples, "n_samples", minimum=1)
        self.temperature = check_positive_finite(temperature, "temperature")
        self.prior_weight = check_non_negative_finite(prior_weight, "prior_weight")
        super().__init__(rule=rule, threshold=threshold)
        if device is not None and not isinstance(device, str):
            raise InvalidTypeError("device", "None or a torch device string", device)
        self.device = device
        self.random_state = random_state
        self.show_progress = bool(show_progress)
        self._random = resolve_random_state(random_state)

    # -- helpers -------------------------------------------------------------------------
    def _seed(self) -> int:
        """A 63-bit torch seed: from the explicit seed, or from OS entropy."""
        if not self._random.seeded:
            return secrets.randbits(63)
        return int(self._random.source().random(1)[0] * (2**63 - 1))

    def _config(self) -> dict[str, Any]:
        return {
            "embedding_size": self.embedding_size, "hidden_size": self.hidden_size,
            "num_layers": self.num_layers, "dropout": self.dropout,
        }

    def _check_fitted(self, attribute: str = "model_") -> None:
        super()._check_fitted(attribute)

    def _vectors(self, vectors: Any) -> np.ndarray:
        dim = getattr(self, "dim_", None)
        mat, _ = as_float_matrix(vectors, "vectors", dim=dim)
        return mat.astype(np.float32)

    # -- training ------------------------------------------------------------------------
    def fit(  # type: ignore[override]  # the generative attacker also needs the sentences
        self, vectors: Any, sentences: Sequence[str], token_lists: Sequence[Sequence[str]] | None = None
    ) -> GenerativeInversion:
        """Train the decoder to reconstruct ``sentences`` from ``vectors``.

        Args:
            vectors: (m, n) vectors as the attacker reads them (perturbed, in the paper's setting).
            sentences: the m sentences they encode.
            token_lists: optional sensitive tokens per sentence: they define the attacker's
                guesses for the top-k rule and, when ``sensitive_weight`` ≠ 1, get that loss weight.

        Returns:
            self, with ``model_``, ``vocab_``, ``dim_``, ``history_`` (per-epoch losses) and
            ``sensitive_vocabulary_`` (words labelled sensitive in ``token_lists``, or None).
        """
        import torch

        X = as_float_matrix(vectors, "vectors")[0].astype(np.float32)  # a refit may change n
        texts = check_texts(sentences, "sentences", allow_empty_batch=False)
        if len(texts) != X.shape[0]:
            raise InvalidParameterError("sentences", f"{X.shape[0]} sentences (one per vector)", texts)
        if token_lists is not None:
            token_lists = check_token_lists(token_lists, len(texts))
        elif self.prior_weight > 0:
            raise InvalidParameterError("token_lists", "the training sensitive tokens (prior_weight > 0 needs "
                                        "their prior)", token_lists)
        seed = self._seed()
        probe = TokenVocabulary(self.tokenizer)
        split = [probe.split(t)[: self.max_length] for t in texts]
        vocab = TokenVocabulary(self.tokenizer, sorted({u for s in split for u in s}))
        vocab._tokenizer = probe._tokenizer
        ids = [[vocab.stoi[u] for u in s] for s in split]
        weights = unit_weights(split, token_lists, vocab, self.sensitive_weight)
        device = resolve_device(self.device)
        with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
            torch.manual_seed(seed)
            model = build_decoder(X.shape[1], len(vocab), self._config()).to(device)
            history = train(model, X, ids, weights, device, np.random.default_rng(seed), epochs=self.epochs,
                            batch_size=self.batch_size, learning_rate=self.learning_rate,
                            validation_share=self.validation_share, patience=self.patience,
                            word_dropout=self.word_dropout, show_progress=self.show_progress)
        model.eval()
        self.model_, self.vocab_, self.dim_, self.history_ = model, vocab, X.shape[1], history
        self.sensitive_vocabulary_ = (None if token_lists is None else
                                      {normalize_token(w) for toks in token_lists for t in toks
                                       for w in vocab.join(vocab.split(t)).split()} - {""})
        self.token_prior_ = None if token_lists is None else token_prior(token_lists, vocab)
        self._sample_seed_ = seed
        return self

    # -- decoding ------------------------------------------------------------------------
    def _decode(self, X: np.ndarray, *, sample: bool, repeats: int = 1, batch: int = 512,
                generator: Any = None, desc: str = "decoding") -> list[list[str]]:
        """Unit sequences decoded greedily or by ancestral sampling (``repeats`` per vector)."""
        return decode(self.model_, self.vocab_, X, sample=sample, max_length=self.max_length,
                      temperature=self.temperature, repeats=repeats, batch=batch, generator=generator, desc=desc,
                      show_progress=self.show_progress)

    def generate(self, vectors: Any) -> list[str]:
        """Greedy reconstructions of the sentences behind ``vectors`` (lower-cased text)."""
        self._check_fitted()
        X = self._vectors(vectors)
        return [self.vocab_.join(u) for u in self._decode(X, sample=False, desc="generating")]

    def sample(self, vectors: Any, n: int | None = None) -> list[list[str]]:
        """``n`` (default ``n_samples``) sampled reconstructions per vector."""
        import torch

        self._check_fitted()
        X = self._vectors(vectors)
        k = self.n_samples if n is None else check_int(n, "n", minimum=1)
        gen = torch.Generator().manual_seed(self._sample_seed_ if self._random.seeded else secrets.randbits(63))
        units = self._decode(X, sample=True, repeats=k, generator=gen, desc="sampling")
        return [[self.vocab_.join(u) for u in units[i * k : (i + 1) * k]] for i in range(X.shape[0])]

    # -- scoring -------------------------------------------------------------------------
    def _generator(self) -> Any:
        import torch

        return torch.Generator().manual_seed(self._sample_seed_ if self._random.seeded else secrets.randbits(63))

    def _samples(self, X: np.ndarray) -> list[list[list[str]]]:
        """``n_samples`` sampled unit sequences per vector."""
        k = self.n_samples
        units = self._decode(X, sample=True, repeats=k, generator=self._generator(), desc="sampling")
        return [units[i * k : (i + 1) * k] for i in range(X.shape[0])]

    def _share_containing(self, samples: list[list[str]], token: str) -> float:
        units = self.vocab_.split(token)
        return float(np.mean([_contains(s, units, self.vocab_) for s in samples]))

    def token_probabilities(self, vectors: Any) -> list[dict[str, float]]:
        """Per vector, {word: share of the ``n_samples`` decoder samples containing it}.

        Words are the whitespace-separated words of the reconstructions, in the tokenizer's
        normal form (lower-cased; WordPiece also strips accents and splits punctuation, so an
        e-mail address appears as its parts). :meth:`evaluate` instead matches each true
        token unit by unit (see :meth:`_truth_probabilities`), which is exact for accents and
        punctuation.
        """
        self._check_fitted()
        out = []
        for samples in self._samples(self._vectors(vectors)):
            probs = {w: self._mix(p, w) for w, p in self._word_shares(samples).items()}
            self._add_prior_guesses(probs, set())
            out.append(probs)
        return out

    def _mix(self, share: float, key: str) -> float:
        """Mix a sample share with the training prior of ``key`` (``prior_weight`` pseudo-samples)."""
        if not self.prior_weight or not self.token_prior_:
            return share
        s, a = float(self.n_samples), self.prior_weight
        return (s * share + a * self.token_prior_.get(key, 0.0)) / (s + a)

    def _add_prior_guesses(self, probs: dict[str, float], spelled: set[tuple[str, ...]]) -> None:
        """Add the most frequent training tokens no sample spelled as guesses (prior_weight > 0)."""
        if not self.prior_weight or not self.token_prior_:
            return
        for key in list(self.token_prior_)[:_PRIOR_GUESSES]:
            if key not in probs and tuple(self.vocab_.split(key)) not in spelled:
                probs[key] = self._mix(0.0, key)

    def _word_shares(self, samples: list[list[str]]) -> dict[str, float]:
        counts: dict[str, int] = {}
        for s in samples:
            for word in {normalize_token(w) for w in self.vocab_.join(s).split()} - {""}:
                counts[word] = counts.get(word, 0) + 1
        return {w: c / len(samples) for w, c in counts.items()}

    def _truth_probabilities(self, vectors: np.ndarray, truth: list[list[str]]) -> list[dict[str, float]]:
        """Probability of each true token (the share of samples containing its units as whole
        words) plus, for the top-k rule, the other words of the samples as competing guesses:
        those the attacker saw labelled sensitive in its training ``token_lists`` (every word
        when it was fitted without them), so template words do not count as guesses, as for
        the MLC attacker whose outputs are its sensitive vocabulary. Words spelling a true
        token are not counted twice."""
        self._check_fitted()
        samples = self._samples(self._vectors(vectors))
        out = []
        for smp, toks in zip(samples, truth, strict=True):
            probs = {t: self._mix(self._share_containing(smp, t), self._canonical(t)) for t in toks}
            if self.rule == "top-k":
                spelled = {tuple(self.vocab_.split(t)) for t in toks}
                known = self.sensitive_vocabulary_
                for word, p in self._word_shares(smp).items():
                    if (word not in probs and tuple(self.vocab_.split(word)) not in spelled
                            and (known is None or word in known)):
                        probs[word] = self._mix(p, word)
                self._add_prior_guesses(probs, spelled | {tuple(self.vocab_.split(w)) for w in probs})
            out.append(probs)
        return out

    def _canonical(self, token: str) -> str:
        return self.vocab_.join(self.vocab_.split(token))

    def evaluate(self, vectors: Any, token_lists: Sequence[Sequence[str]]) -> dict[str, float]:
        """Leakage (eq. 13) and confidence (eq. 14) from the sampled probabilities, plus
        ``greedy_leakage``: the share of true token instances present in the greedy
        reconstruction (GEIA's own criterion)."""
        self._check_fitted()
        X = self._vectors(vectors)
        truth = check_token_lists(token_lists, X.shape[0])
        probs = self._truth_probabilities(X, truth)
        greedy = self._decode(X, sample=False, desc="generating")
        hits = [float(_contains(g, self.vocab_.split(t), self.vocab_)) for g, toks in zip(greedy, truth, strict=True)
                for t in toks]
        return {
            "leakage": leakage(truth, probs, rule=self.rule, threshold=self.threshold),
            "confidence": confidence(truth, probs),
            "greedy_leakage": float(np.mean(hits)) if hits else float("nan"),
            "n_victims": float(X.shape[0]),
            "n_token_instances": float(len(hits)),
        }

    def reconstruction_f1(self, vectors: Any, sentences: Sequence[str]) -> float:
        """Mean unit-level F1 (bag of WordPiece pieces or words) between greedy
        reconstructions and the true ``sentences`` — GEIA's word-F1, a measure of how
        well the whole sentence is inverted, sensitive or not."""
        self._check_fitted()
        texts = check_texts(sentences, "sentences")
        X = self._vectors(vectors)
        if len(texts) != X.shape[0]:
            raise InvalidParameterError("sentences", f"{X.shape[0]} sentences (one per vector)", texts)
        scores = []
        for gen, text in zip(self._decode(X, sample=False, desc="generating"), texts, strict=True):
            ref = self.vocab_.split(text)[: self.max_length]
            common = sum((Counter(gen) & Counter(ref)).values())
            if not gen or not ref or not common:
                scores.append(0.0)
                continue
            precision, recall = common / len(gen), common / len(ref)
            scores.append(2 * precision * recall / (precision + recall))
        return float(np.mean(scores)) if scores else float("nan")

    # -- persistence ---------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Save to a folder: ``config.json`` (parameters, vocabulary) + ``model.safetensors``."""
        from safetensors.torch import save_file

        self._check_fitted()
        folder = Path(path)
        folder.mkdir(parents=True, exist_ok=True)
        params = {k: getattr(self, k) for k in _PARAMS}
        config = {"type": "GenerativeInversion", "version": _SAVE_VERSION, "params": params,
                  "dim": self.dim_, "vocabulary": self.vocab_.itos[3:], "history": self.history_,
                  "sensitive_vocabulary": (None if self.sensitive_vocabulary_ is None
                                           else sorted(self.sensitive_vocabulary_)),
                  "token_prior": self.token_prior_}
        (folder / "config.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        state = {k: v.detach().cpu().contiguous() for k, v in self.model_.state_dict().items()}
        save_file(state, str(folder / "model.safetensors"))
        return folder

    @classmethod
    def load(cls, path: str | Path, *, device: str | None = None, random_state: Any = None) -> GenerativeInversion:
        """Load a folder written by :meth:`save` (safetensors, no pickle)."""
        from safetensors.torch import load_file

        folder = Path(path)
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            state = load_file(str(folder / "model.safetensors"))
        except (OSError, ValueError) as exc:
            raise ArtefactError(f"{folder}: not a saved GenerativeInversion ({exc})") from exc
        if config.get("type") != "GenerativeInversion" or config.get("version") != _SAVE_VERSION:
            raise ArtefactError(f"{folder}: config.json is not a GenerativeInversion v{_SAVE_VERSION} artefact")
        params = dict(config["params"], device=device, random_state=random_state)
        self = cls(**params)
        self.vocab_ = TokenVocabulary(self.tokenizer, config["vocabulary"])
        self.dim_ = int(config["dim"])
        self.history_ = config.get("history", [])
        known = config.get("sensitive_vocabulary")
        self.sensitive_vocabulary_ = None if known is None else set(known)
        self.token_prior_ = config.get("token_prior")
        model = build_decoder(self.dim_, len(self.vocab_), self._config())
        model.load_state_dict(state)
        self.model_ = model.to(resolve_device(device)).eval()
        self._sample_seed_ = self._seed()
        return self


_PARAMS = ("tokenizer", "embedding_size", "hidden_size", "num_layers", "dropout", "word_dropout", "max_length", "epochs",
           "batch_size", "learning_rate", "validation_share", "patience", "sensitive_weight", "n_samples",
           "temperature", "prior_weight", "rule", "threshold", "show_progress")


_PRIOR_GUESSES = 200  # most frequent training tokens offered as guesses, as PriorAttacker's ``top``


def _check_unit_interval(value: Any, name: str, *, upper_open: bool) -> float:
    """A float in [0, 1) (or [0, 1])."""
    out = check_probability(value, name, open_interval=False)
    if upper_open and out >= 1.0:
        raise InvalidParameterError(name, "a number in [0, 1)", value)
    return out
