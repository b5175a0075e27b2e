"""The weight-folder comparison of benchmarks/detector_model.py (--weights): the figures it reads
from each part and the table it writes."""

from __future__ import annotations

from _scripts import load_script

dm = load_script("benchmarks/detector_model.py", "detector_model_bench")


def _row(folder: str, sha: str, person_recall: float, lower_case_leaks: int) -> dict:
    return {"folder": folder, "weights_sha256": sha * 64, "layers": 4, "seconds": {"btc": 1, "evasion": 2},
            "btc": {"btc_dev": {"PERSON": {"precision": 0.8, "recall": person_recall}}},
            "evasion": {"results": {"library-model": {"lower_case": {"leaks": lower_case_leaks}}}}}


def test_metrics_read_each_part_and_leave_the_missing_ones_empty() -> None:
    m = dm._metrics(_row("shipped", "a", 0.5, 5))
    assert m["BTC dev PERSON token recall"] == 50.0
    assert m["evasion lower_case: leaks of 150"] == 5
    assert m["BTC dev LOCATION token recall"] is None and m["TAB dev LOC recall"] is None


def test_the_table_puts_each_folder_beside_the_first_with_its_difference() -> None:
    text = dm.weights_report({"command": "cmd", "commit": "abc", "minutes": 0.1,
                              "rows": [_row("shipped", "a", 0.5, 5), _row("/x/cpu-run", "b", 0.475, 3)]})
    assert "| shipped (4 layers, aaaaaaaa) | cpu-run (4 layers, bbbbbbbb) Δ |" in text
    assert "| BTC dev PERSON token recall | 50.0 | 47.5 (-2.5) |" in text
    assert "| evasion lower_case: leaks of 150 | 5 | 3 (-2) |" in text
    assert "TAB dev" not in text  # a row no folder measured is left out


def test_the_shipped_tagger_is_the_recorded_cpu_run() -> None:
    """The package's weights are the ones its config.json describes: the committed command's CPU run
    (pinned, so a swap of the weights is a deliberate change of this test)."""
    import hashlib
    import json

    from private_vectors.text_model import builtin_path

    folder = builtin_path()
    cfg = json.loads((folder / "config.json").read_text("utf-8"))
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert digest == cfg["weights_sha256"] == "03de1c7aed5a040c0be2f6790bfc05aae2f97c36f16b00bd2fba19fb035028e0"
    assert folder.name == "minilm-tagger-v2" and cfg["version"] == "2"
    training = cfg["training"]
    assert "--generated 14000 --epochs 3" in training["command"] and training["device"] == "cpu"
    assert training["seed"] == 0 and training["threads"] == 1 and "reproduction" in training
