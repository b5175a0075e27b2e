#!/usr/bin/env bash
# Set up private_vectors in ./.venv on a fresh machine (Python 3.11, 3.12 or 3.13).
#   bash scripts/setup.sh            # the package with all extras (chroma, langchain, faiss, bench, dev)
#   bash scripts/setup.sh EXTRAS     # e.g. "chroma,langchain"
#   PYTHON=/path/to/python3.13 bash scripts/setup.sh chroma
# Torch goes in first, from PyTorch's CPU index: a bare `torch` requirement on Linux pulls the
# CUDA build (about 3 GB of nvidia wheels more). The CPU index holds no CUDA build, so this line
# cannot pull one; the project's torch range then installs nothing more. A torch already in
# .venv is kept (install a CUDA build yourself first if you want one).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-all}"
torch_pin="torch==2.13.0"
cpu_index="https://download.pytorch.org/whl/cpu"
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' >/dev/null 2>&1; }
python_bin="${PYTHON:-}"
if [ -n "$python_bin" ]; then
  supported "$python_bin" || { echo "setup.sh: $python_bin is not Python 3.11, 3.12 or 3.13" >&2; exit 1; }
else
  for candidate in python3.11 python3.12 python3.13 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && supported "$candidate"; then
      python_bin="$candidate"; break
    fi
  done
fi
[ -n "$python_bin" ] || { echo "setup.sh: Python 3.11, 3.12 or 3.13 is required (set PYTHON=/path/to/python3.X)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
supported .venv/bin/python || { echo "setup.sh: .venv is not Python 3.11-3.13; remove it and rerun" >&2; exit 1; }
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c 'import torch' >/dev/null 2>&1; then
  echo "setup.sh: installing the CPU build of torch first ($torch_pin from $cpu_index)"
  .venv/bin/python -m pip install -q "$torch_pin" --index-url "$cpu_index" || {
    echo "setup.sh: the CPU build of torch did not install (is $cpu_index reachable?); install a torch" \
         "build into .venv yourself and rerun" >&2; exit 1; }
fi
echo "setup.sh: installing private-vectors[$extras]"
.venv/bin/python -m pip install -q -e ".[$extras]"
echo "setup.sh: ready (.venv, Python $(.venv/bin/python -c 'import platform; print(platform.python_version())'))"
