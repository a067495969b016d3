"""triton-adapter-opt (triton-ascend 3.2.0) heap corruption: a runtime lower bound nested in ``&``.

Found by bisecting NineToothed's matmul under valgrind. The masks are written
inline, as NineToothed writes them; both stores are needed for the crash to
show without valgrind. ``ScalarizeTileLowerBounds`` rewrites each mask into
``(i >= 0) & (j >= 0) & (j * B + arange(0, B)[None, :] < N)``.
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
    triton.language.store(
        x_ptr + offs,
        0.0,
        mask=(i * B + triton.language.arange(0, B)[:, None] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] < N),
    )
    triton.language.store(
        x_ptr + offs + 1,
        0.0,
        mask=(i * B + triton.language.arange(0, B)[:, None] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] >= 0)
        & (j * B + triton.language.arange(0, B)[None, :] < N),
    )
