"""Verification on a CUDA GPU: the CUDA variant and the NPU variant (emulated) of every example against torch.

Level 3 (emulation): the NPU variant, emulated on CUDA
(``handle.emulated("cuda")``: its source with triton-ascend's libdevice
mapped to CUDA Triton's libdevice or core ``triton.language`` and ``hf32``
to ``tf32``, everything else as the NPU variant has it), launched on CUDA
tensors. The emulation passes that fired are printed per kernel. Also checks that the CUDA variant is byte for byte what ``ninetoothed.make``
generates on this GPU, with the GPU's own properties.

    python scripts/verify_on_gpu.py
"""

import pathlib
import sys

import ninetoothed
import torch
import triton

import ninetoothed_ascend
from ninetoothed_ascend import examples

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def main():
    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}"
    )
    print(
        "| kernel | dtype | CUDA variant (handle) | NPU variant, emulated | CUDA source == ninetoothed.make |"
    )
    print("| --- | --- | --- | --- | --- |")
    failures = 0
    notes = []

    for path in examples.find_modules([EXAMPLES]):
        module = examples.load_module(path)
        kernel = module.kernel

        # Plain NineToothed: the import of ninetoothed_ascend replaced its make.
        with ninetoothed_ascend.disabled():
            if hasattr(module, "tensors"):
                reference = ninetoothed.make(
                    module.arrangement,
                    module.application,
                    module.tensors,
                    kernel_name=kernel.kernel_name,
                )
            else:
                reference = ninetoothed.jit(getattr(module, module.kernel.kernel_name))

        identical = pathlib.Path(reference._source).read_text() == kernel.source("cuda")

        emulated = kernel.emulated("cuda")
        mapped = ", ".join(
            f"{name} x{count}"
            for name, count in kernel.emulated_source("cuda").rewrites
        )
        notes.append(f"{kernel.kernel_name}: {mapped or 'no mapping needed'}")

        for dtype in examples.dtypes(module):
            for case in examples.cases(module):
                cuda = examples.compare(module, kernel, "cuda", dtype, case)
                npu = examples.compare(module, emulated, "cuda", dtype, case)
                failures += (not cuda.matches) + (not npu.matches) + (not identical)
                shape = "".join(f", {key}={value}" for key, value in case.items())
                print(
                    f"| {kernel.kernel_name} | {str(dtype).removeprefix('torch.')}{shape} "
                    f"| {'match' if cuda.matches else 'MISMATCH'} (max err {cuda.max_abs_error:.2g}) "
                    f"| {'match' if npu.matches else 'MISMATCH'} (max err {npu.max_abs_error:.2g}) "
                    f"| {identical} |"
                )

    print("\nemulation passes (NPU variant -> emulated on CUDA):")

    for note in notes:
        print(f"  {note}")

    print(f"failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
