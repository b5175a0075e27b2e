"""The text stage's public registry: the user's own recognizers (a presidio PatternRecognizer, a
presidio YAML file), rules switched off, per-label thresholds, explanations (memory only) and a
store naming a recognizer the reopening process has not registered.

Cheap: the recognizers are the regex and place recognizers and the user's own (no spaCy model),
the stores use the fake encoder; the store reopened by another process is a slow test.
"""

from __future__ import annotations

import logging
import pickle

import pytest

pytest.importorskip("presidio_analyzer")

from presidio_analyzer import Pattern, PatternRecognizer

from private_vectors.errors import ConfigMismatchError, InvalidParameterError
from private_vectors.text import Sanitizer, registry
from private_vectors.text.recognizers.places import PlaceDetector
from private_vectors.text.recognizers.regex import RegexDetector

YAML = """\
recognizers:
  -
    name: "ticket-numbers"
    supported_language: "en"
    supported_entity: "TICKET"
    patterns:
      -
        name: "ticket"
        regex: "\\\\bTCK-[0-9]{5}\\\\b"
        score: 0.8
  -
    name: "zip-de"
    supported_language: "de"
    supported_entity: "ZIP"
    patterns:
      -
        name: "zip"
        regex: "\\\\b[0-9]{5}\\\\b"
        score: 0.5
"""


def _employee_ids() -> PatternRecognizer:
    return PatternRecognizer(supported_entity="EMPLOYEE_ID", name="employee-ids",
                             patterns=[Pattern("employee id", r"\bEMP-\d{6}\b", 0.9)])


@pytest.fixture(scope="module")
def places() -> PlaceDetector:
    return PlaceDetector()


@pytest.fixture(autouse=True)
def _registered():
    registry.add_recognizer(_employee_ids(), replace=True)
    yield
    for name in ("employee-ids", "ticket-numbers"):
        if name in registry.recognizers():
            registry.remove_recognizer(name)


def _stage(places: PlaceDetector, **kw) -> Sanitizer:
    return Sanitizer("PII", detectors=[RegexDetector(), places], timeout=None, **kw)


def test_a_presidio_pattern_recognizer_added_by_name_replaces_and_is_recorded_by_name(places):
    s = _stage(places, recognizers=["employee-ids"])
    assert s.apply(["Badge EMP-204981 was revoked; call +1 415 555 0199."]) == [
        "Badge <EMPLOYEE_ID> was revoked; call <PHONE_NUMBER>."]
    recorded = s.get_config()["detectors"][-1]
    assert recorded == {"type": "registered", "name": "employee-ids", "version": _employee_ids().version}
    assert "EMP" not in str(s.get_config())  # the pattern stays in the user's code
    again = Sanitizer.from_config(s.get_config())
    assert again.apply(["EMP-777777 left."]) == ["<EMPLOYEE_ID> left."]


def test_without_the_recognizer_the_same_text_keeps_the_id(places):
    assert _stage(places).apply(["Badge EMP-204981 was revoked."]) == ["Badge EMP-204981 was revoked."]


def test_a_yaml_recognizer_is_added_by_name_in_presidios_format(tmp_path, places):
    path = tmp_path / "recognizers.yaml"
    path.write_text(YAML, encoding="utf-8")
    assert registry.add_recognizers_from_yaml(path) == ["ticket-numbers"]  # the German one is left out
    s = _stage(places, recognizers=["ticket-numbers"])
    assert s.apply(["Ticket TCK-20931 is closed."]) == ["Ticket <TICKET> is closed."]
    with pytest.raises(InvalidParameterError, match="path"):
        registry.add_recognizers_from_yaml(tmp_path / "missing.yaml")


def test_registry_refuses_a_taken_or_built_in_name_and_an_unknown_one():
    with pytest.raises(InvalidParameterError, match="name"):
        registry.add_recognizer(_employee_ids())  # another object under a taken name
    with pytest.raises(InvalidParameterError, match="name"):
        registry.add_recognizer(_employee_ids(), name="regex")
    with pytest.raises(ConfigMismatchError, match="no-such-recognizer"):
        Sanitizer("PII", detectors=[RegexDetector()], recognizers=["no-such-recognizer"])


