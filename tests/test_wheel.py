"""The built wheel and sdist carry the packaged data and nothing of the repository's tests or
results, and the native-Chroma quick start runs from the wheel installed in a fresh virtual
environment.

Building, installing and running the quick start take one to three minutes on 2 cores, so those
tests are ``slow`` (``pytest -m slow tests/test_wheel.py``; ``scripts/check_pythons.sh`` runs them
on every Python version). The default run checks, without building, that every file the package
ships besides its modules is declared as package data (the way a file goes missing from a wheel).

The sdist and the wheel are built (``python -m build --no-isolation``: the wheel from the
sdist, so the sdist is complete too) from a copy of the tracked files. The fresh environment
gets the wheel by ``pip install --no-deps``; its dependencies come from the running
environment through a ``.pth`` line (a path entry: the running environment's own ``.pth``
files, among them the editable install of this checkout, are not processed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("build")
pytest.importorskip("chromadb")

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DATA = sorted(p.relative_to(ROOT / "src").as_posix() for p in (ROOT / "src" / "private_vectors" / "data").rglob("*")
                      if p.is_file())
FORBIDDEN = re.compile(r"(^|/)(tests|benchmarks|results|\.venv|docs)/|\.pyc$")


def _tracked_copy(dest: Path) -> Path:
    """The files git tracks (and new ones it does not ignore), else the tree without build outputs."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode == 0 and listed.stdout.strip():
        for name in listed.stdout.splitlines():
            source = ROOT / name
            if source.is_file() and not name.startswith((".venv", ".venvs")):
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest / name)
    else:  # pragma: no cover - a source tree without git
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv*", "build", "dist", "*.egg-info", "__pycache__", ".git"))
    return dest


def test_every_packaged_file_is_declared_package_data():
    """A non-Python file under ``src/private_vectors`` that no ``package-data`` pattern of
    pyproject.toml matches is left out of the wheel."""
    import tomllib

    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"]["private_vectors"]
    package = ROOT / "src" / "private_vectors"
    files = [p.relative_to(package) for p in package.rglob("*")
             if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts]
    assert files and any(str(f).startswith("data/") for f in files)
    undeclared = [str(f) for f in files if not any(_glob_match(f, pat) for pat in patterns)]
    assert not undeclared, undeclared[:10]
    manifest = (ROOT / "MANIFEST.in").read_text(encoding="utf-8").split()
    assert "prune" in manifest and "tests" in manifest  # setuptools puts tests/test*.py in an sdist by default


def _glob_match(path: Path, pattern: str) -> bool:
    """``pattern`` as setuptools reads package-data globs (``**`` any number of folders)."""
    regex = re.escape(pattern).replace(r"\*\*/", "(?:.*/)?").replace(r"\*", "[^/]*")
    return re.fullmatch(regex, path.as_posix()) is not None


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    source = _tracked_copy(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return out


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, found
    return found[0]


@pytest.mark.slow
def test_the_wheel_carries_the_packaged_data_and_no_tests_or_results(dist):
    names = set(zipfile.ZipFile(_one(dist, "*.whl")).namelist())
    missing = [n for n in [*PACKAGE_DATA, "private_vectors/py.typed", "private_vectors/__init__.py"] if n not in names]
    assert not missing, missing[:10]
    assert not [n for n in names if FORBIDDEN.search(n)]
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "private-vectors = private_vectors.cli:main" in zipfile.ZipFile(_one(dist, "*.whl")).read(
        entry_points).decode()


@pytest.mark.slow
def test_the_sdist_carries_the_sources_and_data_and_no_tests_or_results(dist):
    with tarfile.open(_one(dist, "*.tar.gz")) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    missing = [n for n in ["pyproject.toml", "README.md", *("src/" + d for d in PACKAGE_DATA)] if n not in names]
    assert not missing, missing[:10]
    assert not [n for n in names if FORBIDDEN.search(n) and not n.startswith("src/private_vectors.egg-info")]


def _readme_block(heading: str) -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_native_chroma_quick_start_runs_from_the_installed_wheel(dist, tmp_path):
    env_dir = tmp_path / "fresh"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, capture_output=True, timeout=300)
    python = env_dir / "bin" / "python"
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           str(_one(dist, "*.whl"))], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "_running_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PRIVATE_VECTORS_KEY")}
    env["HOME"] = str(tmp_path / "home")  # the quick start keeps its key in the home folder
    (tmp_path / "home").mkdir()
    script = "import private_vectors, sys; print('FROM', private_vectors.__file__)\n" + _readme_block(
        "Quick start: native Chroma")
    run = subprocess.run([str(python), "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    where = run.stdout.split("FROM ", 1)[1].splitlines()[0]
    assert where.startswith(str(env_dir)), where  # the wheel's copy, not this checkout's
    assert "<PERSON>" in run.stdout and "Maria" not in run.stdout.split("\n", 2)[1]
    cli = subprocess.run([str(env_dir / "bin" / "private-vectors"), "--help"], cwd=work, env=env,
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0 and "audit" in cli.stdout, cli.stderr[-2000:]
