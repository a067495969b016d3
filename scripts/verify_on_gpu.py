"""Verification on a CUDA GPU: the CUDA variant and the NPU variant (emulated) of every example against torch.

Level 3 (emulation): the NPU variant is imported with CUDA Triton and
launched on CUDA tensors. The examples' NPU variants contain no Ascend-only
symbol (no Ascend libdevice, no hf32), so no mapping is needed for them.
Also checks that the CUDA variant is byte for byte what ``ninetoothed.make``
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
                reference = ninetoothed.jit(module.softmax)

        identical = pathlib.Path(reference._source).read_text() == kernel.source("cuda")

        for dtype in (torch.float16, torch.float32):
            cuda = examples.compare(module, kernel, "cuda", dtype)
            npu = examples.compare(module, kernel.variant("npu"), "cuda", dtype)
            failures += (not cuda.matches) + (not npu.matches) + (not identical)
            print(
                f"| {kernel.kernel_name} | {str(dtype).removeprefix('torch.')} "
                f"| {'match' if cuda.matches else 'MISMATCH'} (max err {cuda.max_abs_error:.2g}) "
                f"| {'match' if npu.matches else 'MISMATCH'} (max err {npu.max_abs_error:.2g}) "
                f"| {identical} |"
            )

    print(f"failures: {failures}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
