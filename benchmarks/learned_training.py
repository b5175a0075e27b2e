"""Train CAPE and TextCrafter on the default model, time them, evaluate, optionally ship them.

Embeds the training texts once (cached as .npy outside the repository), then times
``fit`` of each learned encoder on this machine and writes
``benchmarks/results/learned_training.md``. With ``--save-artefacts`` the trained models
become the package's pre-trained artefacts under
``src/private_vectors/data/learned/all-MiniLM-L6-v2/{cape,textcrafter}/``.

Tasks (documented in the README):

* CAPE — Pri-DDXPlus vignettes (``question_init``, test + dev): task y = diagnosis
  (``correct_answer``, 16 classes); private attribute z = sex × age band (<18, 18–44,
  45–64, 65+), which the vignettes state explicitly ("A 46-year-old male …").
* TextCrafter — PII: presidio-research synthetic sentences (label 1 if they have spans)
  plus Faker-generated PII sentences; plain: STS-B train sentences; plain sentences in
  which ``private_vectors.text.light.LightDetector`` finds PII are relabelled (paper eqs. 5–8).

Usage (from the project root)::

    .venv/bin/python benchmarks/learned_training.py --save-artefacts

**Disjoint training data** (``--disjoint``). The harness evaluates on Pri-DDXPlus ``test.json``
and on the presidio sentences (the SciFact/NFCorpus leakage set), and the shipped artefacts
were trained on exactly those. With ``--disjoint`` CAPE trains on ``dev.json`` only and
TextCrafter's PII positives are Faker-generated sentences only (no presidio sentence), so
neither defence has seen the harness's evaluation texts. The artefacts then go to ``--out``
(default ``~/.cache/private_vectors/learned-disjoint/``, not the package); a bench config
points its rows at them with ``"learned_artefacts": {"cape": DIR/cape, "textcrafter": DIR/textcrafter}``::

    .venv/bin/python benchmarks/learned_training.py --disjoint --save-artefacts
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "src" / "private_vectors" / "data" / "learned" / "all-MiniLM-L6-v2"
DEFAULT_RESULTS = ROOT / "benchmarks" / "results" / "learned_training.md"
AGE_BANDS = ((0, 18, "<18"), (18, 45, "18-44"), (45, 65, "45-64"), (65, 200, "65+"))


def age_band(age: int) -> str:
    for lo, hi, name in AGE_BANDS:
        if lo <= age < hi:
            return name
    return "65+"


def load_ddxplus(data: Path, splits: tuple[str, ...] = ("test", "dev")) -> tuple[list[str], list[str], list[str]]:
    texts, y, z = [], [], []
    for split in splits:
        with open(data / "medical" / "pri-ddxplus" / f"{split}.json", encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    r = json.loads(line)
                    texts.append(r["question_init"])
                    y.append(r["correct_answer"])
                    z.append(f"{r['sex']}/{age_band(int(r['age']))}")
    return texts, y, z


def load_pii_sets(data: Path, n_plain: int, n_faker: int, seed: int,
                  presidio: bool = True) -> tuple[list[str], np.ndarray]:
    from private_vectors.eval.synthetic import synthetic_pii_sentences

    texts: list[str] = []
    labels: list[int] = []
    if presidio:  # the harness's SciFact/NFCorpus leakage set: left out with --disjoint
        rows = json.loads((data / "pii" / "synth_dataset_v2.json").read_text(encoding="utf-8"))
        texts = [" ".join(r["full_text"].split()) for r in rows]
        labels = [1 if r["spans"] else 0 for r in rows]
    texts += synthetic_pii_sentences(n_faker, seed=seed)
    labels += [1] * n_faker
    plain: list[str] = []
    with open(data / "sts" / "STSBenchmark" / "sts-train.csv", encoding="utf-8") as fh:
        for r in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if len(r) >= 7:
                plain.extend([r[5], r[6]])
    plain = sorted(set(p.strip() for p in plain if p.strip()))
    pick = np.random.default_rng(seed).choice(len(plain), size=min(n_plain, len(plain)), replace=False)
    texts += [plain[i] for i in sorted(pick)]
    labels += [0] * len(pick)
    return texts, np.asarray(labels, dtype=np.int64)


def embed_cached(encoder, texts: list[str], cache: Path, tag: str) -> tuple[np.ndarray, float, bool]:
    """Embeddings of ``texts`` from the cache, or computed (and timed) once and cached.

    Returns (embeddings, seconds the embedding took when it was computed, read-from-cache flag).
    """
    key = hashlib.sha256(("\n".join(texts) + encoder.model_id).encode()).hexdigest()[:16]
    path = cache / f"{tag}-{key}.npy"
    meta = path.with_suffix(".json")
    if path.exists():
        seconds = json.loads(meta.read_text())["seconds"] if meta.exists() else float("nan")
        return np.load(path), seconds, True
    start = time.perf_counter()
    emb = encoder.encode(texts)
    seconds = time.perf_counter() - start
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, emb)
    meta.write_text(json.dumps({"seconds": seconds, "n_texts": len(texts)}))
    return emb, seconds, False


def split(m: int, seed: int, test_share: float = 0.2) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(seed).permutation(m)
    k = round(m * test_share)
    return np.sort(order[k:]), np.sort(order[:k])


def probe_accuracy(train_X: np.ndarray, train_y: list, test_X: np.ndarray, test_y: list) -> float:
    """Accuracy of a fresh logistic-regression attacker (sklearn) trained on stored vectors."""
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(max_iter=2000)
    clf.fit(train_X, train_y)
    return float(clf.score(test_X, test_y))


def run_cape(X, y, z, tr, te, args, encoder) -> tuple[object, dict]:
    from private_vectors.mechanisms import CapeEncoder

    y, z = np.asarray(y), np.asarray(z)
    res: dict = {"n_train": len(tr), "n_test": len(te), "n_task_classes": len(set(y)), "n_private_classes": len(set(z))}
    res["majority_z"] = float(np.mean(z[te] == max(set(z[tr]), key=list(z[tr]).count)))
    res["probe_z_clean"] = probe_accuracy(X[tr], z[tr], X[te], z[te])
    res["probe_y_clean"] = probe_accuracy(X[tr], y[tr], X[te], y[te])
    models = {}
    for eps in (args.cape_epsilon, args.cape_epsilon_high):
        for lam in (args.cape_lambda, 0.0):
            start = time.perf_counter()
            model = CapeEncoder(epsilon=eps, out_dim=args.cape_out_dim, lambda_adv=lam,
                                epochs=args.cape_epochs, random_state=args.seed, show_progress=True)
            shipped = eps == args.cape_epsilon and lam == args.cape_lambda
            model.fit(X[tr], y[tr], z[tr], encoder=encoder if shipped else None)
            seconds = time.perf_counter() - start
            rng = np.random.default_rng(args.seed + 1)
            P_tr, P_te = model.perturb(X[tr], rng=rng), model.perturb(X[te], rng=rng)
            res[f"eps={eps:g},lambda={lam:g}"] = {
                "fit_seconds": round(seconds, 2),
                "task_head_accuracy_test": float(np.mean(model.predict_task(X[te], rng=rng) == y[te])),
                "adversary_head_accuracy_test": float(np.mean(model.predict_private(X[te], rng=rng) == z[te])),
                "probe_y_private": probe_accuracy(P_tr, y[tr], P_te, y[te]),
                "probe_z_private": probe_accuracy(P_tr, z[tr], P_te, z[te]),
                "probe_z_projection_no_noise": probe_accuracy(model.transform_query(X[tr]), z[tr],
                                                              model.transform_query(X[te]), z[te]),
            }
            models[(eps, lam)] = model
    return models[(args.cape_epsilon, args.cape_lambda)], res


def run_textcrafter(X, labels, texts, tr, te, args, encoder) -> tuple[object, dict]:
    from private_vectors.mechanisms import TextCrafter
    from private_vectors.mechanisms.pii_classifier import relabel_pii
    from private_vectors.text.light import LightDetector

    start = time.perf_counter()
    fixed, flipped = relabel_pii(texts, labels, LightDetector())
    relabel_seconds = time.perf_counter() - start
    radius = TextCrafter.radius_from_eps(args.tc_eps, X.shape[1])
    start = time.perf_counter()
    model = TextCrafter(radius=radius, epochs=args.tc_epochs, random_state=args.seed, show_progress=True)
    model.fit(X[tr], fixed[tr], encoder=encoder)
    seconds = time.perf_counter() - start
    rng = np.random.default_rng(args.seed + 2)
    clf = model.pii_classifier_
    pii_te = te[fixed[te] == 1]
    adv = np.asarray(model.perturb(X[pii_te], rng=rng), dtype=np.float64)
    iso = X[pii_te] + radius * _unit_rows(rng.standard_normal(adv.shape))
    cos = lambda A, B: float(np.mean(np.sum(A * B, 1) / np.linalg.norm(A, axis=1) / np.linalg.norm(B, axis=1)))  # noqa: E731
    res = {
        "n_texts": len(texts), "n_pii_after_relabel": int(fixed.sum()), "relabelled_plain_to_pii": flipped,
        "relabel_seconds": round(relabel_seconds, 2), "radius": radius, "eps": args.tc_eps,
        "n_train": len(tr), "n_test": len(te), "fit_seconds": round(seconds, 2),
        "pii_classifier_seconds": model.training_["pii_classifier_seconds"],
        "pii_classifier_test_accuracy": clf.score(X[te], fixed[te]),
        "p_pii_clean (PII test sentences)": float(np.mean(clf.predict_proba(X[pii_te]))),
        "p_pii_textcrafter": float(np.mean(clf.predict_proba(adv))),
        "p_pii_isotropic_same_radius": float(np.mean(clf.predict_proba(iso))),
        "cosine_to_clean_textcrafter": cos(adv, X[pii_te]),
        "cosine_to_clean_isotropic": cos(iso, X[pii_te]),
        "max_norm_error": float(np.max(np.abs(np.linalg.norm(adv - X[pii_te], axis=1) - radius))),
        "first_epoch": model.history_[0], "last_epoch": model.history_[-1],
    }
    return model, res


def _unit_rows(G: np.ndarray) -> np.ndarray:
    return G / np.linalg.norm(G, axis=1, keepdims=True)


def _cached_note(info: dict, key: str) -> str:
    return " (measured in an earlier run, read from the cache in this one)" if info["embed_cached"][key] else ""


def _cape_reading(c: dict, a: dict) -> str:
    """A plain-language reading of the CAPE table, computed from its numbers."""
    lo0, lo1 = c[f"eps={a['cape_epsilon']:g},lambda=0"], c[f"eps={a['cape_epsilon']:g},lambda={a['cape_lambda']:g}"]
    hi0 = c[f"eps={a['cape_epsilon_high']:g},lambda=0"]
    hi1 = c[f"eps={a['cape_epsilon_high']:g},lambda={a['cape_lambda']:g}"]
    chance = 1.0 / c["n_private_classes"]
    return (
        f"Reading: at ε={a['cape_epsilon']:g} a fresh probe recovers z with accuracy {lo0['probe_z_private']:.3f} "
        f"(λ=0) / {lo1['probe_z_private']:.3f} (λ={a['cape_lambda']:g}) against a majority rate of {c['majority_z']:.3f}: "
        f"the noise does most of the hiding, and the adversary changes task-head accuracy from "
        f"{lo0['task_head_accuracy_test']:.3f} to {lo1['task_head_accuracy_test']:.3f}. "
        f"At ε={a['cape_epsilon_high']:g} (little noise) the gradient-reversal adversary drives CAPE's own adversary head "
        f"from {hi0['adversary_head_accuracy_test']:.3f} to {hi1['adversary_head_accuracy_test']:.3f} "
        f"({'below' if hi1['adversary_head_accuracy_test'] < chance else 'above'} the uniform rate {chance:.3f}), "
        f"while a freshly trained probe on the stored vectors gets {hi1['probe_z_private']:.3f} vs "
        f"{hi0['probe_z_private']:.3f} without the adversary: adversarial training hides z from the adversary it "
        "trains against, not necessarily from a new one (cf. Elazar & Goldberg 2018)."
    )


def write_markdown(path: Path, info: dict) -> None:
    c, t = info["cape"], info["textcrafter"]
    a = info["args"]
    main = f"eps={a['cape_epsilon']:g},lambda={a['cape_lambda']:g}"
    main0 = f"eps={a['cape_epsilon']:g},lambda=0"
    rows = []
    for eps in (a["cape_epsilon"], a["cape_epsilon_high"]):
        for lam in (0.0, a["cape_lambda"]):
            r = c[f"eps={eps:g},lambda={lam:g}"]
            rows.append(f"| CAPE ε={eps:g}, λ={lam:g} | {r['probe_y_private']:.3f} | {r['probe_z_private']:.3f} | "
                        f"{r['probe_z_projection_no_noise']:.3f} | {r['task_head_accuracy_test']:.3f} | "
                        f"{r['adversary_head_accuracy_test']:.3f} |")
    lines = [
        "# Training time and sanity figures of the learned encoders (CAPE, TextCrafter)",
        "",
        f"Command: `{info['command']}`",
        "",
        f"Machine: {info['machine']}; torch {info['torch']} on {info['device']}; torch threads during fit: 1 "
        "(the heads are tiny; see `small_model_threads`). The machine is shared with other jobs, so times are "
        "upper bounds.",
        "",
        "Encoder: all-MiniLM-L6-v2 (384-d). Texts are embedded once and cached (.npy outside the repository); "
        f"embedding took {info['embed_seconds']['cape']} s for the {c['n_train'] + c['n_test']} CAPE texts"
        f"{_cached_note(info, 'cape')} and {info['embed_seconds']['textcrafter']} s for the {t['n_texts']} "
        f"TextCrafter texts{_cached_note(info, 'textcrafter')}.",
        "",
        "## Training time (fit only, on cached embeddings)",
        "",
        "| encoder | training rows | epochs | fit time (s) |",
        "|---|---|---|---|",
        f"| CAPE (λ={a['cape_lambda']:g}, ε={a['cape_epsilon']:g}, out_dim={a['cape_out_dim']}) — shipped "
        f"| {c['n_train']} | {a['cape_epochs']} | {c[main]['fit_seconds']} |",
        f"| CAPE without adversary (λ=0) | {c['n_train']} | {a['cape_epochs']} | {c[main0]['fit_seconds']} |",
        f"| TextCrafter (PII classifier + k-means + REINFORCE, radius {t['radius']:.4f}) — shipped | {t['n_train']} | "
        f"{a['tc_epochs']} | {t['fit_seconds']} (of which PII classifier {t['pii_classifier_seconds']}) |",
        "",
        "## CAPE on Pri-DDXPlus (task = diagnosis, private attribute z = sex × age band)",
        "",
        f"{c['n_train']} train / {c['n_test']} test vignettes, {c['n_task_classes']} diagnoses, "
        f"{c['n_private_classes']} private classes. Probes are fresh logistic regressions trained on the stored vectors "
        "of the train split and scored on the test split (an attacker who knows the attribute for some records); "
        "the adversary head is CAPE's own, trained jointly.",
        "",
        "| vectors | probe y (stored) | probe z (stored) | probe z (projection, no noise) | task head | adversary head |",
        "|---|---|---|---|---|---|",
        f"| clean embeddings | {c['probe_y_clean']:.3f} | {c['probe_z_clean']:.3f} | – | – | – |",
        *rows,
        f"| majority class of z | – | {c['majority_z']:.3f} | – | – | – |",
        "",
        _cape_reading(c, a),
        "",
    ]
    lines += [
        "## TextCrafter (PII vs plain sentences)",
        "",
        f"{t['n_texts']} texts; {t['relabelled_plain_to_pii']} plain sentences relabelled as PII by `private_vectors.text.light` "
        f"({t['relabel_seconds']} s); {t['n_pii_after_relabel']} PII after relabelling. eps {t['eps']:g} in the project's "
        f"unit (1/√n of L2) = radius {t['radius']:.4f}.",
        "",
        "| figure | value |",
        "|---|---|",
        f"| PII classifier p_Φ accuracy (held-out) | {t['pii_classifier_test_accuracy']:.3f} |",
        f"| mean p_Φ on held-out PII sentences, clean | {t['p_pii_clean (PII test sentences)']:.3f} |",
        f"| … after TextCrafter | {t['p_pii_textcrafter']:.3f} |",
        f"| … after isotropic noise of the same radius | {t['p_pii_isotropic_same_radius']:.3f} |",
        f"| mean cosine to clean, TextCrafter | {t['cosine_to_clean_textcrafter']:.3f} |",
        f"| mean cosine to clean, isotropic | {t['cosine_to_clean_isotropic']:.3f} |",
        f"| max abs(‖f_adv − f₀‖ − radius) | {t['max_norm_error']:.2e} |",
        f"| mean reward, first → last epoch | {t['first_epoch']['reward']:.4f} → {t['last_epoch']['reward']:.4f} |",
        "",
        "p_Φ is the classifier the policy was trained against (white-box for the policy), so the drop in p_Φ shows "
        "the policy learned its objective; it is not an independent privacy measurement — the attack benchmarks are.",
        "",
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--cache-dir", type=Path, default=Path.home() / ".cache" / "private_vectors" / "learned_training")
    ap.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where --save-artefacts writes")
    ap.add_argument("--save-artefacts", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cape-epsilon", type=float, default=10.0)
    ap.add_argument("--cape-out-dim", type=int, default=128)
    ap.add_argument("--cape-lambda", type=float, default=1.0)
    ap.add_argument("--cape-epsilon-high", type=float, default=1000.0,
                    help="a second, low-noise ε evaluated (not shipped) to show the adversary's effect")
    ap.add_argument("--cape-epochs", type=int, default=30)
    ap.add_argument("--tc-eps", type=float, default=10.0, help="project eps; radius = eps/sqrt(n)")
    ap.add_argument("--tc-epochs", type=int, default=30)
    ap.add_argument("--n-plain", type=int, default=2500)
    ap.add_argument("--n-faker", type=int, default=600)
    ap.add_argument("--disjoint", action="store_true",
                    help="train only on data the harness does not evaluate on (CAPE: dev.json; TextCrafter: "
                         "Faker PII sentences, no presidio sentence); artefacts default to a cache folder")
    args = ap.parse_args(argv)
    if args.disjoint:
        if args.out == DEFAULT_OUT:
            args.out = Path.home() / ".cache" / "private_vectors" / "learned-disjoint"
        if args.results == DEFAULT_RESULTS:
            args.results = DEFAULT_RESULTS.with_name("learned_training_disjoint.md")
        if args.n_faker == 600:
            args.n_faker = 2100  # the 1 500 presidio sentences replaced by Faker ones

    import torch

    from private_vectors.encoders import load_encoder

    if not args.data.exists():
        print(f"data folder {args.data} not found", file=sys.stderr)
        return 2
    encoder = load_encoder(None)
    cape_texts, y, z = load_ddxplus(args.data, ("dev",) if args.disjoint else ("test", "dev"))
    tc_texts, labels = load_pii_sets(args.data, args.n_plain, args.n_faker, args.seed, presidio=not args.disjoint)
    Xc, sec_c, cached_c = embed_cached(encoder, cape_texts, args.cache_dir, "ddxplus")
    Xt, sec_t, cached_t = embed_cached(encoder, tc_texts, args.cache_dir, "pii")
    Xc, Xt = Xc.astype(np.float64), Xt.astype(np.float64)

    tr, te = split(len(cape_texts), args.seed)
    cape, cape_res = run_cape(Xc, y, z, tr, te, args, encoder)
    tr2, te2 = split(len(tc_texts), args.seed)
    tc, tc_res = run_textcrafter(Xt, labels, tc_texts, tr2, te2, args, encoder)

    info = {
        "command": ".venv/bin/python benchmarks/learned_training.py" + (" " + " ".join(argv if argv is not None else sys.argv[1:])).rstrip(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, load average "
                   f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} at the end",
        "torch": torch.__version__, "device": cape.device,
        "embed_seconds": {"cape": round(sec_c, 1), "textcrafter": round(sec_t, 1)},
        "embed_cached": {"cape": cached_c, "textcrafter": cached_t},
        "args": vars(args) | {"data": str(args.data), "cache_dir": str(args.cache_dir), "results": str(args.results),
                              "out": str(args.out)},
        "cape": cape_res, "textcrafter": tc_res,
    }
    print(json.dumps({k: info[k] for k in ("embed_seconds", "cape", "textcrafter")}, indent=2, default=str))
    write_markdown(args.results, info)
    if args.save_artefacts:
        cape.save(args.out / "cape")
        tc.save(args.out / "textcrafter")
        print(f"saved artefacts under {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
