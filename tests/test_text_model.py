"""The learned tagger (private_vectors.text_model): windows over whole documents, BIO decoding,
saving and sha-checked loading, case invariance, and the shipped tagger on a few sentences."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from private_vectors.errors import ArtefactError, InvalidParameterError, InvalidTypeError  # noqa: E402
from private_vectors.text.spans import Span  # noqa: E402
from private_vectors.text_model import TaggerModel, save_tagger, shared_tensors, tensors_sha256  # noqa: E402
from private_vectors.text_model.windows import best_window, decode, plan_windows, words  # noqa: E402

TAGS = ("O", "B-PERSON", "I-PERSON", "B-LOCATION", "I-LOCATION")


def test_windows_cover_every_token_and_never_truncate() -> None:
    for n in (0, 1, 126, 127, 500, 1001):
        ws = plan_windows(n, 128, 96)
        covered = set()
        for w in ws:
            assert w.end - w.start <= 126
            covered |= set(range(w.start, w.end))
        assert covered == set(range(n))
        assert ws[-1].end == n


def test_best_window_gives_each_token_its_most_central_window() -> None:
    ws = plan_windows(300, 128, 96)  # starts 0, 96, 192
    best = best_window(300, ws)
    assert best[0] == 0 and best[299] == len(ws) - 1
    assert best[120] == 1  # 24 tokens from the first window's end, 24 into the second: the second ties, then wins
    assert best[60] == 0 and best[150] == 1


@pytest.mark.parametrize(("window", "stride"), [(2, 1), (128, 0), (128, 127)])
def test_bad_window_or_stride_is_refused(window: int, stride: int) -> None:
    with pytest.raises(ValueError):
        plan_windows(10, window, stride)


def _probs(tags: list[str]) -> np.ndarray:
    p = np.full((len(tags), len(TAGS)), 0.01)
    for i, t in enumerate(tags):
        p[i, TAGS.index(t)] = 0.96
    return p


def test_decode_joins_word_pieces_and_reads_bio_leniently() -> None:
    text = "met anna kowalska in lodz"
    pieces = ["met", "anna", "kowal", "##ska", "in", "lo", "##dz"]
    offsets = [(0, 3), (4, 8), (9, 14), (14, 17), (18, 20), (21, 23), (23, 25)]
    assert words(pieces) == [[0], [1], [2, 3], [4], [5, 6]]
    tags = ["O", "B-PERSON", "I-PERSON", "O", "O", "I-LOCATION", "O"]  # the ## piece's own tag is ignored
    spans = decode(pieces, offsets, _probs(tags), TAGS)
    assert [(text[s:e], label) for s, e, label, _ in spans] == [("anna kowalska", "PERSON"), ("lodz", "LOCATION")]
    assert all(0.9 < score <= 1 for *_, score in spans)


def test_decode_splits_a_b_tag_and_a_type_change() -> None:
    pieces = ["a", "b", "c"]
    offsets = [(0, 1), (2, 3), (4, 5)]
    spans = decode(pieces, offsets, _probs(["B-PERSON", "B-PERSON", "I-LOCATION"]), TAGS)
    assert [(s, e, label) for s, e, label, _ in spans] == [(0, 1, "PERSON"), (2, 3, "PERSON"), (4, 5, "LOCATION")]


@pytest.fixture(scope="module")
def tiny_tagger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer tagger on the encoder's real embeddings and first layer (frozen, shared), its
    second layer and head random."""
    from private_vectors.encoders.sentence_transformers import default_model_path
    from private_vectors.text_model.network import BertTagger

    shared = shared_tensors(default_model_path() / "model.safetensors", 1)
    torch.manual_seed(0)
    net = BertTagger(shared["words.weight"], layers=2, heads=12, intermediate=1536, labels=len(TAGS), frozen=1)
    net.load_state_dict(shared, strict=False)
    return save_tagger(net.eval(), tmp_path_factory.mktemp("tagger") / "t", tags=TAGS, window=32, stride=24,
                       shared_sha256=tensors_sha256(shared), encoder_version="test")


def test_only_the_trained_layers_and_head_are_saved(tiny_tagger: Path) -> None:
    from safetensors.torch import load_file

    names = set(load_file(str(tiny_tagger / "model.safetensors")))
    assert names and all(n.startswith(("layers.1.", "head.")) for n in names)
    assert json.loads((tiny_tagger / "config.json").read_text())["architecture"]["frozen"] == 1


