#!/usr/bin/env bash
# Tests too slow for CI's 60-minute aim, run by hand (after `bash .ci/run` has built .venv):
# the NPU variant on Triton's interpreter with more tasks than coreDim allows programs
# (65543 tasks, about 14 minutes on a 2-core machine). CI checks the grid of a launch with
# more than 65535 tasks (tests/compiler/npu/test_persistent_grid.py) and the task loop on the interpreter with
# 41 tasks on 3 programs (tests/test_npu_emulation.py); the GPU test of 70001 tasks runs
# through `device` (docs/verification.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export NINETOOTHED_ASCEND_CACHE_DIR="${NINETOOTHED_ASCEND_CACHE_DIR:-$(mktemp -d)}"
exec .venv/bin/python -m pytest -m "slow and not ascend" "$@"
