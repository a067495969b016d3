#!/usr/bin/env bash
# Create (or update) one of the two virtual environments.
#   scripts/setup-env.sh cuda    -> .venv         CUDA Triton; runs everything but the Ascend compile check
#   scripts/setup-env.sh ascend  -> .venv-ascend  triton-ascend; runs the Ascend compile check
set -euo pipefail
cd "$(dirname "$0")/.."

kind=${1:?usage: scripts/setup-env.sh cuda|ascend}
python=${PYTHON:-python3}
pip_quiet=(--quiet --disable-pip-version-check)

case "$kind" in
cuda)
    venv=.venv
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/pip" install "${pip_quiet[@]}" -r requirements/cuda.txt
    "$venv/bin/pip" install "${pip_quiet[@]}" -e ".[remote]"
    ;;
ascend)
    venv=.venv-ascend
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/pip" install "${pip_quiet[@]}" -r requirements/ascend.txt
    "$venv/bin/pip" install "${pip_quiet[@]}" --no-deps ninetoothed==0.26.0 -e .
    ;;
*)
    echo "usage: scripts/setup-env.sh cuda|ascend" >&2
    exit 2
    ;;
esac