def test_saved_tagger_loads_and_reads_a_long_document_whole(tiny_tagger: Path) -> None:
    model = TaggerModel(tiny_tagger, threshold=0.0)
    text = " ".join(f"word{i} and more text" for i in range(200))  # far beyond one window
    (pieces, offsets, probs), = model.token_probabilities([text])
    assert len(pieces) > 500
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-4)  # every token was read, the last ones too
    assert offsets[-1][1] == len(text)
    spans = model.spans([text, ""])
    assert spans[1] == []
    assert all(isinstance(s, Span) and s.detector == "tagger" and 0 <= s.start < s.end <= len(text) for s in spans[0])


def test_letter_case_does_not_change_the_spans(tiny_tagger: Path) -> None:
    model = TaggerModel(tiny_tagger, threshold=0.0)
    text = "Yesterday Maria Garcia flew from Reykjavik to Lima with John O'Brien."
    got = model.spans([text, text.lower(), text.upper()])
    assert [(s.start, s.end, s.label) for s in got[0]] == [(s.start, s.end, s.label) for s in got[1]] \
        == [(s.start, s.end, s.label) for s in got[2]]


def test_config_is_json_safe_and_names_the_weights(tiny_tagger: Path) -> None:
    model = TaggerModel(tiny_tagger)
    cfg = model.get_config()
    assert json.loads(json.dumps(cfg)) == cfg
    assert cfg["type"] == "tagger" and cfg["labels"] == ["PERSON", "LOCATION"]
    assert cfg["weights_sha256"] == json.loads((tiny_tagger / "config.json").read_text())["weights_sha256"]
    assert "TaggerModel(" in repr(model)


