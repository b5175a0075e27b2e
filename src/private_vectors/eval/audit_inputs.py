"""The owner's inputs to an audit: raw documents by id, and optional queries with judgements.

Raw documents come from a JSON-lines, CSV or Parquet file (one row per document, an id
field and a text field), a mapping ``{id: text}`` or a callable ``ids -> texts`` (None for an id
the owner does not have). Ids are compared as strings. Queries are a JSON-lines file
(``id``/``_id`` and ``text``) or a mapping; judgements a BEIR-style TSV (``query-id``,
``corpus-id``, ``score``; a header line is skipped) or a mapping ``{query: {doc: grade}}``.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import Described, InvalidParameterError, InvalidTypeError, ModelNotAvailableError

__all__ = ["load_qrels", "load_queries", "load_raw"]

RawSource = str | Path | Mapping[str, str] | Callable[[list[str]], Sequence[str | None]]


def load_raw(source: RawSource, ids: Sequence[str], *, id_field: str = "id",
             text_field: str = "text") -> dict[str, str]:
    """The owner's raw documents as ``{id: text}`` (in the source's order for a file).

    ``ids`` are the store's ids (a callable is asked for exactly these).

    Raises:
        InvalidParameterError / InvalidTypeError: an unreadable source or a row without the fields.
    """
    if callable(source) and not isinstance(source, (str, Path)):
        got = list(source(list(ids)))
        if len(got) != len(ids):
            raise InvalidParameterError("raw", f"a callable returning {len(ids)} texts (one per id, None if absent)",
                                        Described(f"{len(got)} items"))
        return {i: t for i, t in zip(ids, got, strict=True) if isinstance(t, str) and t}
    if isinstance(source, Mapping):
        return {str(k): v for k, v in source.items() if isinstance(v, str) and v}
    if not isinstance(source, (str, Path)):
        raise InvalidTypeError("raw", "a JSONL/CSV/Parquet path, a mapping id -> text or a callable", source)
    return {str(r[id_field]): str(r[text_field]) for r in _rows(Path(source), id_field, text_field)
            if r.get(text_field)}


def _rows(path: Path, id_field: str, text_field: str) -> list[dict[str, Any]]:
    if not path.is_file():
        raise InvalidParameterError("raw", "an existing JSONL, CSV or Parquet file", Described(str(path)))
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        rows = _jsonl(path, "raw")
    elif suffix in (".csv", ".tsv"):
        with path.open(encoding="utf-8-sig", newline="") as fh:
            rows = list(csv.DictReader(fh, delimiter="\t" if suffix == ".tsv" else ","))
    elif suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as exc:
            raise ModelNotAvailableError("reading Parquet needs pyarrow (pip install pyarrow)") from exc
        rows = pq.read_table(path, columns=[id_field, text_field]).to_pylist()
    else:
        raise InvalidParameterError("raw", "a file ending in .jsonl, .csv, .tsv or .parquet", Described(str(path)))
    for n, r in enumerate(rows):
        if id_field not in r or text_field not in r:
            raise InvalidParameterError("raw", f"rows with the fields {id_field!r} and {text_field!r}",
                                        Described(f"row {n} with fields {sorted(r)}"))
    return rows


def _jsonl(path: Path, name: str) -> list[dict[str, Any]]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError:
                raise InvalidParameterError(name, "one JSON object per line", Described(f"line {n + 1} of {path}")) from None
            if not isinstance(row, dict):
                raise InvalidParameterError(name, "one JSON object per line", Described(f"line {n + 1} of {path}"))
            rows.append(row)
    return rows


def load_queries(source: str | Path | Mapping[str, str]) -> dict[str, str]:
    """Queries ``{id: text}`` from a JSON-lines file (``id`` or ``_id``, ``text``) or a mapping."""
    if isinstance(source, Mapping):
        return {str(k): str(v) for k, v in source.items()}
    out = {}
    for r in _jsonl(Path(source), "queries"):
        qid = r.get("id", r.get("_id"))
        if qid is None or not r.get("text"):
            raise InvalidParameterError("queries", "rows with an 'id' (or '_id') and a 'text'", sorted(r))
        out[str(qid)] = str(r["text"])
    return out


def load_qrels(source: str | Path | Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, int]]:
    """Relevance judgements ``{query: {doc: grade}}`` from a BEIR TSV or a mapping."""
    if isinstance(source, Mapping):
        return {str(q): {str(d): int(g) for d, g in rel.items()} for q, rel in source.items()}
    path = Path(source)
    if not path.is_file():
        raise InvalidParameterError("qrels", "an existing TSV file (query-id, corpus-id, score)", Described(str(path)))
    out: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh):
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3 or (n == 0 and not parts[-1].lstrip("-").isdigit()):
                continue
            out.setdefault(parts[0], {})[parts[-2]] = int(parts[-1])
    return out
