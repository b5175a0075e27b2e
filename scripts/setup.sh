#!/usr/bin/env bash
# Set up private_vectors in ./.venv on a fresh machine.
#   bash scripts/setup.sh            # the package with all extras (chroma, langchain, faiss, bench, dev)
#   bash scripts/setup.sh EXTRAS     # e.g. "chroma,langchain"
# Torch goes in first: a bare `torch` requirement with no torch present would pull a
# multi-GB CUDA build, so the CPU build (torch==2.13.0, on this machine's disk) is
# installed before the project; the project's torch range then installs nothing more.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-all}"
python_bin="${PYTHON:-}"
if [ -z "$python_bin" ]; then
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      python_bin="$candidate"; break
    fi
  done
fi
[ -n "$python_bin" ] || { echo "setup.sh: Python 3.11 is required (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
[ -x .venv/bin/python ] || "$python_bin" -m venv .venv
export PIP_DISABLE_PIP_VERSION_CHECK=1
.venv/bin/python -m pip install -q --upgrade pip
if ! .venv/bin/python -c 'import torch' >/dev/null 2>&1; then
  echo "setup.sh: installing the CPU build of torch first (torch==2.13.0)"
  .venv/bin/python -m pip install -q "torch==2.13.0"
fi
echo "setup.sh: installing private-vectors[$extras]"
.venv/bin/python -m pip install -q -e ".[$extras]"
echo "setup.sh: ready (.venv)"
