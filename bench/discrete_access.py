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

With ``--without PASS``, ``before`` is instead the NPU variant built by the
NPU pipeline without that pass (flags as the launch decides, in both), only
examples whose NPU variant the pass changes are compiled, each with its
inputs as made and strided (``examples.noncontiguous``), and the table adds
the scalar loops (``scf.for`` marked ``ExtractedLoadOrStore``: one per axis
an access runs element by element) and the ``memref.copy`` ops (the affine
loads and stores, and each row of a gather along rows only) of each. The
``DiscreteMemAccess`` count is per operation, not per access: a gather whose
offsets are computed as a block before the loop (a ``where`` of them) has
one more, the ``tensor.extract`` of each offset. A pass that turns no affine
access into a scalar one leaves the loops and the copies as they were.

    python bench/discrete_access.py [PATHS] [--dtypes float16 float32] [--bishengir] [--configs all|ends] [--contiguous]
    python bench/discrete_access.py examples --without ConfineMaskedLanes [--dtypes ...]
"""

import argparse
import ast
import datetime
import importlib.metadata
import math
import pathlib

import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.cache import Variant
from ninetoothed_ascend.check import compile_check
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.npu import (
    contiguous_flat_access,
    transpose_strided_tiles,
)
from ninetoothed_ascend.compiler.npu.ub.fit_unified_buffer import kernel_configs
from ninetoothed_ascend.compiler.passes import run_pipeline
from ninetoothed_ascend.compiler.target import Target
from ninetoothed_ascend.jit.handle import import_variant

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
    parser.add_argument(
        "--without",
        metavar="PASS",
        help="compare the NPU variant with the one built without this pass",
    )
    arguments = parser.parse_args()
    bishengir = None

    if arguments.bishengir:
        from ninetoothed_ascend.check import bishengir

    if arguments.without:
        without(arguments, bishengir)

        return

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


class _Built:
    # What ``compile_check.launch_arguments`` reads of a handle, for a
    # variant built here.

    def __init__(self, handle, source):
        self.kernel_name = handle.kernel_name
        self.launch_name = handle.launch_name
        self._source = source

    def source(self, variant):
        return self._source


def without(arguments, bishengir=None):
    """The ``--without PASS`` table: ``DiscreteMemAccess``, scalar loops and ``memref.copy`` per case, without the pass and with it; with ``bishengir``, BiShengIR's planned UB bytes of the first config (and its outcome where not ``hivmc``)."""

    removed = pipelines.PASSES[arguments.without]
    passes = tuple(step for step in pipelines.NPU if step is not removed)

    print(
        f"{datetime.date.today()}, triton-ascend {importlib.metadata.version('triton-ascend')}, "
        f"before: the NPU pipeline without {arguments.without}"
    )
    print(
        "| example | case | dtype | layout | DiscreteMemAccess before | after "
        "| scalar loops before | after | memref.copy before | after |"
        + (" UB B before | after |" if bishengir else "")
    )
    print("| --- " * (12 if bishengir else 10) + "|")

    for path in examples.find_modules(arguments.paths):
        module = examples.load_module(path)
        handle = module.kernel
        source = run_pipeline(
            handle.source("cuda"), passes, Target.from_environment("npu")
        ).source

        if source == handle.source("npu"):
            continue

        built = _Built(handle, source)
        variants = (
            (import_variant(Variant(source), "npu_without"), built),
            (handle.module("npu"), handle),
        )

        for dtype_name in arguments.dtypes:
            dtype = getattr(torch, dtype_name)

            if dtype not in examples.dtypes(module):
                continue

            for case in examples.cases(module):
                for layout in ("contiguous", "strided"):
                    inputs = module.inputs("cpu", dtype, **case)

                    if layout == "strided":
                        inputs = examples.noncontiguous(inputs)

                    counts = []

                    for variant_module, variant_handle in variants:
                        kernel, calls = compile_check.launch_arguments(
                            variant_module, variant_handle, module.launch, inputs
                        )
                        config, signature, constants, attrs = calls[0]
                        linalg = compile_check.compile_stages(
                            kernel, signature, constants, attrs=attrs
                        )[0]
                        counts.append(
                            (
                                linalg.count("DiscreteMemAccess"),
                                linalg.count("{ExtractedLoadOrStore"),
                                linalg.count("memref.copy"),
                            )
                            + ((_planned(bishengir, linalg),) if bishengir else ())
                        )

                    cells = " | ".join(
                        f"{before} | {after}" for before, after in zip(*counts)
                    )
                    print(
                        f"| {path.stem} | {_case(case)} | {dtype_name} | {layout} | {cells} |",
                        flush=True,
                    )


def _planned(bishengir, linalg):
    result = bishengir.compile_linalg(linalg, memory_report=True, timeout=600)
    planned = "—" if result.planned_ub_bytes is None else str(result.planned_ub_bytes)

    return planned if result.outcome == "hivmc" else f"{planned} ({result.outcome})"


def _case(case):
    return ", ".join(f"{key}={value}" for key, value in case.items()) or "default"


def _ub(value):
    return "—" if value is None else value


if __name__ == "__main__":
    main()
