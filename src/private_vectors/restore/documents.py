"""Retrieved documents: their shapes (LangChain, LlamaIndex, FAISS, tuples), and the forms an
answer built from them is restored by (the rule of :meth:`~private_vectors.restore.Restorer.restore_answer`)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import Any

from ..errors import Described, InvalidTypeError
from .records import ESCAPE_LABEL, RESTORE_KEY, RestoreData, _doc_id

_ONE_WORD = re.compile(r"^[^\W\d_]+(?:['’]s)?$")


def _answer_forms(opened: list[tuple[RestoreData, str]]) -> dict[str, tuple[str, bool]]:
    """form -> (original, matched in any case?) under the rule of :meth:`Restorer.restore_answer`."""
    whole: dict[str, set[str]] = {}
    words: dict[str, set[str]] = {}
    shown: dict[str, str] = {}
    for data, _ in opened:
        for r in data.replacements:
            if r.label == ESCAPE_LABEL or not r.written.strip():
                continue
            key = " ".join(r.written.casefold().split())
            shown.setdefault(key, r.written)
            whole.setdefault(key, set()).add(" ".join(r.original.split()))
            if r.label == "PERSON":
                for w, o in _name_word_pairs(r.written, r.original):
                    words.setdefault(w, set()).add(o)
    outside = " \n ".join(_outside_text(data, text) for data, text in opened)
    forms: dict[str, tuple[str, bool]] = {}
    for key, originals in whole.items():
        if len({o.casefold() for o in originals}) == 1 and not _occurs(shown[key], outside, any_case=True):
            value, original = shown[key], next(iter(originals))
            if _ONE_WORD.match(value):  # "Aalborg": as written or in capitals, never as an ordinary word
                forms[value] = forms[value.upper()] = (original, False)
            else:  # several words, an e-mail, a number: in any case
                forms[value] = (original, True)
    for w, originals in words.items():
        if len(originals) == 1 and w.casefold() not in {f.casefold() for f in forms} and not _occurs(w, outside):
            forms[w] = (next(iter(originals)), False)
    return forms


def _name_word_pairs(written: str, original: str) -> list[tuple[str, str]]:
    from ..text.surrogates import NAME_TOKEN, TITLES

    def words(text: str) -> list[str]:
        toks = [re.sub(r"['’]s$", "", m.group(0)) for m in NAME_TOKEN.finditer(text)]
        return [t for t in toks if t.casefold().rstrip(".") not in TITLES]

    a, b = words(written), words(original)
    if len(a) != len(b) or (len(a) == 1 and a[0] == written):  # one bare word: the whole value is the form
        return []
    return [(w, o) for w, o in zip(a, b, strict=True) if len(w) > 1 and len(o) > 1]


def _outside_text(data: RestoreData, text: str) -> str:
    """The stored text with every replaced span blanked (what the documents say in clear)."""
    out, pos = [], 0
    for r in sorted(data.replacements, key=lambda r: r.start):
        out += [text[pos:r.start], " "]
        pos = r.end
    out.append(text[pos:])
    return "".join(out)


def _occurs(form: str, text: str, *, any_case: bool = False) -> bool:
    return re.search(rf"(?<!\w){re.escape(form)}(?!\w)", text, re.IGNORECASE if any_case else 0) is not None


def _as_list(documents: Any) -> list[Any]:
    if isinstance(documents, (str, bytes)) or not isinstance(documents, Iterable):
        raise InvalidTypeError("documents", "a list of retrieved documents", documents)
    return list(documents)


def _parts(doc: Any) -> tuple[str | None, str, Any]:
    """(id, stored text, record) of a LangChain Document, a LlamaIndex node or an (id, text, record) tuple."""
    if isinstance(doc, tuple) and len(doc) == 3:
        return (None if doc[0] is None else _doc_id(doc[0])), doc[1], doc[2]
    node = getattr(doc, "node", None)
    if node is not None and hasattr(node, "metadata"):  # a LlamaIndex NodeWithScore
        doc = node
    meta = getattr(doc, "metadata", None) or {}
    if hasattr(doc, "page_content"):  # LangChain
        doc_id = getattr(doc, "id", None) or meta.get("id")
        text = doc.page_content
    elif hasattr(doc, "node_id") and hasattr(doc, "text"):  # LlamaIndex TextNode
        doc_id, text = doc.node_id, doc.text
    elif hasattr(doc, "id") and isinstance(getattr(doc, "text", None), str):  # e.g. a FAISS StoredDocument
        doc_id, text = doc.id, doc.text
    else:
        raise InvalidTypeError("documents[i]", "a LangChain Document, a LlamaIndex node, a StoredDocument or an "
                               "(id, text, record) tuple", Described(f"<{type(doc).__name__}>"))
    return (None if doc_id is None else _doc_id(doc_id)), text, meta.get(RESTORE_KEY)


def _with_text(doc: Any, text: str) -> Any:
    """A copy of ``doc`` with ``text`` and without its restore record."""
    if isinstance(doc, tuple):
        return (doc[0], text, None)
    holder = getattr(doc, "node", None)
    if holder is not None and hasattr(holder, "metadata"):  # NodeWithScore
        return doc.model_copy(update={"node": _with_text(holder, text)})
    meta = {k: v for k, v in (doc.metadata or {}).items() if k != RESTORE_KEY}
    if dataclasses.is_dataclass(doc):
        return dataclasses.replace(doc, text=text, metadata=meta)
    if hasattr(doc, "page_content"):
        return doc.model_copy(update={"page_content": text, "metadata": meta})
    node = doc.model_copy(update={"metadata": meta})  # a LlamaIndex node (Document keeps its text in a resource)
    node.set_content(text)
    return node

