"""The two steps of a Ray job: :class:`DetectDocuments` (detection and keyed facts), the merge of the
facts into the job's frozen entity index on the driver, :class:`ProtectDocuments` (replacement,
encoding and noise against it), and :func:`protect_dataset`, which runs them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import Described, InvalidTypeError
from .ray_secrets import SecretRef, _require_ray

__all__ = ["DetectDocuments", "ProtectDocuments", "job_index_changes", "merge_index_changes",
           "protect_dataset"]


INDEX_COLUMN = "pv_index"
SPANS_COLUMN = "pv_spans"
META_SPANS_COLUMN = "pv_meta_spans"
FACTS_COLUMN = "pv_facts"
_WEAK = "~"  # the text stage's prefix of an index entry found on weak evidence


def _blocks_rows(blocks: Iterable[Any]) -> Iterable[dict[str, list[Any]]]:
    """Each Ray block (Arrow table or pandas frame) that holds rows (an ``id`` column with values) as
    a dict of column lists."""
    for block in blocks:
        rows = block.to_pydict() if hasattr(block, "to_pydict") else {c: list(block[c]) for c in block.columns}
        if rows.get("id"):
            yield rows


def merge_index_changes(parts: Iterable[Mapping[str, str | None]]) -> dict[str, str | None]:
    """Merge keyed-index changes from many batches, independently of their order.

    For each HMAC: a removal (None: a batch writes the word in lower case, so it is an
    ordinary word) wins; otherwise a strong entry beats a weak one (``~`` prefix); among
    equals, the first label in sorted order.
    """
    out: dict[str, str | None] = {}
    for part in parts:
        for mac, label in part.items():
            if mac not in out:
                out[mac] = label
            else:
                out[mac] = _stronger(out[mac], label)
    return out


def _stronger(a: str | None, b: str | None) -> str | None:
    if a is None or b is None:
        return None
    weak_a, weak_b = a.startswith(_WEAK), b.startswith(_WEAK)
    if weak_a != weak_b:
        return b if weak_a else a
    return min(a, b)


def _batch_index(column: Sequence[Any]) -> dict[str, str | None]:
    return merge_index_changes(json.loads(v) for v in column if v)


class _Worker:
    """One PrivateEmbedding per actor, built from the JSON configuration and the key read on the worker."""

    def __init__(self, config: Mapping[str, Any], secret: SecretRef | None = None, *, id_column: str = "id",
                 text_column: str = "text", metadata_column: str | None = None,
                 index_state: Mapping[str, Any] | None = None) -> None:
        from ..embedding import rebuild
        from ..keys import key_scope

        if not isinstance(config, Mapping):
            raise InvalidTypeError("config", "a PrivateEmbedding.get_config() dict", config)
        ref = secret if secret is not None else SecretRef()
        if not isinstance(ref, SecretRef):
            raise InvalidTypeError("secret", "a SecretRef (an environment variable name or a file path)", Described("<other>"))
        key = ref.read()
        try:
            with key_scope(key):
                self.embedding = rebuild(dict(config), "the Ray job's store", use_cache=False)
        finally:
            key = None
        self.id_column, self.text_column, self.metadata_column = id_column, text_column, metadata_column
        if index_state:
            self.embedding.pipeline.load_query_index_state(dict(index_state))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.embedding!r})"

    @property
    def _job_sanitizer(self) -> Any:
        """The text stage when it runs a job in two steps (a keyed or unkeyed Sanitizer), else None."""
        from ..text.sanitizer import Sanitizer

        san = self.embedding.sanitizer
        return san if isinstance(san, Sanitizer) else None

    def _metas(self, batch: Mapping[str, Any]) -> list[dict[str, Any] | None] | None:
        if self.metadata_column is None:
            return None
        return [None if m is None else dict(m) if isinstance(m, Mapping) else json.loads(m) if m else None
                for m in batch[self.metadata_column]]


def _meta_slots(metas: Sequence[Mapping[str, Any] | None] | None) -> list[tuple[int, str]]:
    """The string metadata values the text stage sanitizes (as the Chroma add path does)."""
    return [(i, k) for i, m in enumerate(metas or []) if m for k, v in m.items() if isinstance(v, str) and v.strip()]


def _spans_json(spans: Sequence[Any] | None) -> str:
    return "null" if spans is None else json.dumps([[s.start, s.end, s.label, s.score, s.detector] for s in spans])


def _spans_of(value: str) -> list[Any] | None:
    from ..text.spans import Span

    rows = json.loads(value)
    return None if rows is None else [Span(int(a), int(b), str(lab), float(sc), str(d)) for a, b, lab, sc, d in rows]


class DetectDocuments(_Worker):
    """Ray Data callable class, the first step of a job: detection, cached, and keyed facts.

    Each output row is its input row plus ``pv_spans`` (the spans detected in the text, JSON;
    the second step reads them instead of detecting again) and, with ``metadata_column``,
    ``pv_meta_spans`` (those of its string metadata values); a batch's keyed facts
    (:class:`~private_vectors.text.job_index.JobFacts`: HMACs, labels and counts, never
    words) are on its first row under ``pv_facts``. :func:`protect_dataset` merges them into the
    job's frozen index. Arguments as :class:`ProtectDocuments`.
    """

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        from ..guard import protected_path

        texts = [str(t) for t in batch[self.text_column]]
        out: dict[str, Any] = {k: np.asarray(v) if not isinstance(v, np.ndarray) else v for k, v in batch.items()}
        from ..text import job_steps

        san = self._job_sanitizer
        if san is None or not texts:
            out[SPANS_COLUMN] = np.array(["null"] * len(texts), dtype=object)
            out[FACTS_COLUMN] = np.array([""] * len(texts), dtype=object)
            return out
        metas = self._metas(batch)
        slots = _meta_slots(metas)
        values = [metas[i][k] for i, k in slots] if slots else []  # type: ignore[index]
        with protected_path():
            items, found = job_steps.detect(san, texts + values)
            facts = job_steps.job_facts(san, items, found) if found is not None else None
        spans = [None] * len(items) if found is None else found
        out[SPANS_COLUMN] = np.array([_spans_json(s) for s in spans[:len(texts)]], dtype=object)
        if self.metadata_column is not None:
            per_row: list[dict[str, str]] = [{} for _ in texts]
            for (i, k), s in zip(slots, spans[len(texts):], strict=True):
                per_row[i][k] = _spans_json(s)
            out[META_SPANS_COLUMN] = np.array([json.dumps(r) for r in per_row], dtype=object)
        first = json.dumps(facts.to_json(), sort_keys=True) if facts is not None else ""
        out[FACTS_COLUMN] = np.array([first] + [""] * (len(texts) - 1), dtype=object)
        return out


class ProtectDocuments(_Worker):
    """Ray Data callable class: raw rows → protected rows (built once per actor).

    With ``job`` (the frozen index of the job, from :func:`protect_dataset`) it is the second
    step: it reads the spans :class:`DetectDocuments` cached and replaces them, and every other
    occurrence of an entity of the job or of earlier jobs, against that index, so a document's
    stored text depends neither on partitioning nor on order. Without ``job`` each batch is a
    job of its own (the second pass sees the batch and earlier jobs only).

    Args:
        config: ``PrivateEmbedding.get_config()`` of the store (JSON; no key).
        secret: where the worker reads the key (:class:`SecretRef`); the key is checked against
            the configuration's check value, so a worker with another key fails at start.
        id_column: the column of document ids (str or int).
        text_column: the column of raw texts.
        metadata_column: optional column of per-document metadata (dicts or JSON strings); its
            string values go through the text stage.
        store_raw_text: keep the raw text as the stored document (default False).
        index_state: the keyed index of earlier jobs (``Sanitizer.get_state()`` dict: HMACs and
            labels, never names) for the second pass; a :class:`ChromaDatasink`'s
            :meth:`~ChromaDatasink.index_state` gives it.
        job: the job's frozen index (``JobIndex.to_json()``: HMACs and labels).
    """

    def __init__(self, config: Mapping[str, Any], secret: SecretRef | None = None, *, id_column: str = "id",
                 text_column: str = "text", metadata_column: str | None = None, store_raw_text: bool = False,
                 index_state: Mapping[str, Any] | None = None, job: Mapping[str, Any] | None = None) -> None:
        super().__init__(config, secret, id_column=id_column, text_column=text_column,
                         metadata_column=metadata_column, index_state=index_state)
        self.store_raw_text = bool(store_raw_text)
        from ..sealed.stores import sealer_of

        self._sealer = sealer_of(self.embedding)  # sealed rows (ray_sealed) under the store's data key
        self.job = None
        if job is not None:
            from ..text.job_index import JobIndex

            self.job = JobIndex.from_json(job)

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        from ..guard import protected_path
        from ..restore import prepare_with_restore, with_records
        from .chroma import _metadata_text

        ids = [str(i) for i in batch[self.id_column]]
        texts = [str(t) for t in batch[self.text_column]]
        metas = self._metas(batch)
        remembered: Mapping[str, str | None] = {}
        exact = refs = None
        with protected_path():
            if self.job is not None and self._job_sanitizer is not None and SPANS_COLUMN in batch:
                stored, vectors, records, metas, remembered, exact, refs = self._second_step(batch, ids, texts, metas)
            else:
                if self._sealer is not None:  # sealed rows: the record needs the exact vectors
                    from ._sealed_prepare import prepare_sealed

                    got = prepare_sealed(self.embedding, texts, ids, store_raw_text=self.store_raw_text)
                    stored, vectors, records, exact, refs = got.kept, got.vectors, got.restores, got.exact, got.refs
                else:
                    stored, vectors, records = prepare_with_restore(self.embedding, texts, ids,
                                                                    store_raw_text=self.store_raw_text)
                if metas is not None:
                    metas = _metadata_text(self.embedding, metas, "sanitize")
                san = self.embedding.sanitizer
                remembered = san.take_changes() if san is not None and getattr(san, "keyed", False) else {}
        index = [json.dumps(remembered, sort_keys=True) if remembered else ""] + [""] * (len(ids) - 1)
        if self._sealer is not None and exact is not None:
            from .ray_sealed import sealed_columns

            return sealed_columns(self._sealer, ids, stored=stored, vectors=vectors, exact=exact, restores=records,
                                  metas=metas, refs=refs, index=index)
        metas = with_records(metas, records, len(ids))
        return {
            "id": np.array(ids, dtype=object),
            "document": np.array(stored if stored is not None else [""] * len(ids), dtype=object),
            "embedding": np.asarray(vectors, dtype=np.float32),
            "metadata": np.array([json.dumps(m, sort_keys=True) if m else "" for m in (metas or [None] * len(ids))],
                                 dtype=object),
            INDEX_COLUMN: np.array(index[: len(ids)], dtype=object),
        }

    def _second_step(self, batch: Mapping[str, Any], ids: list[str], texts: list[str],
                     metas: list[dict[str, Any] | None] | None) -> tuple[Any, Any, Any, Any, dict[str, str], Any, Any]:
        from .._validation import check_stage_output
        from ..restore import seal_records, wants_restore
        from ..sealed.stores import document_refs
        from ..text import job_steps
        from ..text.job_index import merge_values

        san, pipeline = self._job_sanitizer, self.embedding.pipeline
        found = [_spans_of(v) for v in batch[SPANS_COLUMN]]
        slots = _meta_slots(metas)
        if slots:
            cached = [json.loads(v) for v in batch[META_SPANS_COLUMN]]
            found += [_spans_of(cached[i][k]) for i, k in slots]
        values = [metas[i][k] for i, k in slots] if slots else []  # type: ignore[index]
        if any(f is None for f in found):  # a recognizer failed under on_error="redact_all" in the first step
            out, logs, remembered = san.apply(texts + values), None, dict(san.take_changes())
        else:
            out, logs, remembered = job_steps.apply_job(san, job_steps.escaped(texts + values), found, self.job)
        out = check_stage_output(out, texts + values, "job_steps.apply_job")
        sanitized = out[:len(texts)]
        for (i, k), v in zip(slots, out[len(texts):], strict=True):
            metas[i][k] = v  # type: ignore[index]
        got = pipeline.embed_sanitized(sanitized, raw=texts, exact=self._sealer is not None)
        vectors, exact = got if self._sealer is not None else (got, None)
        stored = pipeline.texts_to_store(texts, sanitized, store_raw_text=self.store_raw_text)
        records = None
        if logs is not None and wants_restore(self.embedding, store_raw_text=self.store_raw_text):
            records = seal_records(self.embedding, ids, texts, sanitized, logs[:len(texts)])
        merged: dict[str, str] = {}
        merge_values(merged, {k: v for k, v in remembered.items() if v is not None})
        refs = None  # sealed rows: each document's entries of the index the sink writes at the job's end
        if self._sealer is not None and logs is not None:
            refs = document_refs(self.embedding, texts, logs[:len(texts)], also={*self.job.entries, *merged})
        return stored, vectors, records, metas, merged, exact, refs


def protect_dataset(ds: Any, config: Mapping[str, Any], sink: Any = None, *, secret: SecretRef | None = None,
                    index_state: Mapping[str, Any] | None = None, batch_size: int = 256, concurrency: int = 2,
                    num_cpus: float = 1, id_column: str = "id", text_column: str = "text",
                    metadata_column: str | None = None, store_raw_text: bool = False,
                    protect_args: Mapping[str, Any] | None = None, **map_kwargs: Any) -> tuple[Any, Any]:
    """Protect a dataset as one job, in two steps, so the stored result depends neither on
    partitioning nor on order (the same as ``Sanitizer.apply`` on all its texts at once).

    1. ``map_batches(DetectDocuments)``: detection (cached in the rows) and keyed facts;
       the result is materialized, so nothing is detected twice;
    2. the driver merges the facts (commutatively) into the job's frozen index
       (:class:`~private_vectors.text.job_index.JobIndex`: HMACs and labels);
    3. ``map_batches(ProtectDocuments, job=...)``: replacement, encoding and noise against it
       and ``index_state`` (earlier jobs); with ``sink``, written by ``write_datasink``, and the
       sink writes the entity index once, when every task has finished.

    ``batch_size``, ``concurrency``, ``num_cpus`` and ``map_kwargs`` size both maps;
    ``protect_args`` adds ``map_batches`` arguments of the second step only (e.g.
    ``{"num_gpus": 1}``: the encoder on GPUs, detection on CPUs).

    Returns:
        (the protected dataset, the job's :class:`~private_vectors.text.job_index.JobIndex`)
    """
    from ..text.job_index import JobFacts, JobIndex

    if protect_args is not None and not isinstance(protect_args, Mapping):
        raise InvalidTypeError("protect_args", "a dict of map_batches arguments for the second step", protect_args)
    _require_ray()
    if index_state is None and sink is not None and callable(getattr(sink, "index_state", None)):
        index_state = sink.index_state()
    kwargs = {"config": dict(config), "secret": secret if secret is not None else SecretRef(),
              "id_column": id_column, "text_column": text_column, "metadata_column": metadata_column,
              "index_state": index_state}
    sizing = {"batch_size": batch_size, "concurrency": concurrency, "num_cpus": num_cpus, **map_kwargs}
    detected = ds.map_batches(DetectDocuments, fn_constructor_kwargs=kwargs, **sizing).materialize()
    facts = JobFacts.merged(json.loads(v) for b in detected.select_columns([FACTS_COLUMN]).iter_batches(
        batch_size=4096, batch_format="numpy") for v in b[FACTS_COLUMN] if v)
    job = JobIndex.freeze(facts)
    protected = detected.map_batches(ProtectDocuments, fn_constructor_kwargs={
        **kwargs, "store_raw_text": store_raw_text, "job": job.to_json()}, **{**sizing, **dict(protect_args or {})})
    if sink is not None:
        sink.job, sink.stored_entries = job, dict((index_state or {}).get("entries") or {})
        protected.write_datasink(sink)
    return protected, job


def job_index_changes(remembered: Iterable[Mapping[str, str | None]], job: Any = None,
                      stored: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The entity index changes of a job: with its frozen ``job`` index, those of
    :func:`~private_vectors.text.job_index.job_changes` (against ``stored``, the index of
    earlier jobs); without, the batches' changes merged (:func:`merge_index_changes`)."""
    merged = merge_index_changes(remembered)
    if job is None:
        return merged
    from ..text.job_index import job_changes

    return job_changes(dict(stored or {}), job, {k: v for k, v in merged.items() if v is not None})
