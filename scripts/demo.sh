#!/usr/bin/env bash
# Quick start, step 1: set up the CUDA-Triton environment and run the main job on
# the bundled examples (on a GPU if there is one, else the CPU interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-env.sh cuda
exec .venv/bin/ninetoothed-ascend demo examples "$@"
