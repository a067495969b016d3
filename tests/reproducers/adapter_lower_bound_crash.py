"""triton-adapter-opt (triton-ascend 3.2.0) heap corruption: a runtime lower bound nested in ``&``.

Found by bisecting NineToothed's matmul under valgrind. Both stores are
needed for the crash to show without valgrind. ``ScalarizeTileLowerBounds``
turns ``repro`` into ``repro_fixed``'s mask.
"""

import triton
import triton.language


@triton.jit
def repro(x_ptr, N, B: triton.language.constexpr):
    i = triton.language.program_id(0)
    j = triton.language.program_id(1)
    offs = (
        (i * B + triton.language.arange(0, B)[:, None]) * N
        + j * B
        + triton.language.arange(0, B)[None, :]
    )
    mask = (
        (i * B + triton.language.arange(0, B)[:, None] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] < N)
    )
    triton.language.store(x_ptr + offs, 0.0, mask=mask)
    triton.language.store(x_ptr + offs + 1, 0.0, mask=mask)


@triton.jit
def repro_fixed(x_ptr, N, B: triton.language.constexpr):
    i = triton.language.program_id(0)
    j = triton.language.program_id(1)
    offs = (
        (i * B + triton.language.arange(0, B)[:, None]) * N
        + j * B
        + triton.language.arange(0, B)[None, :]
    )
    mask = (i >= 0) & (j >= 0) & (j * B + triton.language.arange(0, B)[None, :] < N)
    triton.language.store(x_ptr + offs, 0.0, mask=mask)
    triton.language.store(x_ptr + offs + 1, 0.0, mask=mask)
