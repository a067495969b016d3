"""What the compile check remembers of BiShengIR's outcomes (no compiler needed)."""

import dataclasses

import pytest

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.check import bishengir, memos

STAMP = "0" * 64


def _result(outcome, crashes=0):
    return bishengir.BiShengIRResult(
        outcome, None, None, 1024, 0.5, "", bishengir.DEFAULT_ARCH, crashes
    )


@pytest.mark.parametrize(
    "result",
    [_result("hivmc"), _result("error")],
    ids=["hivmc", "error"],
)
def test_an_outcome_is_remembered_as_it_was(tmp_path, result):
    cache = Cache(tmp_path)

    memos.remember_outcome(cache, STAMP, result)

    assert memos.recall_outcome(cache, STAMP) == result


def test_an_outcome_reached_after_a_crash_is_remembered_without_it(tmp_path):
    # The crash was the run's, not the compile's: a later check that reads
    # the outcome ran nothing that crashed.
    cache = Cache(tmp_path)

    memos.remember_outcome(cache, STAMP, _result("hivmc", crashes=1))

    assert memos.recall_outcome(cache, STAMP) == _result("hivmc")


@pytest.mark.parametrize(
    "result",
    [
        _result("timeout"),
        _result("error", crashes=bishengir.CRASH_RUNS),
        dataclasses.replace(
            _result("hivmc"), planned_ub_bytes=None, report_error="Stack dump:"
        ),
    ],
    ids=["timeout", "crashed-on-every-run", "memory-report-failed"],
)
def test_an_outcome_of_the_run_not_of_the_kernel_is_not_remembered(tmp_path, result):
    cache = Cache(tmp_path)

    memos.remember_outcome(cache, STAMP, result)

    assert memos.recall_outcome(cache, STAMP) is None
