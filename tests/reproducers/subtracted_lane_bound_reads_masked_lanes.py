"""triton-ascend 3.2.0: a masked load whose mask bounds the lanes less a scalar reads every lane.

Written as triton-ascend's bug report asks (a description with a minimal
complete example, kernel and launching code, the result observed and the one
expected, then the environment).

Describe the bug
----------------
``triton-adapter-opt`` (the ``ttadapter`` stage) folds a mask that bounds a
block's lanes ``a = tl.arange(0, BLOCK)`` plus scalars (``a + s < n``, ``a
>= c``) into the extent and the offset of the copy it makes for an affine
load, so masked-out lanes are not read. It does not fold the same bounds
written with a scalar subtracted beside the lanes (``a - c < n``, ``a - c >=
0``, the mask of a tensor read with a pad in front): the copy then reads
every lane of the block, before the tensor and past it, and only selects
afterwards. Triton's semantics are that a masked-out lane does not access
memory; on an NPU, where such an address is unmapped, the kernel dies with
an SMMU fault / ``vector core exception`` (triton-lang/triton-ascend#2332).

Observed (no NPU here): the ``ttadapter`` output of ``padded_copy`` below,
lowered to native code for the CPU and run with ``x`` (16 elements, a pad
of 4 in front, one block of 32 lanes) between inaccessible guard pages,
reads past ``x`` (and, placed at the start of a page, before it)::

    kernel padded_copy: SIGSEGV in the lowered kernel (end-fenced placement):
    read 1 byte past the last byte of x, program (0, 0, 0), ...: memref.copy ...

Expected: no access to ``x`` outside its 16 elements. ``padded_copy_summed``
(the workaround: the same bounds with the scalar moved to the other side,
``a < n + c`` and ``a >= c``) makes one copy of the 16 elements, runs
without a fault and stores the same values.

Run ``python tests/reproducers/subtracted_lane_bound_reads_masked_lanes.py``
in an environment with triton-ascend, ascendnpu-ir and LLVM 19's MLIR tools
(Debian: ``apt-get install mlir-19-tools llvm-19``); it prints the fault and
the workaround's result. On an NPU, :func:`launch_on_npu` is the launching
code (not run here: no machine of this project has an NPU).

Environment details
-------------------
triton-ascend 3.2.0 (PyPI), ascendnpu-ir 1.2.0 (``bishengir-opt``, LLVM
19.1.7), LLVM 19.1.7 (Debian 12's ``mlir-19-tools``, ``llvm-19``), x86-64,
Python 3.11, torch 2.13 (CPU); no NPU, no CANN.
"""

import triton
import triton.language as tl


@triton.jit
def padded_copy(x_ptr, out_ptr, n, pad, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + a - pad, mask=(a - pad >= 0) & (a - pad < n), other=0.0)
    tl.store(out_ptr + a, x, mask=a < n + pad)


@triton.jit
def padded_copy_summed(x_ptr, out_ptr, n, pad, BLOCK: tl.constexpr):
    a = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + a - pad, mask=(a >= pad) & (a < n + pad), other=0.0)
    tl.store(out_ptr + a, x, mask=a < n + pad)


#: Argument types of both kernels, as ``compile_stages`` takes them.
SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "pad": "i32"}

#: The constexpr values: one program of 32 lanes for 16 elements and a pad of 4.
CONSTANTS = {"BLOCK": 32}


def launch_on_npu(kernel=padded_copy):
    """The launching code on an NPU (needs ``torch_npu``): 16 elements after a pad of 4, one program of 32 lanes."""

    import torch
    import torch_npu  # noqa: F401

    x = torch.arange(1, 17, dtype=torch.float32, device="npu")
    out = torch.zeros(32, dtype=torch.float32, device="npu")
    kernel[(1,)](x, out, 16, 4, BLOCK=32)

    return out


def main():
    import torch

    from ninetoothed_ascend.check.compile_check import compile_stages
    from ninetoothed_ascend.check.lowered import faults, launch

    for kernel in (padded_copy, padded_copy_summed):
        linalg = compile_stages(kernel, SIGNATURE, CONSTANTS)[0]
        x = torch.arange(1, 17, dtype=torch.float32)
        out = torch.zeros(32)
        print(f"{kernel.__name__}: {linalg.count('memref.copy')} memref.copy ops")

        try:
            launch.run_linalg(
                linalg,
                (1,),
                [("x", x), ("out", out), ("n", 16), ("pad", 4)],
                kernel_name=kernel.__name__,
            )
        except faults.Fault as fault:
            print(f"  {fault}")
        else:
            print(f"  no fault; out[4:20] == x: {torch.equal(out[4:20], x)}")


if __name__ == "__main__":
    main()
