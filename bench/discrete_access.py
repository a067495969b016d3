"""``DiscreteMemAccess`` ops and BiShengIR's planned UB per element, with and without the contiguous fast path.

Runs in the triton-ascend environment (``ttir`` + ``ttadapter``, no NPU;
BiShengIR with ``--bishengir``, the ``bishengir`` extra). For each example,
dtype, shape case and NPU autotune config, the NPU variant is compiled with
the arguments, constexpr values and specialization (integers equal to 1
as constants) of the launch its ``launch`` makes
(:func:`ninetoothed_ascend.check.compile_check.launch_arguments`), twice:

* ``after``: as the launch decides, ``ContiguousFlatAccess``'s and
  ``TransposeStridedTiles``' flags (``ninetoothed_ascend_flat_affine_*``,
  ``ninetoothed_ascend_transposed_*``) computed from the strides;
* ``before``: every flag ``False``, which the frontend folds to the
  general path: the address as it was before the passes.

Each row counts the ``DiscreteMemAccess`` ops (the loads and stores that
``triton-adapter-opt`` lowers to scalar loops) in the ``ttadapter`` output,
and, with ``--bishengir``, BiShengIR's planned UB bytes (multi-buffer copies
included) divided by the elements of one program's tiles (the product of the
config's block sizes), with BiShengIR's outcome where it is not ``hivmc``
(the furthest a machine without CANN gets).

``before`` is compiled only where it differs from ``after`` (a flag the
launch sets ``True``); elsewhere the row repeats ``after``.

    python bench/discrete_access.py [PATHS] [--dtypes float16 float32] [--bishengir] [--configs all|ends] [--contiguous]
"""

import argparse
import ast
import datetime
import importlib.metadata
import math
import pathlib

import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import compile_check
from ninetoothed_ascend.compiler.npu import (
    contiguous_flat_access,
    transpose_strided_tiles,
)
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import kernel_configs

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples" / "flatten"


def measure(linalg, elements, bishengir):
    """``(DiscreteMemAccess count, UB bytes per element or None)`` of one ``ttadapter`` output.

    ``elements``: the product of the autotuned block sizes, or ``None``
    where the kernel has none (constants of its arrangement): then the
    planned UB bytes of one program, marked ``B``.
    """

    discrete = linalg.count("DiscreteMemAccess")

    if bishengir is None:
        return discrete, None

    result = bishengir.compile_linalg(linalg, memory_report=True, timeout=300)

    if result.planned_ub_bytes is None:
        return discrete, result.outcome

    per_element = (
        f"{result.planned_ub_bytes} B"
        if elements is None
        else f"{result.planned_ub_bytes / elements:.1f}"
    )

    if result.outcome != "hivmc":
        per_element += f" ({result.outcome})"

    return discrete, per_element


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=[EXAMPLES])
    parser.add_argument("--dtypes", nargs="+", default=["float16", "float32"])
    parser.add_argument("--bishengir", action="store_true")
    parser.add_argument(
        "--configs",
        choices=("all", "ends"),
        default="all",
        help="every autotune config, or the smallest and the largest",
    )
    parser.add_argument(
        "--contiguous",
        action="store_true",
        help="only the cases whose input tensors are all contiguous",
    )
    arguments = parser.parse_args()
    bishengir = None

    if arguments.bishengir:
        from ninetoothed_ascend.check import bishengir

    print(
        f"{datetime.date.today()}, triton-ascend {importlib.metadata.version('triton-ascend')}"
        + (f", ascendnpu-ir {bishengir.version()}" if bishengir else "")
    )
    print(
        "| example | case | dtype | config | flags | DiscreteMemAccess before | after "
        "| UB B/elem before | after |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    for path in examples.find_modules(arguments.paths):
        module = examples.load_module(path)

        for dtype_name in arguments.dtypes:
            dtype = getattr(torch, dtype_name)

            if dtype not in examples.dtypes(module):
                continue

            for case in examples.cases(module):
                inputs = module.inputs("cpu", dtype, **case)

                if arguments.contiguous and not all(
                    tensor.is_contiguous()
                    for tensor in inputs
                    if isinstance(tensor, torch.Tensor)
                ):
                    continue

                tuned = {
                    name
                    for _, configs in kernel_configs(
                        ast.parse(module.kernel.source("npu"))
                    )
                    for config in configs
                    for name in config
                }
                kernel, calls = compile_check.launch_arguments(
                    module.kernel.module("npu"),
                    module.kernel,
                    module.launch,
                    inputs,
                )

                if arguments.configs == "ends":
                    calls = [calls[0], calls[-1]] if len(calls) > 1 else calls

                for config, signature, constants, attrs in calls:
                    flags = {
                        name: value
                        for name, value in constants.items()
                        if name.startswith(
                            (
                                contiguous_flat_access.FLAG_PREFIX,
                                transpose_strided_tiles.FLAG_PREFIX,
                            )
                        )
                    }
                    shown = {
                        name.rsplit("_prefix_", 1)[-1].removeprefix(
                            "ninetoothed_"
                        ): value
                        for name, value in config.items()
                        if name not in flags and "next_power_of_2" not in name
                    }
                    # NineToothed passes a launch-sized block twice, as given and
                    # rounded up to a power of two; the tile has the latter.
                    blocks = [
                        value
                        for name, value in config.items()
                        if (name in tuned or "next_power_of_2" in name)
                        and f"ninetoothed_next_power_of_2_prefix_{name}"
                        not in constants
                    ]
                    elements = math.prod(blocks) if blocks else None
                    before = constants | dict.fromkeys(flags, False)
                    rows = [
                        measure(
                            compile_check.compile_stages(
                                kernel, signature, values, attrs=attrs
                            )[0],
                            elements,
                            bishengir,
                        )
                        for values in (
                            (before, constants) if any(flags.values()) else (constants,)
                        )
                    ]

                    if len(rows) == 1:
                        rows *= 2
                    print(
                        f"| {path.stem} | {_case(case)} | {dtype_name} | {shown} "
                        f"| {sum(flags.values())}/{len(flags)} "
                        f"| {rows[0][0]} | {rows[1][0]} | {_ub(rows[0][1])} | {_ub(rows[1][1])} |",
                        flush=True,
                    )


def _case(case):
    return ", ".join(f"{key}={value}" for key, value in case.items()) or "default"


def _ub(value):
    return "—" if value is None else value


if __name__ == "__main__":
    main()
