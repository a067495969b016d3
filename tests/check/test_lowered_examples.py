"""The lowered level on every example: each dtype, shape case and layout, run lowered on the CPU and compared with torch, fenced.

Runs in the triton-ascend environment of .ci/run; needs LLVM 19's MLIR tools
(Debian's mlir-19-tools and llvm-19) and is skipped, with what to install,
where they are missing. Each case compiles what a
launch compiles (the first config the autotuner tries for it), lowers the
``ttadapter`` Linalg to native code and runs it over the whole grid with
every tensor between guard pages, twice (fenced at the end, then at the
start); the results must match torch within the example's tolerances and be
equal byte for byte in both runs. A fenced fault (a read or write outside a
tensor, masked-out lanes included) fails the case: none is known
(``ConfineMaskedLanes`` keeps a gather's masked-out lanes inside its
tensor). No NPU is involved.
"""

import pytest
from conftest import EXAMPLE_NAMES
from helpers import shared_example

from ninetoothed_ascend import examples
from ninetoothed_ascend.check.lowered import cases, tools

pytestmark = pytest.mark.ascend


def _cases():
    return [
        pytest.param(
            name,
            case,
            dtype,
            layout,
            id=f"{name}{f'[{case}]' if case else ''}-{str(dtype).removeprefix('torch.')}-{layout}",
        )
        for name in EXAMPLE_NAMES
        for case in range(len(examples.cases(shared_example(name))))
        for dtype in examples.dtypes(shared_example(name))
        for layout in cases.LAYOUTS
    ]


@pytest.fixture(autouse=True)
def _tools():
    if reason := tools.missing():
        pytest.skip(reason)


@pytest.mark.parametrize(("name", "case", "dtype", "layout"), _cases())
def test_example_runs_lowered_and_matches_torch(name, case, dtype, layout, run_cache):
    module = shared_example(name)
    # One cache for the run: cases that lower to the same Linalg (dtypes,
    # layouts and shapes often do) share one lowering, on every worker.
    result = cases.check_case(
        module,
        dtype,
        examples.cases(module)[case],
        layout=layout,
        directory=run_cache.directory / "lowered",
        timeout=300,
        cache=run_cache,
    )

    assert result.outcome == "match", result.detail
