"""triton-ascend 3.2.0: a masked strided load whose mask bounds the lanes' scaled offsets reads every lane.

Written as triton-ascend's bug report asks (a description with a minimal
complete example, kernel and launching code, the result observed and the one
expected, then the environment).

Describe the bug
----------------
``triton-adapter-opt`` (the ``ttadapter`` stage) folds a mask that bounds a
block's lanes ``a = tl.arange(0, BLOCK)`` (``a < m``) into the extent of the
strided copy it makes for a load of ``x + a * K``, so masked-out lanes are
not read. It does not fold the same bound written on the lanes' offsets,
``a * K < n`` (how a diagonal, ``K = n_cols + 1``, is masked): the copy then
reads all ``BLOCK`` strided lanes, past the tensor's end, and only selects
afterwards. Triton's semantics are that a masked-out lane does not access
memory; on an NPU, where such an address is unmapped, the kernel dies with
an SMMU fault / ``vector core exception`` (triton-lang/triton-ascend#2332).

Observed (no NPU here): the ``ttadapter`` output of ``diagonal`` below,
lowered to native code for the CPU and run with ``x`` (a 5 x 5 matrix, 25
elements, one block of 8 lanes at a stride of 6) between inaccessible
guard pages, reads past ``x``::

    kernel diagonal: SIGSEGV in the lowered kernel (end-fenced placement):
    read 21 bytes past the last byte of x, program (0, 0, 0), ...

Expected: no access to ``x`` outside its 25 elements. ``diagonal_unscaled``
(the workaround: the bound on the lanes themselves, ``a < (n + K - 1) //
K``) runs without a fault and stores the diagonal.

Run ``python tests/reproducers/strided_lane_bound_reads_masked_lanes.py`` in
an environment with triton-ascend, ascendnpu-ir and LLVM 19's MLIR tools
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
def diagonal(x_ptr, out_ptr, n, BLOCK: tl.constexpr, K: tl.constexpr):
    a = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + a * K, mask=a * K < n, other=0.0)
    tl.store(out_ptr + a, x)


@triton.jit
def diagonal_unscaled(x_ptr, out_ptr, n, BLOCK: tl.constexpr, K: tl.constexpr):
    a = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + a * K, mask=a < (n + K - 1) // K, other=0.0)
    tl.store(out_ptr + a, x)


#: Argument types of both kernels, as ``compile_stages`` takes them.
SIGNATURE = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32"}

#: The constexpr values: one program of 8 lanes, 6 elements apart.
CONSTANTS = {"BLOCK": 8, "K": 6}


def launch_on_npu(kernel=diagonal):
    """The launching code on an NPU (needs ``torch_npu``): the diagonal of a 5 x 5 matrix, one program of 8 lanes."""

    import torch
    import torch_npu  # noqa: F401

    x = torch.arange(25, dtype=torch.float32, device="npu")
    out = torch.zeros(8, dtype=torch.float32, device="npu")
    kernel[(1,)](x, out, 25, BLOCK=8, K=6)

    return out


def main():
    import torch

    from ninetoothed_ascend.check.compile_check import compile_stages
    from ninetoothed_ascend.check.lowered import faults, launch

    for kernel in (diagonal, diagonal_unscaled):
        linalg = compile_stages(kernel, SIGNATURE, CONSTANTS)[0]
        x = torch.arange(25, dtype=torch.float32)
        out = torch.zeros(8)

        try:
            launch.run_linalg(
                linalg,
                (1,),
                [("x", x), ("out", out), ("n", 25)],
                kernel_name=kernel.__name__,
            )
        except faults.Fault as fault:
            print(f"{kernel.__name__}: {fault}")
        else:
            diagonal_values = x.view(5, 5).diagonal()
            print(
                f"{kernel.__name__}: no fault; out[:5] is the diagonal: "
                f"{torch.equal(out[:5], diagonal_values)}"
            )


if __name__ == "__main__":
    main()
