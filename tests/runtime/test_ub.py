"""What an NPU variant's launch calls to refuse tiles that do not fit the Unified Buffer (level 1: the UB model, no compile)."""

import ast

import pytest

from ninetoothed_ascend.runtime import OverflowCheck, UnifiedBufferOverflowError

#: A tile of ROWS x COLS fp32 elements, both sized by the caller.
KERNEL = """
def kernel(x_ptr, ROWS: tl.constexpr, COLS: tl.constexpr):
    offsets = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(x_ptr + offsets, tl.load(x_ptr + offsets) + 1)
"""

#: The Unified Buffer of Atlas A2, in bytes.
BUDGET = 196608


def test_a_launch_is_refused_with_its_numbers_and_parses_nothing(monkeypatch):
    check = OverflowCheck(KERNEL, {"tl": "triton.language"}, BUDGET)

    def refuse(*args, **kwargs):
        raise AssertionError("source was parsed at a launch")

    monkeypatch.setattr(ast, "parse", refuse)
    check({"ROWS": 16, "COLS": 64, "x_ptr": object()})

    with pytest.raises(UnifiedBufferOverflowError) as refused:
        check({"ROWS": 16, "COLS": 4096, "x_ptr": object()})

    message = str(refused.value)
    assert message.startswith("kernel `kernel` (NPU variant) cannot run this launch")
    assert f"{BUDGET} available" in message
    assert "ROWS = 16, COLS = 4096" in message or "COLS = 4096, ROWS = 16" in message
