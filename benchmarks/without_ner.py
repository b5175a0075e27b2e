"""Run a benchmark script with presidio's spaCy pipeline reduced to its tokenizer (no entity recognizer).

An experiment, not a library option: with ``detector="model"`` the learned tagger finds people and
places, so spaCy's entity recognizer (most of presidio's time on long texts, see
``text_ingest.py --stages model,model-no-ner``) might look redundant. This wrapper replaces the
library's pipe selection (``private_vectors.text.recognizers.presidio._ner_only``) by one that
disables every spaCy component, the entity recognizer included, then runs the script as
``__main__`` with the remaining arguments (this folder is first on the import path, so the script's
``_shared`` is found); presidio's pattern recognizers still read spaCy's tokens.

    nice -n 10 .venv/bin/python benchmarks/without_ner.py benchmarks/detector_model.py --data ../shared/data \\
        --stages model --skip cost,scifact --out benchmarks/results/text/detector_model_no_ner.md
"""

from __future__ import annotations

import runpy
import sys
from typing import Any


def _tokenizer_only(nlp: Any) -> None:
    for name in list(nlp.pipe_names):
        nlp.disable_pipe(name)


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: without_ner.py SCRIPT [ARGS...]")
    import private_vectors.text.recognizers.presidio as presidio

    presidio._ner_only = _tokenizer_only
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
