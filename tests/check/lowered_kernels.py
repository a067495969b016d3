"""Small Triton kernels for the lowered check's tests, with the masks whose lanes triton-ascend 3.2.0's Linalg still reads.

Two loads mask their out-of-range lanes the way Triton's semantics allow,
yet their ``ttadapter`` output (``triton-adapter-opt``) reads every lane and
only then selects with the mask:

* a gather (an address computed per element) becomes a scalar loop marked
  ``DiscreteMemAccess`` that runs ``memref.load`` on all ``BLOCK`` lanes,
  then ``arith.select``: ``tests/reproducers/masked_gather_reads_masked_lanes.py``;
* :func:`lower_bound_mask`: a mask on a lower bound (``idx >= 0``) is not
  folded into the copied extent; the whole block is copied from
  ``x_ptr - cols``, then selected (the pattern of
  triton-lang/triton-ascend#2332, which crashes an NPU).
"""

import triton
import triton.language as tl


@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # A persistent loop: each program takes every num_programs-th tile.
    for tile in range(tl.program_id(0), tl.cdiv(n, BLOCK), tl.num_programs(0)):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def lower_bound_mask(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = offs - cols
    x = tl.load(x_ptr + idx, mask=idx >= 0, other=0.0)
    tl.store(out_ptr + offs, x)


@triton.jit
def unmasked_store(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs))


@triton.jit
def divide(x_ptr, out_ptr, divisor, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) // divisor)


@triton.jit
def flip(x_ptr, out_ptr, DIM: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr):
    offs = tl.arange(0, ROWS)[:, None] * COLS + tl.arange(0, COLS)[None, :]
    tl.store(out_ptr + offs, tl.flip(tl.load(x_ptr + offs), DIM))
