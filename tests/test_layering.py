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


OPTIONAL_PACKAGES = ("chromadb", "faiss", "llama_index", "langchain_chroma", "langchain_community", "sklearn",
                     "matplotlib", "presidio_anonymizer", "concept_erasure", "ray", "sentence_transformers")
"""Packages of the extras and the harness: the default line needs none of them (``transformers``, a
core dependency, is loaded: presidio imports it for its optional Hugging Face engine)."""


def test_the_default_line_loads_only_allowed_modules() -> None:
    """``import private_vectors`` and one document through ``PrivateEmbedding(concept="PII", eps=10)``
    (the default model) load only the modules of ``tests/data/core_imports.txt``: none of the
    evaluation harness, no optional package."""
    allowed = {line.strip() for line in (ROOT / "tests" / "data" / "core_imports.txt").read_text().splitlines()
               if line.strip() and not line.startswith("#")}
    got = _run("""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import private_vectors
        from private_vectors import PrivateEmbedding
        PrivateEmbedding(concept="PII", eps=10).embed_array(["Maria Lopez flew to Madrid on Monday."])
        print(json.dumps(sorted(sys.modules)))
    """)
    loaded = set(got)  # type: ignore[arg-type]
    ours = {m for m in loaded if m == "private_vectors" or m.startswith("private_vectors.")}
    assert not ours - allowed, f"modules not on the allow-list: {sorted(ours - allowed)}"
    assert not any(_is_eval(m) for m in ours)
    assert not {m.split(".")[0] for m in loaded} & set(OPTIONAL_PACKAGES)
    assert {"private_vectors.pipeline", "private_vectors.text.sanitizer"} <= ours  # (the line did run)


def _private_imports() -> list[str]:
    """``from x import _name`` where ``x`` is outside the importer's own subpackage (a module at
    the package root shares a subpackage with none)."""
    src = ROOT / "src" / "private_vectors"
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        own = rel.parts[0] if len(rel.parts) > 1 else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            names = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
            if not names:
                continue
            if node.level:
                base = list(rel.parts[:-1])[: len(rel.parts) - node.level]
                target = [*base, *(node.module.split(".") if node.module else [])]
            else:
                target = (node.module or "").split(".")[1:] if (node.module or "").startswith("private_vectors") else []
                if not target and not (node.module or "").startswith("private_vectors"):
                    continue
            if own is None or not target or target[0] != own:
                found.append(f"{rel}: from {'.' * node.level}{node.module or ''} import {', '.join(names)}")
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    assert not _private_imports(), _private_imports()


def test_no_class_of_the_library_forwards_attributes() -> None:
    """Real properties instead of ``__getattr__`` forwarding (a package's PEP 562 lazy import is not
    forwarding: it is a module-level function)."""
    src = ROOT / "src" / "private_vectors"
    found = [f"{p.relative_to(src)}: {cls.name}" for p in sorted(src.rglob("*.py"))
             for cls in ast.walk(ast.parse(p.read_text(encoding="utf-8"))) if isinstance(cls, ast.ClassDef)
             and any(isinstance(f, ast.FunctionDef) and f.name == "__getattr__" for f in cls.body)]
    assert not found, found


THIRD_PARTY_PRIVATE = {"integrations/chroma.py: collection._model"}
"""Reads of another library's private attribute that share a name with one of ours (Chroma's
``Collection._model``): not a read across our packages."""


def _package(rel: Path) -> str:
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _private_definitions(trees: dict[Path, ast.Module]) -> dict[str, set[str]]:
    """Private name → the packages (or root modules) that define it: as a method, class attribute or
    ``obj._name = ...`` inside a class, or at a module's top level."""
    defined: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        nodes = [n for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef) for n in ast.walk(cls)] + tree.body
        for n in nodes:
            names: list[str] = []
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [n.name]
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
                names = [n.attr]
            elif isinstance(n, (ast.Assign, ast.AnnAssign)):
                names = [t.id for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)]
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    defined.setdefault(name, set()).add(_package(rel))
    return defined


def _private_reads(trees: dict[Path, ast.Module]) -> list[str]:
    """``obj._name`` (obj not ``self``/``cls``) in one package where only other packages define
    ``_name``: a private attribute read across packages (the evaluation harness aside)."""
    core = {rel: tree for rel, tree in trees.items() if rel.parts[0] != "eval"}
    defined = _private_definitions(core)
    found = []
    for rel, tree in core.items():
        for n in ast.walk(tree):
            if not (isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")):
                continue
            if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                continue
            where = defined.get(n.attr, set())
            text = f"{rel.as_posix()}: {ast.unparse(n)}"
            if where and _package(rel) not in where and text not in THIRD_PARTY_PRIVATE:
                found.append(f"{text} (defined in {', '.join(sorted(where))})")
    return found


def test_no_private_attribute_is_read_across_packages() -> None:
    """The restore stage once read the text stage's private ``_key``; public properties now
    (``Sanitizer.secret``). The check is seen to fire on such a read."""
    src = ROOT / "src" / "private_vectors"
    trees = {p.relative_to(src): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(src.rglob("*.py"))}
    found = _private_reads(trees)
    assert not found, found
    text_stage = {rel: tree for rel, tree in trees.items() if rel.parts[0] == "text"}
    planted = {**text_stage, Path("restore_planted.py"): ast.parse("def wants(s):\n    return s.sanitizer._key\n")}
    assert _private_reads(planted) == ["restore_planted.py: s.sanitizer._key (defined in text)"]
