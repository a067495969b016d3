"""triton-ascend 3.2.0: a masked gather load reads the memory of its masked-out lanes.

Written as triton-ascend's bug report asks (a description with a minimal
complete example, kernel and launching code, the result observed and the one
expected, then the environment).

Describe the bug
----------------
A load whose address is not affine in ``tl.arange`` (a gather, here a row
gather ``(offs // cols) * row_stride + offs % cols``) is lowered by
``triton-adapter-opt`` (the ``ttadapter`` stage) to a scalar loop marked
``DiscreteMemAccess`` that runs ``memref.load`` on every lane of the block,
masked-out lanes included, and only then selects with the mask
(``arith.select``). Triton's semantics are that a masked-out lane does not
access memory; on an NPU, where such an address is unmapped, the kernel dies
with an SMMU fault / ``vector core exception`` (triton-lang/triton-ascend#2332
reports the same on triton-ascend 3.2.2 with a lower-bound mask).

Observed (no NPU here): the ``ttadapter`` output of ``masked_gather`` below,
lowered to native code for the CPU and run with ``x`` between inaccessible
guard pages, reads the first byte past ``x`` on lanes 30 and 31, which the
mask ``offs < n`` (n = 30) turns off::

    kernel masked_gather: SIGSEGV in the lowered kernel (end-fenced placement):
    read 1 byte past the last byte of tensor x (x), program (1, 0, 0), ...:
    %... = memref.load %reinterpret_cast...[%c0] : memref<1xf32, strided<[1], offset: ?>>

Expected: no access to ``x`` outside its 30 elements. ``masked_gather_confined``
(the workaround: the offset times the mask, 0 on a masked-out lane, which
then reads ``x[0]``) runs without a fault and stores the same values.

Run ``python tests/reproducers/masked_gather_reads_masked_lanes.py`` in an
environment with triton-ascend, ascendnpu-ir and LLVM 19's MLIR tools (Debian:
``apt-get install mlir-19-tools llvm-19``); it prints the fault and the
workaround's result. On an NPU, :func:`launch_on_npu` is the launching code
(not run here: no machine of this project has an NPU).

Environment details
-------------------
triton-ascend 3.2.0 (PyPI), ascendnpu-ir 1.2.0 (``bishengir-opt``, LLVM
19.1.7), LLVM 19.1.7 (Debian 12's ``mlir-19-tools``, ``llvm-19``), x86-64,
Python 3.11, torch 2.13 (CPU); no NPU, no CANN.
"""

import triton
import triton.language as tl


@triton.jit
def masked_gather(x_ptr, out_ptr, n, cols, row_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + (offs // cols) * row_stride + offs % cols, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x, mask=mask)


@triton.jit
def masked_gather_confined(x_ptr, out_ptr, n, cols, row_stride, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    offset = ((offs // cols) * row_stride + offs % cols) * mask
    x = tl.load(x_ptr + offset, mask=mask, other=0.0)
    tl.store(out_ptr + offs, x, mask=mask)


#: Argument types of both kernels, as ``compile_stages`` takes them.
SIGNATURE = {
    "x_ptr": "*fp32",
    "out_ptr": "*fp32",
    "n": "i32",
    "cols": "i32",
    "row_stride": "i32",
}

#: The constexpr values: two programs of 16 lanes for 30 elements.
CONSTANTS = {"BLOCK": 16}


def launch_on_npu(kernel=masked_gather):
    """The launching code on an NPU (needs ``torch_npu``): 30 elements as 5 rows of 6, two programs of 16 lanes."""

    import torch
    import torch_npu  # noqa: F401

    x = torch.arange(30, dtype=torch.float32, device="npu")
    out = torch.zeros(32, dtype=torch.float32, device="npu")
    kernel[(2,)](x, out, 30, 6, 6, BLOCK=16)

    return out


def main():
    import torch

    from ninetoothed_ascend.check.compile_check import compile_stages
    from ninetoothed_ascend.check.lowered import faults, launch

    for kernel in (masked_gather, masked_gather_confined):
        linalg = compile_stages(kernel, SIGNATURE, CONSTANTS)[0]
        x = torch.arange(30, dtype=torch.float32)
        out = torch.zeros(32)
        print(
            f"{kernel.__name__}: {linalg.count('DiscreteMemAccess')} DiscreteMemAccess ops"
        )

        try:
            launch.run_linalg(
                linalg,
                (2,),
                [("x", x), ("out", out), ("n", 30), ("cols", 6), ("row_stride", 6)],
                kernel_name=kernel.__name__,
            )
        except faults.Fault as fault:
            print(f"  {fault}")
        else:
            print(f"  no fault; out[:30] == x: {torch.equal(out[:30], x)}")


if __name__ == "__main__":
    main()
