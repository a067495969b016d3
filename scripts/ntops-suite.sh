#!/usr/bin/env bash
# ntops' own test suite with every kernel's NPU variant emulated (level 4), against torch:
#   scripts/ntops-suite.sh [--cpu] [PYTEST ARGUMENTS]   (default: all of ntops' tests)
# On a CUDA machine (the `device` recipe in docs/verification.md) the NPU variant runs
# on CUDA Triton; with --cpu, ntops' tests run on CPU tensors and the NPU variant on
# Triton's interpreter (.venv's CUDA Triton), which is slow: ntops' 32 rot90 tests
# take about 10 minutes on a busy 2-core machine, and one max_pool2d test (a 2x3x112x112
# input, every config autotuned on the interpreter) did not end in 10. ntops is read
# from $NTOPS_ROOT, else ../shared/downstream/ntops; nothing is written there.
set -euo pipefail
repository=$(cd "$(dirname "$0")/.." && pwd)
ntops=$(cd "${NTOPS_ROOT:-$repository/../shared/downstream/ntops}" && pwd)
python=${PYTHON:-$repository/.venv/bin/python}

if [ "${1:-}" = "--cpu" ]; then
    export NTOPS_SUITE_DEVICE=cpu
    shift
fi

[ "$#" -gt 0 ] || set -- tests
export NINETOOTHED_ASCEND_EMULATE_NPU=1 PYTHONDONTWRITEBYTECODE=1
export NINETOOTHED_ASCEND_CACHE_DIR="${NINETOOTHED_ASCEND_CACHE_DIR:-$(mktemp -d)}"
export PYTHONPATH="$repository/scripts/ntops_suite:$ntops:$ntops/src:$repository/src${PYTHONPATH:+:$PYTHONPATH}"
cd "$ntops"
exec "$python" -m pytest -p ntops_suite_plugin -p no:cacheprovider "$@"