_FOLLOW_UP = " The cohort was followed for ten years and outcomes were recorded at each visit." * 8


def test_a_built_in_rule_switched_off_changes_the_output_and_is_recorded(places):
    # a country, in a document of 100 words or more about no one: kept
    text = ["Denmark is a small country." + _FOLLOW_UP]
    replaced = ["<LOCATION> is a small country." + _FOLLOW_UP]
    assert _stage(places).apply(text) == text
    off = _stage(places, rules_off=["context-free"])
    assert off.apply(text) == replaced
    names = [r["name"] for r in off.get_config()["rules"]]
    assert "context-free" not in names and "allow-list" in names
    assert Sanitizer.from_config(off.get_config()).apply(text) == replaced
    with pytest.raises(InvalidParameterError, match="rules_off"):
        _stage(places, rules_off=["no-such-rule"])


def test_the_config_records_the_ordered_recognizers_rules_and_precedence(places):
    from private_vectors.text.precedence import PRECEDENCE
    from private_vectors.text.rules import DEFAULT_RULESET, RULESETS

    cfg = _stage(places).get_config()
    assert [(d["type"], d["version"]) for d in cfg["detectors"]] == [("regex", RegexDetector.version),
                                                                       ("places", PlaceDetector.version)]
    assert [r["name"] for r in cfg["rules"]] == list(RULESETS[DEFAULT_RULESET])
    assert all(r["version"] for r in cfg["rules"])
    assert cfg["precedence"] == list(PRECEDENCE) == ["regex", "keyed-index", "score", "length"]
    # a stored config of this version written before the precedence was recorded compares equal
    stage = _stage(places)
    older = {k: v for k, v in cfg.items() if k != "precedence"}
    assert stage.hide_config(older)["precedence"] == cfg["precedence"]
    assert "precedence" not in stage.hide_config({**older, "version": 2})


def test_a_per_label_threshold_drops_weaker_spans_of_that_label_only(places):
    text = ["She loves Denmark; mail ann@example.org."]
    assert _stage(places).apply(text) == ["She loves <LOCATION>; mail <EMAIL_ADDRESS>."]
    strict = _stage(places, thresholds={"LOCATION": 0.6})  # the place list scores 0.55
    assert strict.apply(text) == ["She loves Denmark; mail <EMAIL_ADDRESS>."]
    assert strict.get_config()["thresholds"] == {"LOCATION": 0.6}
    with pytest.raises(InvalidParameterError, match="thresholds"):
        _stage(places, thresholds={"LOCATION": 2})


def test_an_explanation_names_the_rule_that_kept_a_span_and_the_one_that_dropped_it(places):
    s = _stage(places)
    kept = s.explain("She loves Denmark." + _FOLLOW_UP)
    decisions = kept.why("Denmark")
    assert ("places", "detected") in {(d.rule, d.action) for d in decisions}
    rule = next(d for d in decisions if d.action == "kept")
    assert rule.rule == "context-free" and "personal pronoun" in rule.reason
    assert [kept.text[x.start:x.end] for x in kept.replaced] == ["Denmark"]
    dropped = s.explain("Denmark is a small country." + _FOLLOW_UP)
    assert [(d.rule, d.action) for d in dropped.why("Denmark") if d.action != "detected"] == [
        ("context-free", "dropped")]
    assert dropped.replaced == ()
    assert any("context-free kept LOCATION" in line for line in kept.lines())


