"""The lowered level on every example: each dtype, shape case and layout, run lowered on the CPU and compared with torch, fenced.

Runs in the triton-ascend environment of .ci/run; needs LLVM 19's MLIR tools
(Debian's mlir-19-tools and llvm-19) and is skipped, with what to install,
where they are missing. Each case compiles what a
launch compiles (the first config the autotuner tries for it), lowers the
``ttadapter`` Linalg to native code and runs it over the whole grid with
every tensor between guard pages, twice (fenced at the end, then at the
start); the results must match torch within the example's tolerances and be
equal byte for byte in both runs. No NPU is involved.
"""

import pytest
from conftest import EXAMPLE_NAMES
from helpers import shared_example

from ninetoothed_ascend import examples
from ninetoothed_ascend.check.lowered import cases, tools

pytestmark = pytest.mark.ascend

# Every known fault is a read of masked-out lanes that triton-ascend 3.2.0's
# Linalg issues (measured with ascendnpu-ir 1.2.0 and LLVM 19.1.7; the two
# patterns alone are in tests/check/lowered_kernels.py). Such reads fault on
# an NPU where the address is unmapped (triton-lang/triton-ascend#2332).
_GATHER = (
    "reads masked-out lanes of a gather (an address computed per element) past "
    "the input's last byte: triton-adapter-opt's DiscreteMemAccess loop loads "
    "every lane, then selects with the mask"
)
_WINDOW = (
    "reads the padding lanes of its window gather, before the input's first "
    "byte and past its last: triton-adapter-opt's DiscreteMemAccess loop loads "
    "every lane, then selects with the mask"
)
_CONVOLUTION = (
    "reads masked-out lanes past the input, the weight or the bias: the input's "
    "gather loads every lane (DiscreteMemAccess), and a weight or bias tile whose "
    "mask triton-adapter-opt does not fold into the copied extent is copied "
    "whole, then selected"
)

#: (example, shape case index or None for every case, layout) -> reason:
#: the case must fault with a read outside a tensor, and is then an xfail.
KNOWN_FAULTS = {
    **{
        (name, None, layout): _WINDOW
        for name in ("avg_pool2d", "max_pool2d", "max_pool2d_fixed")
        for layout in cases.LAYOUTS
    },
    **{
        (name, None, layout): _CONVOLUTION
        for name in ("conv2d", "conv2d_bias")
        for layout in cases.LAYOUTS
    },
    ("flat_cast", None, "non-contiguous"): _GATHER,
    ("flat_lt", None, "non-contiguous"): _GATHER,
    ("flat_mul", 0, "non-contiguous"): _GATHER,
    ("flat_mul", 1, "non-contiguous"): _GATHER,
    ("flat_sigmoid", 0, "non-contiguous"): _GATHER,
    ("flat_sigmoid", 2, "non-contiguous"): _GATHER,
    ("flat_sigmoid", 3, "contiguous"): _GATHER,
    ("flat_sigmoid", 3, "non-contiguous"): _GATHER,
    ("flat_sigmoid", 4, "non-contiguous"): _GATHER,
    ("flat_sigmoid", 5, "non-contiguous"): _GATHER,
    ("flat_sum_dim", 1, "non-contiguous"): _GATHER,
    ("flat_sum_dim", 3, "contiguous"): _GATHER,
    ("flat_sum_dim", 3, "non-contiguous"): _GATHER,
}


def _known_fault(name, case, layout):
    return KNOWN_FAULTS.get((name, case, layout)) or KNOWN_FAULTS.get(
        (name, None, layout)
    )


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


@pytest.fixture(scope="module")
def lowered_directory(tmp_path_factory):
    # One cache of shared objects per worker: cases that lower to the same
    # Linalg (dtypes, layouts and shapes often do) share one lowering.
    return tmp_path_factory.mktemp("lowered")


@pytest.mark.parametrize(("name", "case", "dtype", "layout"), _cases())
def test_example_runs_lowered_and_matches_torch(
    name, case, dtype, layout, lowered_directory
):
    module = shared_example(name)
    result = cases.check_case(
        module,
        dtype,
        examples.cases(module)[case],
        layout=layout,
        directory=lowered_directory,
        timeout=300,
    )

    if reason := _known_fault(name, case, layout):
        # A known fault must stay the read it is known as; one that is gone
        # fails here, to be taken off the table.
        assert result.outcome == "fault", (
            f"known fault not seen ({result.outcome}): {result.detail}"
        )
        assert f"kernel {module.kernel.kernel_name}: SIGSEGV" in result.detail
        assert " read " in result.detail, result.detail
        pytest.xfail(reason)

    assert result.outcome == "match", result.detail
