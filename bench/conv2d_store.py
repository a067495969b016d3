"""conv2d's output store on an NCHW output: the scalar store against DMA stores, through BiShengIR.

Runs in the triton-ascend environment with the ``bishengir`` extra (levels 2
and 3: ``ttir`` + ``ttadapter``, then ``bishengir-compile`` up to the
external ``hivmc`` step; no NPU). The NPU variant of
``examples/vision/conv2d.py`` is edited by hand (on its AST, here) into one
variant per form of the output store, each compiled for the launch the
example makes (:func:`ninetoothed_ascend.check.compile_check.launch_arguments`:
triton-ascend 3.2's specialization) for every config of the set:

* ``transposed``: the pipeline's own output. Where the store flag's
  collapse test holds (batch 1), the output's rows step 1 and its filters
  do not, ``TransposeStridedTiles`` stores ``tl.trans`` of the value,
  converted to the output's type first, through swapped pointers and mask:
  one DMA whose innermost axis steps 1. Where the rows do not collapse whole
  but do within an image (batch >= 2: the flat row index ``m = n * P * Q +
  p * Q + q`` crosses images inside a tile), it transposes the value once
  and stores it by a loop over the images the tile touches, each a masked
  transposed DMA whose address ``n * t0 + (m - n * P * Q) * t3`` is affine
  in ``m`` (its own launch flag).
* ``scalar``: the transposed stores' launch flags ``False``: the store
  flag is ``False`` on an NCHW output too (``ContiguousFlatAccess``'s store
  rule, docs/benchmarks.md), so the store is a scalar loop.
* ``dma``: the store flag without its unit-stride test (before 1dfe38b) and
  the transposed store's flag ``False``: one DMA of the ``(BLOCK_M,
  BLOCK_N)`` tile whose innermost axis, the filters, steps ``P * Q``.
* ``transposed-program``: the accumulator computed transposed,
  ``tl.dot(Wᵀ, Xᵀ)`` into a ``(BLOCK_N, BLOCK_M)`` tile, every load of the
  program with its axes swapped (a ``tl.trans`` of a load is its inner,
  transposed load), so the store needs no transposition; the measured
  launch only (the general path is not kept).
* ``channels-last``: the pipeline's own output, launched with a
  channels-last output (``torch.channels_last``): the store rule takes the
  fast path, a DMA whose innermost axis, the filters, steps 1. A reference:
  what a DMA store costs where the layout gives it.
Each row: ``DiscreteMemAccess`` markers in the ``ttadapter`` output,
BiShengIR's outcome and its planned UB bytes (``--enable-memory-display``,
multi-buffer copies included).

    python bench/conv2d_store.py [--dtypes float16 float32] [--case 1] [--set batch=3 ...] [--configs launch|all] [--variants ...] [--repeat N]
"""

import argparse
import ast
import datetime
import importlib.metadata
import importlib.util
import pathlib
import sys
import tempfile

import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import bishengir, compile_check
from ninetoothed_ascend.compiler.generated import GeneratedModule
from ninetoothed_ascend.compiler.npu import contiguous_flat_access
from ninetoothed_ascend.compiler.npu.transpose_strided_tiles import SwapAxes, on_path
from ninetoothed_ascend.compiler.syntax import clone, import_aliases, resolve

EXAMPLE = pathlib.Path(__file__).resolve().parent.parent / "examples/vision/conv2d.py"

VARIANTS = ("transposed", "scalar", "dma", "transposed-program", "channels-last")


def variant_source(source, variant):
    """The NPU variant ``source`` (``str``) with its output store in form ``variant`` (one of :data:`VARIANTS`).

    :raises ValueError: no ``tl.store`` behind a ``ContiguousFlatAccess``
        flag with a unit-stride test (the store rule) and a
        ``TransposeStridedTiles`` flag in ``source``.
    """

    if variant in ("transposed", "channels-last"):
        return source

    tree = ast.parse(source)
    edit = _Edit(tree)

    if edit.segments_keyword is not None:
        # The per-image stores transpose the value, not the program.
        edit.segments_keyword.value = ast.Constant(False)

    if variant in ("scalar", "dma"):
        edit.transposed_keyword.value = ast.Constant(False)

    if variant == "dma":
        edit.flag_keyword.value = clone(edit.collapse_test)
    elif variant == "transposed-program":
        edit.transpose_program()

    return ast.unparse(ast.fix_missing_locations(tree))


