"""triton-adapter-opt (triton-ascend 3.2.0) heap corruption: a runtime lower bound nested in ``&``, on a padded tile.

The crash of ``adapter_lower_bound_crash.py``, with tiles as NineToothed
writes them for constexpr shapes: ``H`` elements per tile, padded to an
``arange`` of ``P`` (a power of two), guarded by ``arange(0, P) < H``.
``ScalarizeTileLowerBounds`` does not match (``P != H``);
``ScalarizePaddedTileLowerBounds`` rewrites each ``index * H + arange(0, P)[...] >= 0``
into ``index >= 0``. With ``H=3, P=4`` the original crashed the adapter in
16 of 16 compiles here (fp16 and fp32 pointers), the rewritten one in none.
"""

import triton
import triton.language


@triton.jit
def repro(x_ptr, y_ptr, H: triton.language.constexpr, P: triton.language.constexpr):
    i = triton.language.program_id(0)
    j = triton.language.program_id(1)
    offs = (
        (i * H + triton.language.arange(0, P)[:, None]) * 64
        + j * H
        + triton.language.arange(0, P)[None, :]
    )
    x = triton.language.load(
        x_ptr + offs,
        mask=(triton.language.arange(0, P)[:, None] < H)
        & (triton.language.arange(0, P)[None, :] < H)
        & (i * H + triton.language.arange(0, P)[:, None] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] < 64),
        other=0,
    )
    triton.language.store(
        y_ptr + offs,
        x,
        mask=(triton.language.arange(0, P)[:, None] < H)
        & (triton.language.arange(0, P)[None, :] < H)
        & (i * H + triton.language.arange(0, P)[:, None] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] < 64),
    )
    triton.language.store(
        y_ptr + offs + 1,
        x,
        mask=(triton.language.arange(0, P)[:, None] < H)
        & (triton.language.arange(0, P)[None, :] < H)
        & (i * H + triton.language.arange(0, P)[:, None] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] >= 0)
        & (j * H + triton.language.arange(0, P)[None, :] < 64),
    )
