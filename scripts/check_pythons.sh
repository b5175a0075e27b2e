#!/usr/bin/env bash
# Install private_vectors on each supported Python and run the tests that exercise what differs
# between versions: the README blocks, the every-path test, the store tests, the edge cases and
# the wheel test (its slow build, install and quick start included).
#
#   bash scripts/check_pythons.sh              # 3.11, 3.12 and 3.13
#   bash scripts/check_pythons.sh 3.12 3.13    # some of them
#   FULL=1 bash scripts/check_pythons.sh       # the whole default test suite on each
#   TESTS="tests/test_readme.py tests/test_edges.py" bash scripts/check_pythons.sh 3.13   # a selection
#
# Interpreter for version X.Y: $PYTHON_X_Y if set, else pythonX.Y on PATH, else pyenv's newest X.Y.
# Each version gets its own virtual environment, .venvs/pyX.Y (kept for reruns; `rm -r .venvs`
# frees the space: about 1.5 GB on 3.11, 5 GB on the others).
#
# torch goes in first with the README's line (torch==2.13.0 --index-url
# https://download.pytorch.org/whl/cpu, as scripts/setup.sh installs it): that index holds CPU
# builds only. Where it does not answer and no CPU build is on the machine's disk (here: every
# version but 3.11), the script falls back to PyPI's default Linux build (the project's torch
# range), which also installs the CUDA 13 libraries (about 1.4 GB to download, 2.7 GB of wheels,
# 4 GB on disk); NO_CUDA=1 refuses that fallback (the version is then not run). The tests run
# on the CPU either way; the results file says which build each version took and how many
# nvidia wheels it installed.
#
# Each version's outcome is written to benchmarks/results/pythons.md (one row per version, the
# rows of versions not run this time kept).
set -uo pipefail
cd "$(dirname "$0")/.."
versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.11 3.12 3.13)
tests=(tests/test_readme.py tests/test_every_path.py tests/test_chroma_native.py tests/test_langchain.py
       tests/test_langchain_faiss.py tests/test_faiss.py tests/test_llamaindex.py tests/test_langchain_records.py
       tests/test_edges.py tests/test_store_compat.py tests/test_wheel.py)
[ -n "${TESTS:-}" ] && read -r -a tests <<< "$TESTS"  # another selection (pytest arguments)
[ -n "${FULL:-}" ] && tests=()
results=benchmarks/results/pythons.md
export PIP_DISABLE_PIP_VERSION_CHECK=1

interpreter() {  # the python executable for version $1, or nothing
  local var="PYTHON_${1/./_}"
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  # (a pyenv shim exists for every version but runs only the selected ones: check it runs)
  if command -v "python$1" >/dev/null 2>&1 && "python$1" -c '' >/dev/null 2>&1; then command -v "python$1"; return; fi
  local root="${PYENV_ROOT:-$HOME/.pyenv}/versions"
  local found
  found=$(ls -d "$root/$1".* 2>/dev/null | sort -V | tail -1)
  [ -n "$found" ] && [ -x "$found/bin/python" ] && echo "$found/bin/python"
}

# the range pyproject.toml admits, so that `pip install -e .` keeps the torch installed first
torch_range=$(grep -o '"torch[^"]*"' pyproject.toml | head -1 | tr -d '"')

install_torch() {  # installs torch into the environment of python $1; sets torch_desc
  if "$1" -m pip install -q "torch==2.13.0" --index-url https://download.pytorch.org/whl/cpu >/dev/null 2>&1; then
    torch_desc="the README's line: the CPU build"
  elif [ -n "${NO_CUDA:-}" ]; then
    torch_desc="none: the CPU index did not answer and NO_CUDA is set"; return 1
  else
    torch_desc="PyPI's Linux build with the CUDA libraries (the CPU index did not answer)"
    "$1" -m pip install -q "$torch_range"
  fi
}

record() {  # version, python, torch, install seconds, outcome, test seconds
  local inst="$4 s"
  [[ "$4" == *" ("* ]] && inst="${4/ (/ s (}"
  local row="| $1 | $2 | $3 | $inst | $5 | $6 s | $(date -u +%Y-%m-%d) |"
  local tmp
  tmp=$(mktemp)
  if [ -f "$results" ]; then grep -v "^| $1 |" "$results" | grep '^| [0-9]' > "$tmp" || true; fi
  echo "$row" >> "$tmp"
  {
    echo "# Supported Python versions"
    echo
    echo "Made by \`bash scripts/check_pythons.sh\` (one fresh virtual environment per version, the package"
    echo "installed with \`pip install -e '.[all]'\`; tests: ${tests[*]:-the whole default suite}; then"
    echo "\`-m slow tests/test_wheel.py\`)."
    echo "Install and test times are wall-clock seconds on the machine that ran it (2 shared CPU cores)."
    echo
    echo "| Python | interpreter | torch | install | tests | test time | date |"
    echo "|---|---|---|---|---|---|---|"
    sort -V "$tmp"
  } > "$results"
  rm -f "$tmp"
}

status=0
for v in "${versions[@]}"; do
  py=$(interpreter "$v")
  if [ -z "$py" ]; then
    echo "check_pythons: no Python $v found (set PYTHON_${v/./_})" >&2
    record "$v" "not found" "-" "-" "not run: no interpreter" "-"; status=1; continue
  fi
  exact=$("$py" -c 'import platform; print(platform.python_version())')
  venv=".venvs/py$v"
  echo "== Python $exact ($py) -> $venv"
  start=$(date +%s)
  reused=""
  if [ -x "$venv/bin/python" ]; then reused=" (into an existing environment)"; else "$py" -m venv "$venv"; fi
  "$venv/bin/python" -m pip install -q --upgrade pip
  if "$venv/bin/python" -c 'import torch' >/dev/null 2>&1; then
    torch_desc="already in the environment"
  elif ! install_torch "$venv/bin/python"; then
    record "$v" "$exact" "install failed ($torch_desc)" "-" "not run: torch did not install" "-"; status=1; continue
  fi
  echo "   torch: $torch_desc"
  if ! "$venv/bin/python" -m pip install -q -e ".[all]"; then
    record "$v" "$exact" "-" "$(( $(date +%s) - start ))" "not run: pip install -e '.[all]' failed" "-"
    status=1; continue
  fi
  installed="$(( $(date +%s) - start ))$reused"
  torch_version=$("$venv/bin/python" -c 'import torch; print(torch.__version__)')
  cuda_wheels=$("$venv/bin/python" -m pip list 2>/dev/null | grep -ci '^nvidia-' || true)
  torch_desc="$torch_desc; $cuda_wheels nvidia wheels"
  echo "   installed: ${installed} s (torch $torch_version); running the tests"
  start=$(date +%s)
  log=$(mktemp)
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "${tests[@]}" 2>&1 | tee "$log" | tail -5
  code=${PIPESTATUS[0]}
  summary=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  # the wheel build, install and quick start are `slow` (deselected above): run them too
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -m slow tests/test_wheel.py 2>&1 | tee "$log" | tail -3
  wheel_code=${PIPESTATUS[0]}
  [ "$wheel_code" -eq 0 ] || code=$wheel_code
  wheel=$(grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$log" | tail -1 | sed 's/=//g; s/^ *//; s/ *$//')
  summary="${summary:-exit $code}; wheel: ${wheel:-exit $wheel_code}"
  rm -f "$log"
  [ "$code" -eq 0 ] || status=1
  record "$v" "$exact" "$torch_version ($torch_desc)" "$installed" "${summary:-exit $code}" "$(( $(date +%s) - start ))"
done
echo "check_pythons: results in $results"
exit $status