class _Edit:
    def __init__(self, tree):
        self.aliases = import_aliases(tree)
        self.kernel = self.launch_call = self.flag_keyword = None

        # The launch is ``<kernel>_with_auto_tuning()[grid](...)`` (DeferAutotune),
        # which ``GeneratedModule.launches`` does not follow: the call that
        # passes the flag and the kernel that takes it.
        kernels = GeneratedModule(tree, self.aliases).kernels().values()

        for call in ast.walk(tree):
            for item in (
                getattr(call, "keywords", ()) if isinstance(call, ast.Call) else ()
            ):
                if (
                    (item.arg or "").startswith(contiguous_flat_access.FLAG_PREFIX)
                    and isinstance(item.value, ast.BoolOp)
                    and len(item.value.values) == 2
                ):
                    self.launch_call, self.flag_keyword = call, item
                    self.kernel = next(
                        kernel
                        for kernel in kernels
                        if item.arg in {argument.arg for argument in kernel.args.args}
                    )

        if self.flag_keyword is None:
            raise ValueError("no store behind a flag with a unit-stride test")

        self.flag = self.flag_keyword.arg
        self.collapse_test, unit_stride = self.flag_keyword.value.values
        # ``T.stride(k) == 1``: the filters' stride; the rows' is the
        # collapse test's innermost.
        self.column_stride = unit_stride.left
        self.row_stride = self.collapse_test.args[1].elts[-1]
        # ``<transposed store> if T else <the store>`` (TransposeStridedTiles).
        self.store = next(
            node
            for node in ast.walk(self.kernel)
            if isinstance(node, ast.Expr)
            and isinstance(node.value, ast.IfExp)
            and self.is_call(node.value.orelse, "triton.language.store")
            and any(
                isinstance(inner, ast.Name) and inner.id == self.flag
                for inner in ast.walk(node.value.orelse.args[0])
            )
        )
        self.plain_store = self.store.value.orelse
        self.transposed_keyword = next(
            item
            for item in self.launch_call.keywords
            if item.arg == self.store.value.test.id
        )
        # ``if S: <per-image stores> else: <the store>``, where the pipeline
        # made one (TransposeStridedTiles).
        self.segments_keyword = next(
            (
                item
                for node in ast.walk(self.kernel)
                if isinstance(node, ast.If) and node.orelse == [self.store]
                for item in self.launch_call.keywords
                if item.arg == node.test.id
            ),
            None,
        )

    def is_call(self, node, name):
        return isinstance(node, ast.Call) and resolve(node.func, self.aliases) == name

    def trans(self, node):
        return ast.Call(ast.parse("triton.language.trans").body[0].value, [node], [])

    def swapped_store(self, value):
        """The store on the flag's path, axes swapped, writing ``value``."""

        store = SwapAxes().visit(on_path(clone(self.plain_store), self.flag))
        store.args[1] = value

        return store

    def transpose_program(self):
        (dot,) = [
            node
            for node in ast.walk(self.kernel)
            if isinstance(node, ast.AugAssign)
            and self.is_call(node.value, "triton.language.dot")
        ]
        accumulator = dot.target.id
        (zeros,) = [
            node
            for node in ast.walk(self.kernel)
            if isinstance(node, ast.Assign)
            and [target.id for target in node.targets] == [accumulator]
            and self.is_call(node.value, "triton.language.zeros")
        ]
        zeros.value.args[0].elts.reverse()
        left, right = dot.value.args
        dot.value.args = [
            self.transposed(right, accumulator),
            self.transposed(left, accumulator),
        ]
        self.store.value = self.swapped_store(
            self.transposed(self.plain_store.args[1], accumulator)
        )
        self.flag_keyword.value = clone(self.collapse_test)

    def transposed(self, node, accumulator):
        """An expression for the transpose of the 2-D tile ``node``, where ``accumulator`` is held transposed."""

        if self.is_call(node, "triton.language.trans"):
            return node.args[0]

        if self.is_call(node, "triton.language.load"):
            return SwapAxes().visit(clone(node))

        if isinstance(node, ast.Name) and node.id == accumulator:
            return node

        if isinstance(node, ast.IfExp):
            return ast.IfExp(
                node.test,
                self.transposed(node.body, accumulator),
                self.transposed(node.orelse, accumulator),
            )

        if isinstance(node, ast.BinOp):
            return ast.BinOp(
                self.transposed(node.left, accumulator),
                node.op,
                self.transposed(node.right, accumulator),
            )

        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            # An element-wise helper (``ninetoothed_ascend_float32_if_float64``).
            return ast.Call(node.func, [self.transposed(node.args[0], accumulator)], [])

        return self.trans(node)


