"""The evaluation harness sits beside the library: the core never imports it, the benchmark
scripts reach both through the installed package (and one helper module), and the old import
paths of the moved harness still work, with a DeprecationWarning."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from test_import_cycles import import_graph

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ROOT / "benchmarks"
EVAL = "private_vectors.eval"
MOVED = {"private_vectors.bench": EVAL, "private_vectors.attacks": f"{EVAL}.attacks",
         "private_vectors.datasets": f"{EVAL}.datasets", "private_vectors.metrics": f"{EVAL}.metrics",
         "private_vectors.synthetic": f"{EVAL}.synthetic", "private_vectors.concepts": "private_vectors.fitted"}
"""Old path → where the module lives now (the old path works until 0.3.0)."""
APPLICATION = ("private_vectors.cli",)
"""The command line sits above library and harness: it registers ``bench`` and ``audit``."""


def _is_eval(module: str) -> bool:
    return module == EVAL or module.startswith(EVAL + ".")


def test_the_core_never_imports_the_harness() -> None:
    graph = import_graph()
    core = [m for m in graph if not _is_eval(m) and m not in APPLICATION]
    offenders = {m: sorted(t for t in graph[m] if _is_eval(t)) for m in core}
    assert not {m: t for m, t in offenders.items() if t}, offenders
    assert any(_is_eval(t) for t in graph["private_vectors.cli"])  # (the check sees edges at all)


def test_the_harness_imports_no_private_name_of_the_core() -> None:
    """The harness reaches the library through public names (a private module's own helpers, like
    ``_validation``'s checks, are shared by every room and count as public here)."""
    src = ROOT / "src" / "private_vectors" / "eval"
    found = []
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        depth = len(path.relative_to(src).parts)  # eval/x.py: 1; eval/attacks/x.py: 2 ...
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > depth:  # reaches above eval/
                found += [f"{path.name}: {a.name}" for a in node.names if a.name.startswith("_")]
    assert not found, found


def _benchmark_imports(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, node.lineno))
    return out


def test_benchmark_scripts_import_the_package_and_one_helper() -> None:
    """No ``sys.path`` edit, no import of ``tests``, no script importing another script: only the
    installed package, third-party packages and ``_shared``."""
    scripts = {p.stem for p in BENCHMARKS.glob("*.py")}
    tests = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"tests", "conftest"}
    problems = []
    for path in sorted(BENCHMARKS.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "sys.path" in text or "spec_from_file_location" in text:  # (an A/B run may give a child another tree)
            problems.append(f"{path.name}: edits the import path or loads a file as a module")
        for module, line in _benchmark_imports(path):
            top = module.split(".")[0]
            if top in tests or (top in scripts and top != "_shared"):
                problems.append(f"{path.name}:{line} imports {module}")
    assert not problems, problems


def _run(code: str) -> object:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_moved_names_work_with_a_deprecation_warning() -> None:
    got = _run("""
        import json, warnings
        warnings.simplefilter("always")
        with warnings.catch_warnings(record=True) as caught:
            import private_vectors.bench.runner as old_runner
            from private_vectors.bench import run_benchmark
            from private_vectors.attacks import MLCAttacker
            from private_vectors.attacks.generative.attacker import GenerativeInversion
            from private_vectors.datasets import load_beir
            from private_vectors.metrics import ndcg_at_k
            from private_vectors.synthetic import synthetic_pii_sentences
            from private_vectors.concepts import load_concept
            import private_vectors.concepts.text as old_removal
        import private_vectors.eval.runner as runner
        import private_vectors.fitted as fitted, private_vectors.fitted.removal as removal
        import private_vectors.eval.attacks as attacks
        import private_vectors.eval.attacks.generative.attacker as attacker
        import private_vectors.eval.metrics as metrics
        print(json.dumps({
            "same": [old_runner is runner, run_benchmark is runner.run_benchmark, MLCAttacker is attacks.MLCAttacker,
                     GenerativeInversion is attacker.GenerativeInversion, ndcg_at_k is metrics.ndcg_at_k,
                     load_concept is fitted.load_concept, old_removal is removal],
            "spec": runner.__spec__.name,
            "warned": sorted({str(w.message).split()[0] for w in caught if w.category is DeprecationWarning}),
            "where": sorted({w.filename for w in caught if w.category is DeprecationWarning}),
        }))
    """)
    assert got["same"] == [True] * 7
    assert got["spec"] == "private_vectors.eval.runner"  # the module keeps its own spec
    assert got["warned"] == sorted(MOVED)
    assert got["where"] == ["<string>"]  # the warning points at the importing line


def test_an_old_module_path_still_runs_as_a_script(tmp_path: Path) -> None:
    res = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", "-m", "private_vectors.bench.report"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "usage: python -m private_vectors.eval.report" in res.stderr + res.stdout


def test_an_unknown_old_name_is_still_an_import_error() -> None:
    got = _run("""
        import json, warnings
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            import private_vectors.bench.no_such_module
        except ModuleNotFoundError as exc:
            print(json.dumps(exc.name))
    """)
    assert got == "private_vectors.bench.no_such_module"
