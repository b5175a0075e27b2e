"""New processes for a test's worker script, without paying for the detector's imports each time.

A :class:`Zygote` is one interpreter that imported the detector's third-party stack (``torch``,
``transformers``, ``presidio_analyzer``, ``spacy``: about 5 s of CPU per interpreter) and
**nothing of private_vectors** nor of the stores (``chromadb``, LangChain, LlamaIndex, FAISS).
Each :meth:`Zygote.run` forks it: the child takes the given environment, working folder and
``sys.argv``, runs the script as ``python SCRIPT ARGS...`` would (``__main__``, the script's
folder first on ``sys.path``), runs the exit handlers and reports its exit status, its stdout
and its stderr. What the child finds already imported is third-party code that a fresh
interpreter imports on the same path anyway; every private_vectors module, store client, model
and key starts afresh in each child, as in a new process.

Tests that are about what a fresh interpreter imports (tests/test_startup_imports.py,
tests/test_layering.py, ...) or about the README as a user runs it keep ``sys.executable``.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

PRELOAD = ("torch", "transformers", "presidio_analyzer", "spacy")

_SERVER = r"""
import atexit, builtins, json, os, runpy, sys, traceback, types
for name in json.loads(sys.argv[1]):
    __import__(name)
sys.stdout.write("ready\n")
sys.stdout.flush()
base_path = list(sys.path[1:])  # started without PYTHONPATH: sys.path[0] is '' for -c, then the standard paths
for line in sys.stdin:
    job = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            out = os.open(job["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            err = os.open(job["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(out, 1)
            os.dup2(err, 2)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.environ.clear()
            os.environ.update(job["env"])
            os.chdir(job["cwd"])
            argv = list(job["argv"])
            extra = [os.path.abspath(p) for p in job["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
            try:
                if argv[0] == "-c":  # python -c CODE ARGS...: sys.argv[0] is '-c', '' first on sys.path
                    sys.argv = ["-c", *argv[2:]]
                    sys.path[:] = ["", *extra, *base_path]
                    main = types.ModuleType("__main__")  # a fresh __main__ (this loop keeps its own globals)
                    main.__builtins__ = builtins
                    sys.modules["__main__"] = main
                    exec(compile(argv[1], "<string>", "exec"), vars(main))
                elif argv[0] == "-m":  # python -m MODULE ARGS...: the working folder first on sys.path
                    sys.argv = [argv[1], *argv[2:]]
                    sys.path[:] = [os.getcwd(), *extra, *base_path]
                    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
                else:  # python SCRIPT ARGS...: the script's folder first on sys.path
                    sys.argv = argv
                    sys.path[:] = [os.path.dirname(os.path.abspath(argv[0])), *extra, *base_path]
                    runpy.run_path(argv[0], run_name="__main__")
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                if not isinstance(exc.code, int) and exc.code is not None:
                    sys.stderr.write(f"{exc.code}\n")
            except BaseException:
                traceback.print_exc()
            atexit._run_exitfuncs()
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    sys.stdout.write(json.dumps({"rc": rc}) + "\n")
    sys.stdout.flush()
"""


class Zygote:
    """One pre-importing interpreter, started without ``PYTHONPATH`` or ``PRIVATE_VECTORS_KEY``
    (each child puts its own ``PYTHONPATH`` entries on ``sys.path``, as start-up would);
    :meth:`run` forks a child per run."""

    def __init__(self, env: dict[str, str] | None = None, preload: tuple[str, ...] = PRELOAD,
                 timeout: float = 600) -> None:
        self._env = {k: v for k, v in (os.environ if env is None else env).items()
                     if k not in ("PYTHONPATH", "PRIVATE_VECTORS_KEY")}
        self._tmp = tempfile.TemporaryDirectory(prefix="pv-zygote-")
        self._n = 0
        self._proc = subprocess.Popen([sys.executable, "-c", _SERVER, json.dumps(list(preload))], env=self._env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self._read(timeout) == "ready", "the zygote did not start"

    def _read(self, timeout: float) -> str:
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], timeout)
        if not ready:
            self.close()
            raise TimeoutError(f"no answer from the zygote within {timeout} s")
        return self._proc.stdout.readline().strip()

    def run(self, argv: list[str], env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """``python *argv`` (``argv``: ``[SCRIPT, ARGS...]``, ``["-c", CODE, ARGS...]`` or ``["-m", MODULE, ARGS...]``) in a
        forked child with the environment ``env`` (default: this process's) and the working folder ``cwd``; the result as :func:`subprocess.run` with ``capture_output=True,
        text=True`` gives it."""
        assert self._proc.stdin is not None and self._proc.poll() is None, "the zygote has exited"
        self._n += 1
        out, err = Path(self._tmp.name) / f"{self._n}.out", Path(self._tmp.name) / f"{self._n}.err"
        job = {"argv": [str(a) for a in argv], "env": dict(os.environ if env is None else env), "cwd": str(cwd or os.getcwd()),
               "stdout": str(out), "stderr": str(err)}
        self._proc.stdin.write(json.dumps(job) + "\n")
        self._proc.stdin.flush()
        rc = json.loads(self._read(timeout))["rc"]
        return subprocess.CompletedProcess([sys.executable, *job["argv"]], rc,
                                           out.read_text(encoding="utf-8", errors="replace"),
                                           err.read_text(encoding="utf-8", errors="replace"))

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._tmp.cleanup()


_SHARED: list[Zygote] = []


def run(argv: list[str], env: dict[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """:meth:`Zygote.run` on the test session's zygote (started on first use, closed when the
    session ends: tests/conftest.py)."""
    if not _SHARED or _SHARED[0]._proc.poll() is not None:
        _SHARED[:] = [Zygote()]
    return _SHARED[0].run(argv, env, cwd, timeout)


def close_shared() -> None:
    while _SHARED:
        _SHARED.pop().close()
