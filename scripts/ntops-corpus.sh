#!/usr/bin/env bash
# ntops' corpus, as CI checks it (after `bash .ci/run` has built both environments):
# every launch of every ntops.torch wrapper recorded, each at level 2 (ttir and
# ttadapter, every config its autotuner tries), the smallest and the largest of
# those configs at level 3 (BiShengIR up to hivmc). Fails on any failure or
# refused launch that scripts/ntops_corpus.py's KNOWN_FAILURES does not name.
# ntops is read from $NTOPS_ROOT, else ../shared/downstream/ntops; without it,
# the step says so and passes.
set -euo pipefail
cd "$(dirname "$0")/.."
ntops=${NTOPS_ROOT:-../shared/downstream/ntops}

if [ ! -d "$ntops/src/ntops/torch" ]; then
    echo "ntops corpus: SKIPPED, no ntops checkout at $ntops (set NTOPS_ROOT to one of InfiniTensor/ntops)"
    exit 0
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
jobs=${PYTEST_WORKERS:-2}
.venv/bin/python scripts/ntops_corpus.py record "$out" --ntops-root "$ntops" --jobs "$jobs"
status=0
.venv/bin/python scripts/ntops_corpus.py sweep "$out" --level 2 --jobs "$jobs" --strict || status=$?
.venv/bin/python scripts/ntops_corpus.py sweep "$out" --level 3 --configs extremes \
    --jobs "$jobs" --timeout 120 --strict || status=$?
exit "$status"