def _channels_last(launch):
    """``launch`` with the output it makes (the last argument) in ``torch.channels_last``."""

    def channels_last_launch(kernel, *inputs):
        def call(*arguments):
            *operands, output = arguments

            return kernel(*operands, output.to(memory_format=torch.channels_last))

        return launch(call, *inputs)

    return channels_last_launch


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", nargs="+", default=["float16", "float32"])
    parser.add_argument("--case", type=int, default=1, help="index into CASES")
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="override integer fields of the case (batch, channels, height, width, filters, kernel)",
    )
    parser.add_argument(
        "--configs", choices=compile_check.CONFIG_SETS, default="launch"
    )
    parser.add_argument("--variants", nargs="+", choices=VARIANTS, default=VARIANTS)
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="compile ttir and ttadapter this many times per config, counting failures"
        " (triton-adapter-opt crashed nondeterministically on one form)",
    )
    arguments = parser.parse_args()
    example = examples.load_module(EXAMPLE)
    handle = example.kernel
    case = examples.cases(example)[arguments.case] | {
        key: int(value) for key, value in (item.split("=", 1) for item in arguments.set)
    }
    print(
        f"{datetime.date.today()}, triton-ascend {importlib.metadata.version('triton-ascend')}, "
        f"ascendnpu-ir {bishengir.version()}, conv2d {case}"
    )
    print(
        "| variant | dtype | BLOCK_M x BLOCK_N x BLOCK_K | DiscreteMemAccess | outcome | planned UB (B) |"
    )
    print("| --- | --- | --- | --- | --- | --- |")

    with tempfile.TemporaryDirectory() as directory:
        for variant in arguments.variants:
            path = pathlib.Path(directory) / f"conv2d_{variant.replace('-', '_')}.py"
            path.write_text(variant_source(handle.source("npu"), variant))
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)

            for dtype_name in arguments.dtypes:
                inputs = example.inputs("cpu", getattr(torch, dtype_name), **case)
                kernel, calls = compile_check.launch_arguments(
                    module,
                    handle,
                    _channels_last(example.launch)
                    if variant == "channels-last"
                    else example.launch,
                    inputs,
                    configs=arguments.configs,
                )

                for config, signature, constants, attrs in calls:
                    blocks = " x ".join(
                        str(value)
                        for name, value in config.items()
                        if "BLOCK_SIZE" in name
                    )
                    linalg, failures = None, []

                    for _ in range(arguments.repeat):
                        try:
                            linalg, _ = compile_check.compile_stages(
                                kernel, signature, constants, attrs=attrs
                            )
                        except compile_check.StageError as error:
                            failures.append(str(error).splitlines()[0])

                    if failures:
                        print(
                            f"| {variant} | {dtype_name} | {blocks} | — | {len(failures)} of "
                            f"{arguments.repeat} compiles failed: {failures[0][:80]} | — |",
                            flush=True,
                        )

                    if linalg is None:
                        continue

                    result = bishengir.compile_linalg(
                        linalg, memory_report=True, timeout=300
                    )
                    outcome = result.outcome

                    if result.ub_required_bytes is not None:
                        outcome += f" ({result.ub_required_bytes:,} B required)"

                    print(
                        f"| {variant} | {dtype_name} | {blocks} | {linalg.count('DiscreteMemAccess')} "
                        f"| {outcome} | {result.planned_ub_bytes:,} |"
                        if result.planned_ub_bytes is not None
                        else f"| {variant} | {dtype_name} | {blocks} | {linalg.count('DiscreteMemAccess')} | {outcome} | — |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
