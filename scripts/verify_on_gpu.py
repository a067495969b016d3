"""Verification on a CUDA GPU: the CUDA variant and the NPU variant (emulated) of every example against torch.

Level 4 (emulation): the NPU variant, emulated on CUDA
(``handle.emulated("cuda")``: its source with triton-ascend's libdevice
mapped to CUDA Triton's libdevice or core ``triton.language`` and ``hf32``
to ``tf32``, everything else as the NPU variant has it), launched on CUDA
tensors. The emulation passes that fired are printed per kernel. Also checks that the CUDA variant is byte for byte what ``ninetoothed.make``
generates on this GPU, with the GPU's own properties.

    python scripts/verify_on_gpu.py [PATHS]

PATHS are example modules or directories (default: all of examples/), so
that groups can run in parallel processes. A run that fails where the
example's ``KNOWN_FAILURES`` names ``"cuda"`` (for the CUDA variant) is
reported as a known failure and not counted.
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
    failures = runs = 0
    counts = {"cuda": 0, "npu": 0}
    notes = []

    for path in examples.find_modules(sys.argv[1:] or [EXAMPLES]):
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

        try:
            emulated = kernel.emulated("cuda")
        except Exception as error:  # reported in every row of the kernel
            emulated = _Unavailable(error)

        mapped = ", ".join(
            f"{name} x{count}"
            for name, count in (
                ()
                if isinstance(emulated, _Unavailable)
                else kernel.emulated_source("cuda").rewrites
            )
        )
        notes.append(f"{kernel.kernel_name}: {mapped or 'no mapping needed'}")

        for dtype in examples.dtypes(module):
            for case in examples.cases(module):
                cells = []

                for column, launch in (("cuda", kernel), ("npu", emulated)):
                    verdict = _run(module, launch, dtype, case)
                    known = getattr(module, "KNOWN_FAILURES", {}).get(column)

                    if known and not verdict.startswith("match"):
                        verdict = f"known failure ({verdict})"

                    counts[column] += verdict.startswith("match")
                    failures += not verdict.startswith(("match", "known failure"))
                    cells.append(verdict)

                runs += 1
                failures += not identical
                shape = "".join(f", {key}={value}" for key, value in case.items())
                print(
                    f"| {kernel.kernel_name} | {str(dtype).removeprefix('torch.')}{shape} "
                    f"| {cells[0]} | {cells[1]} | {identical} |"
                )

    print("\nemulation passes (NPU variant -> emulated on CUDA):")

    for note in notes:
        print(f"  {note}")

    print(
        f"runs: {runs}; CUDA variant matches torch in {counts['cuda']}, "
        f"emulated NPU variant in {counts['npu']}"
    )
    print(f"failures: {failures}")
    sys.exit(1 if failures else 0)


class _Unavailable:
    def __init__(self, error):
        self.error = error

    def __call__(self, *args, **kwargs):
        raise self.error


def _run(module, launch, dtype, case):
    try:
        result = examples.compare(module, launch, "cuda", dtype, case)
    except Exception as error:  # one failing run must not hide the others
        first_line = (str(error).splitlines() or [""])[0][:120]
        return f"ERROR {type(error).__name__}: {first_line}"

    verdict = "match" if result.matches else "MISMATCH"

    return f"{verdict} (max err {result.max_abs_error:.2g})"


if __name__ == "__main__":
    main()