def test_an_explanation_stays_in_memory(tmp_path, places, caplog, capsys):
    chromadb = pytest.importorskip("chromadb")
    from private_vectors import PrivateEmbedding
    from private_vectors.integrations.chroma import add_documents, create_collection

    secret = "Zoltana Quibbleworth"
    s = _stage(places)
    before = (s.get_config(), s.get_state())
    with caplog.at_level(logging.DEBUG):
        why = s.explain(f"{secret} loves Denmark; mail zq@example.org.")
        assert secret not in repr(why) and secret not in str(why)
        with pytest.raises(TypeError, match="memory only"):
            pickle.dumps(why)
        client = chromadb.PersistentClient(path=str(tmp_path / "db"))
        col = create_collection(client, "notes", PrivateEmbedding(model="fake", sanitize=s, eps=10))
        add_documents(col, ids=["a"], documents=["Badge EMP-204981 was revoked."])
    assert (s.get_config(), s.get_state()) == before  # explaining remembers nothing
    out = capsys.readouterr()
    assert secret not in caplog.text + out.out + out.err
    for f in (tmp_path / "db").rglob("*"):
        if f.is_file():
            assert b"Quibbleworth" not in f.read_bytes(), f


_REOPEN = """
import sys
import chromadb
from presidio_analyzer import Pattern, PatternRecognizer
from private_vectors.errors import ConfigMismatchError
from private_vectors.integrations.chroma import add_documents, open_collection
from private_vectors.text import registry

client = chromadb.PersistentClient(path=sys.argv[1])
try:
    open_collection(client, "staff")
except ConfigMismatchError as exc:
    print("refused:", exc)
registry.add_recognizer(PatternRecognizer(supported_entity="EMPLOYEE_ID", name="employee-ids",
                                          patterns=[Pattern("employee id", r"\\bEMP-\\d{6}\\b", 0.9)]))
print("written:", add_documents(open_collection(client, "staff"), ids=["b"], documents=["EMP-111111 joined."]))
"""


def test_a_config_naming_an_unregistered_recognizer_is_refused_naming_it(places):
    config = _stage(places, recognizers=["employee-ids"]).get_config()
    registry.remove_recognizer("employee-ids")
    with pytest.raises(ConfigMismatchError, match="'employee-ids', which is not registered"):
        Sanitizer.from_config(config)
    registry.add_recognizer(_employee_ids())
    assert Sanitizer.from_config(config).apply(["EMP-111111 joined."]) == ["<EMPLOYEE_ID> joined."]


@pytest.mark.slow  # a second process opens the store (about 15 s of CPU)
def test_a_store_naming_an_unregistered_recognizer_refuses_to_open_naming_it(tmp_path, places):
    import subprocess
    import sys

    chromadb = pytest.importorskip("chromadb")
    from private_vectors import PrivateEmbedding
    from private_vectors.integrations.chroma import add_documents, create_collection

    stage = _stage(places, recognizers=["employee-ids"])
    client = chromadb.PersistentClient(path=str(tmp_path / "db"))
    col = create_collection(client, "staff", PrivateEmbedding(model="fake", sanitize=stage, eps=10))
    assert add_documents(col, ids=["a"], documents=["Badge EMP-204981 was revoked."]) == [
        "Badge <EMPLOYEE_ID> was revoked."]
    # another process (this one keeps the live function it built): not registered there, refused
    run = subprocess.run([sys.executable, "-c", _REOPEN, str(tmp_path / "db")], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    refused = next(line for line in run.stdout.splitlines() if line.startswith("refused:"))
    assert "employee-ids" in refused and "not registered" in refused
    assert "written: ['<EMPLOYEE_ID> joined.']" in run.stdout  # registered there: it opens and writes


def test_the_text_stage_guides_registry_example_runs(capsys):
    import re
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "text-stage.md").read_text("utf-8")
    section = guide.split("## Recognizers, rules and the registry", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(block, "text-stage.md", "exec"), {})
    out = capsys.readouterr().out
    assert "<EMPLOYEE_ID>" in out and "EMP-204981" not in out.splitlines()[0]
    assert "Acme Corp" in out.splitlines()[0] and "Okafor" not in out.splitlines()[0]
    assert "context-free kept PERSON" in out
