"""An add shows one progress bar counted in documents (each once), only when it runs long, and
``PRIVATE_VECTORS_PROGRESS=0`` turns it off. The bars are recorded through a stand-in for tqdm;
one test renders the real one."""

from __future__ import annotations

import time
from typing import ClassVar

import pytest

import private_vectors._progress as progress
from private_vectors import PrivateEmbedding

KEY = "progress-test-key-7Yq2Wx9Rt4Zp"
TEXTS = [f"Note {i}: Maria Lopez flew to Madrid on Monday." for i in range(150)]


class Recorder:
    """Stands in for tqdm: what each bar was told."""

    bars: ClassVar[list[Recorder]] = []

    def __init__(self, *, total, desc, unit, delay, leave):
        self.total, self.desc, self.unit, self.delay, self.leave = total, desc, unit, delay, leave
        self.n, self.updates, self.postfix, self.closed = 0, [], [], False
        Recorder.bars.append(self)

    def update(self, k=1):
        self.updates.append(k)
        self.n += k

    def set_postfix_str(self, text, refresh=True):
        self.postfix.append(text)

    format_dict: ClassVar[dict] = {"elapsed": 0.0}

    def refresh(self):
        pass

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    import tqdm.auto

    try:  # imported before the stand-in: Hugging Face's tqdm subclasses the real one at import
        import presidio_analyzer  # noqa: F401
    except ImportError:
        pass
    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    Recorder.bars = []
    return Recorder.bars


def _ef(**kw):
    return PrivateEmbedding(concept="PII", model="fake:16", eps=10, **kw)


def _one_bar(bars, n):
    assert len(bars) == 1, f"{len(bars)} bars for one add"
    bar = bars[0]
    assert (bar.total, bar.unit, bar.n, sum(bar.updates)) == (n, "doc", n, n)  # each document counted once
    assert bar.closed and not bar.leave and bar.delay == progress.PROGRESS_DELAY > 0
    assert any(p.startswith("detecting") for p in bar.postfix) and bar.postfix[-1] == "encoding"
    assert len([k for k in bar.updates if k]) >= 3  # it moves in steps, not at the end only
    return bar


def test_an_add_of_any_size_has_one_bar_counted_in_documents(bars):
    _ef().embed_documents(TEXTS)
    _one_bar(bars, len(TEXTS))
    bars.clear()
    _ef().embed_documents(TEXTS[:5])  # a small add too (it shows only if it runs past the delay)
    assert len(bars) == 1 and bars[0].n == 5


def test_queries_and_empty_adds_have_no_bar(bars):
    ef = _ef()
    ef.embed_query("who flew to Madrid?")
    ef.embed_query_array(TEXTS[:100])
    ef.embed_documents([])
    assert bars == []


def test_the_switch_turns_it_off(bars, monkeypatch):
    for off in ("0", "false", "OFF", "no"):
        monkeypatch.setenv(progress.PROGRESS_ENV, off)
        _ef().embed_documents(TEXTS[:80])
    assert bars == []
    monkeypatch.setenv(progress.PROGRESS_ENV, "1")
    _ef().embed_documents(TEXTS[:80])
    assert len(bars) == 1


def test_the_store_paths_show_one_bar(bars, tmp_path):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors.chroma import add_documents, create_collection

    col = create_collection(chromadb.PersistentClient(path=str(tmp_path / "c")), "progress", _ef(key=KEY))
    add_documents(col, ids=[f"d{i}" for i in range(len(TEXTS))], documents=TEXTS)  # keyed: restore records
    _one_bar(bars, len(TEXTS))
    bars.clear()
    from private_vectors.integrations.faiss import PrivateFaissIndex

    PrivateFaissIndex(_ef()).add_texts(TEXTS)
    _one_bar(bars, len(TEXTS))
    bars.clear()
    pytest.importorskip("langchain_chroma")
    from private_vectors.langchain import Chroma

    for key in (None, KEY):
        Chroma(collection_name=f"p{bool(key)}", persist_directory=str(tmp_path / f"lc{bool(key)}"),
               embedding_function=_ef(key=key)).add_texts(TEXTS)
        _one_bar(bars, len(TEXTS))
        bars.clear()


def test_a_long_add_renders_a_bar_and_a_short_one_prints_nothing(monkeypatch, capsys):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)

    def slow(texts):
        time.sleep(0.05)
        return [[float(len(t)), 1.0, 0.5, 0.25] for t in texts]

    ef = PrivateEmbedding(concept="PII", model=slow, eps=10)
    monkeypatch.setattr(progress, "PROGRESS_DELAY", 600.0)
    ef.embed_documents(TEXTS)  # an add shorter than the delay
    assert "private_vectors" not in capsys.readouterr().err
    monkeypatch.setattr(progress, "PROGRESS_DELAY", 0.01)
    ef.embed_documents(TEXTS)
    err = capsys.readouterr().err
    assert "private_vectors" in err and f"{len(TEXTS)}/{len(TEXTS)}" in err and "doc/s" in err
