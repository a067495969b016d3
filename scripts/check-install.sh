#!/usr/bin/env bash
# The package as users install it (part of .ci/run):
#   1. a wheel and an sdist, built with `python -m build`;
#   2. the wheel in a fresh venv with CUDA Triton: the entry point, the .pth hook
#      (NINETOOTHED_ASCEND=1) and the demo of one example, run outside the source tree;
#   3. an Ascend host: a fresh venv with triton-ascend and torch installed first, then the
#      README's recipe ("Install on an Ascend host", run as written but with the wheel):
#      `import triton` is still triton-ascend, `doctor` exits 0, the compile check runs;
#   4. `doctor` on that venv after CUDA Triton is installed over triton-ascend: exit 1 and
#      the repair command.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
python=${PYTHON:-python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pip_quiet=(--quiet --disable-pip-version-check)
export NINETOOTHED_ASCEND_CACHE_DIR="$work/cache"
step() { echo "check-install: $*"; }

step "build wheel and sdist"
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/ninetoothed_ascend-*.whl)
ls "$work"/dist/ninetoothed_ascend-*.tar.gz >/dev/null

step "the wheel beside CUDA Triton: entry point, .pth hook, demo of add"
"$python" -m venv "$work/cuda"
"$work/cuda/bin/pip" install "${pip_quiet[@]}" torch==2.13.0 "$wheel"
cd "$work"
"$work/cuda/bin/python" -c "
import ninetoothed_ascend, sys
assert ninetoothed_ascend.__file__.startswith('$work/cuda/'), ninetoothed_ascend.__file__
"
NINETOOTHED_ASCEND=1 "$work/cuda/bin/python" -c "
import ninetoothed, ninetoothed_ascend
assert ninetoothed_ascend.is_active(), 'the .pth hook did not activate the import'
"
"$work/cuda/bin/ninetoothed-ascend" demo "$repo/examples/elementwise/add.py"
# About 2 GB (torch): gone before the next environment, which needs as much.
rm -rf "$work/cuda"

step "an Ascend host: triton-ascend first, then the README's recipe"
"$python" -m venv "$work/host"
"$work/host/bin/pip" install "${pip_quiet[@]}" torch==2.13.0 pybind11 triton-ascend==3.2.0
recipe=$(sed -n '/^## Install on an Ascend host/,/^## /p' "$repo/README.md" | grep '^pip install')
[ "$(echo "$recipe" | wc -l)" -ge 2 ] || { echo "no recipe found in README.md" >&2; exit 1; }
while read -r line; do
    # The recipe names the package on PyPI; here it is the wheel just built.
    line=${line/ ninetoothed-ascend/ $wheel}
    step "  $line"
    eval "\"$work/host/bin/\"$line ${pip_quiet[*]}"
done <<<"$recipe"
"$work/host/bin/python" -c "import importlib.util, pathlib; o = importlib.util.find_spec('triton').origin; assert (pathlib.Path(o).parent / 'backends' / 'ascend').is_dir(), o"
"$work/host/bin/pip" show triton >/dev/null 2>&1 && { echo "the recipe installed CUDA Triton" >&2; exit 1; }
"$work/host/bin/ninetoothed-ascend" doctor
"$work/host/bin/ninetoothed-ascend" check "$repo/examples/elementwise/add.py"

step "doctor on a triton-ascend replaced by CUDA Triton"
"$work/host/bin/pip" install "${pip_quiet[@]}" --no-deps triton==3.9.0
if "$work/host/bin/ninetoothed-ascend" doctor >"$work/doctor.log" 2>&1; then
    cat "$work/doctor.log"; echo "doctor exited 0 on a replaced triton-ascend" >&2; exit 1
fi
cat "$work/doctor.log"
grep -q "pip uninstall -y triton triton-ascend && pip install triton-ascend==3.2.0" "$work/doctor.log"
step "ok"
