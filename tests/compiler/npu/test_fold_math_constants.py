"""FoldMathConstants, on small modules (level 1)."""

import math

import pytest
from helpers import rewrite

from ninetoothed_ascend.compiler.npu.fold_math_constants import FoldMathConstants


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("math.sqrt(2 / math.pi) * x", f"{math.sqrt(2 / math.pi)!r} * x"),
        ("x * -math.log(2.0)", f"x * -{math.log(2.0)!r}"),
        ("m.e ** 2 + x", f"{math.e**2!r} + x"),
        ("x + math.inf", "x + float('inf')"),
        ("math.floor(2.5) + numpy.pi", "2 + numpy.pi"),  # numpy is not math
    ],
)
def test_fold_math_constants(expression, expected):
    source, count = rewrite(
        FoldMathConstants,
        f"import math\nimport math as m\nimport numpy\ny = {expression}\n",
    )

    assert source.splitlines()[-1] == f"y = {expected}"
    assert count == 1


@pytest.mark.parametrize(
    "expression",
    [
        "math.sqrt(x)",  # a runtime value
        "2 / 3",  # nothing of math: left to the frontend
        "math.isclose(1.0, 2.0, rel_tol=0.5)",  # keywords
    ],
)
def test_fold_math_constants_leaves_the_rest(expression):
    source, count = rewrite(
        FoldMathConstants, f"import math\nimport numpy\ny = {expression}\n"
    )

    assert count == 0
