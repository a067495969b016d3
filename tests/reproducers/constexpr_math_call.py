"""Triton 3.2's frontend (triton-ascend 3.2.0): a ``math`` call on constants inside a kernel.

``math.sqrt(2 / math.pi)`` is what NineToothed inlines from a tanh GELU
(ntops' ``gelu``); here ``math`` is imported, so the failure is not the
missing import but the call: the frontend hands ``math.sqrt`` a
``constexpr``, and ``ttir`` fails with
``TypeError('__index__ returned non-int (type float)')``.
``FoldMathConstants`` replaces the expression by its value.
"""

import math

import triton
import triton.language


@triton.jit
def repro(x_ptr, B: triton.language.constexpr):
    offsets = triton.language.arange(0, B)
    x = triton.language.load(x_ptr + offsets)
    triton.language.store(x_ptr + offsets, x * math.sqrt(2 / math.pi))