def test_an_altered_weights_file_is_refused(tiny_tagger: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(tiny_tagger, bad)
    data = bytearray((bad / "model.safetensors").read_bytes())
    data[-1] ^= 1
    (bad / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(ArtefactError, match="sha256"):
        TaggerModel(bad)


def test_other_word_embeddings_are_refused(tiny_tagger: Path, tmp_path: Path) -> None:
    bad = tmp_path / "other"
    shutil.copytree(tiny_tagger, bad)
    cfg = json.loads((bad / "config.json").read_text())
    cfg["base"]["shared_sha256"] = "0" * 64
    (bad / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ArtefactError, match="word embeddings"):
        TaggerModel(bad)


def test_a_folder_without_a_tagger_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArtefactError, match=r"config\.json"):
        TaggerModel(tmp_path)


@pytest.mark.parametrize(("kwargs", "param"), [({"threshold": 2}, "threshold"), ({"batch_size": 0}, "batch_size"),
                                               ({"threshold": True}, "threshold")])
def test_bad_parameters_name_themselves(tiny_tagger: Path, kwargs: dict, param: str) -> None:
    with pytest.raises(InvalidParameterError, match=param):
        TaggerModel(tiny_tagger, **kwargs)


def test_bad_types_name_themselves(tiny_tagger: Path) -> None:
    with pytest.raises(InvalidTypeError, match="path"):
        TaggerModel(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="device"):
        TaggerModel(tiny_tagger, device=0)  # type: ignore[arg-type]
    with pytest.raises(InvalidTypeError, match="texts"):
        TaggerModel(tiny_tagger).spans("one text")  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tiny_hf_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A one-layer BERT token classifier with random weights and the encoder's fast tokenizer,
    saved the way Hugging Face saves a model folder."""
    transformers = pytest.importorskip("transformers")
    from private_vectors.encoders.sentence_transformers import default_model_path

    folder = tmp_path_factory.mktemp("hf") / "m"
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=37, max_position_embeddings=64, num_labels=len(labels),
                                     id2label=dict(enumerate(labels)), label2id={x: i for i, x in enumerate(labels)})
    torch.manual_seed(0)
    transformers.BertForTokenClassification(config).save_pretrained(folder)
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(default_model_path() / "tokenizer.json"),
                                               cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]",
                                               unk_token="[UNK]", mask_token="[MASK]", model_max_length=64)
    tok.save_pretrained(folder)
    return folder


def test_bio_tags_map_types_and_schemes() -> None:
    from private_vectors.text_model.hf import bio_tags

    id2label = dict(enumerate(["O", "B-PER", "I-PER", "S-LOC", "E-LOC", "MISC", "B-ORG"]))
    assert bio_tags(id2label, {"PER": "PERSON", "LOC": "LOCATION", "MISC": "OTHER"}) == \
        ["O", "B-PERSON", "I-PERSON", "B-LOCATION", "I-LOCATION", "I-OTHER", "O"]


def test_a_users_hugging_face_model_reads_whole_documents(tiny_hf_model: Path) -> None:
    from private_vectors.text_model import HFTagger

    tagger = HFTagger(tiny_hf_model, {"PER": "PERSON", "LOC": "LOCATION"}, name="my-ner", threshold=0.0, stride=20)
    assert tagger.window == 64 and tagger.labels == ("PERSON", "LOCATION")
    text = " ".join(f"Anna{i} went to Lodz on foot" for i in range(60))  # ten windows or more
    spans = tagger.spans([text, "short"])
    assert all(s.detector == "my-ner" and s.label in ("PERSON", "LOCATION") for s in spans[0])
    assert max(s.end for s in spans[0]) > len(text) // 2  # windows reach the end of the document
    cfg = tagger.get_config()
    assert json.loads(json.dumps(cfg)) == cfg and cfg["label_map"] == {"PER": "PERSON", "LOC": "LOCATION"}


def test_a_hugging_face_model_needs_a_label_map_it_uses(tiny_hf_model: Path, tmp_path: Path) -> None:
    from private_vectors.errors import ModelNotAvailableError
    from private_vectors.text_model import HFTagger

    with pytest.raises(InvalidParameterError, match="label_map"):
        HFTagger(tiny_hf_model, {"ORG": "ORGANIZATION"})
    with pytest.raises(InvalidParameterError, match="label_map"):
        HFTagger(tiny_hf_model, {})
    with pytest.raises(ModelNotAvailableError):
        HFTagger(tmp_path / "nothing-here", {"PER": "PERSON"})


def test_inference_mode_fuses_query_key_value_without_changing_outputs() -> None:
    from private_vectors.text_model.network import BertTagger

    torch.manual_seed(0)
    net = BertTagger(torch.randn(60, 384), layers=2, heads=12, intermediate=64, labels=5, frozen=1).eval()
    ids = torch.randint(1, 60, (3, 20))
    padded = torch.ones_like(ids)
    padded[1, 12:] = 0  # one row shorter: the masked kernel
    full = torch.ones_like(ids)  # no padding: the unmasked kernel
    with torch.inference_mode():
        want = [net(ids, m) for m in (padded, full)]
        net.for_inference()
        assert all(layer._qkv is not None for layer in net.layers)
        got = [net(ids, m) for m in (padded, full)]
    for w, g in zip(want, got, strict=True):
        assert torch.allclose(w, g, atol=1e-5)
    assert torch.allclose(want[0][0], want[1][0], atol=1e-5)  # a row without padding is read alike either way
    net.train()
    assert all(layer._qkv is None for layer in net.layers)  # training never reads a stale fused copy


def test_batches_of_a_token_budget_read_whole_documents_alike(tiny_tagger: Path) -> None:
    from private_vectors.text_model.windows import read_whole

    texts = ["Maria Garcia flew to Lima.", " ".join(f"word{i} text" for i in range(120)), "", "ok",
             "A much longer note about Amelia Okafor. " * 6]
    model = TaggerModel(tiny_tagger, threshold=0.0)
    large = model.token_probabilities(texts)
    model.batch_tokens = 40  # about one window per pass
    for (_, _, p), (_, _, q) in zip(model.token_probabilities(texts), large, strict=True):
        assert p.shape == q.shape and np.allclose(p, q, atol=1e-5)
    seen: list[list[int]] = []

    def run(batch):
        seen.append([w.end - w.start for _, w in batch])
        return [np.full((w.end - w.start, 2), 0.5, dtype=np.float32) for _, w in batch]

    out = read_whole([300, 5, 7, 0, 40], 30, 20, 64, 2, run, batch_tokens=100)
    assert [len(p) for p in out] == [300, 5, 7, 0, 40]
    assert all(len(b) * (b[0] + 2) <= 100 or len(b) == 1 for b in seen)
    assert sum(len(b) for b in seen) == sum(len(plan_windows(n, 32, 20)) for n in (300, 5, 7, 40))  # each once
    with pytest.raises(InvalidParameterError, match="batch_tokens"):
        TaggerModel(tiny_tagger, batch_tokens=0)
