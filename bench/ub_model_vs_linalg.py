"""The UB model against triton-adapter's Linalg output, for every example, config and dtype.

Runs in the triton-ascend environment (the Ascend compile check's
``ttadapter`` stage; no NPU). For each NPU config it reports:

* ``model loads``: the model's load buffers, single-buffered, with the
  real dtype's element size;
* ``linalg alloc``: the bytes of the ``memref.alloc`` ops in the Linalg
  output, which are exactly the load buffers at this stage;
* ``model peak``: the model's estimate of all tiles live at once, with
  double buffering, and with the real dtype (the generated configs use
  4 bytes per element for any dtype);
* ``linalg tensors``: ``memref.alloc`` plus every ``tensor.empty`` (the
  intermediates, before bishengir-compile reuses or fuses any of them; an
  upper bound on what they would need, with no liveness);
* ``linalg, loads x2``: the same with the load buffers doubled, as
  multi-buffering would (what the model's peak is to be compared with).

Later buffer assignment happens in ``bishengir-compile`` (CANN), which is
not available here; the final UB use is not observable.

    python bench/ub_model_vs_linalg.py [PATHS] (default: examples/)
"""

import argparse
import ast
import math
import pathlib
import re

import torch

from ninetoothed_ascend import examples
from ninetoothed_ascend.check import compile_check
from ninetoothed_ascend.compiler.facts import stored_layout
from ninetoothed_ascend.compiler.npu.ub.model import footprint
from ninetoothed_ascend.compiler.syntax import import_aliases

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

_MLIR_BYTES = {
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
    "i1": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
}


def mlir_bytes(text, pattern):
    total = 0

    for shape in re.findall(pattern, text):
        *dims, element = shape.split("x")

        if all(dim.isdigit() for dim in dims):
            total += math.prod(int(dim) for dim in dims) * _MLIR_BYTES.get(element, 4)

    return total


def pointer_sizes(handle, launch, inputs):
    """Bytes per element of each pointer parameter, from the launch's tensors (index tensors are often int64)."""

    _, arguments = compile_check.compile_arguments(
        handle.module("npu"), handle, launch, inputs, "npu"
    )
    signature, _ = arguments[0]

    return {
        name: _MLIR_BYTES[kind.removeprefix("*").replace("fp", "f")]
        for name, kind in signature.items()
        if kind.startswith("*")
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=[str(EXAMPLES)])
    arguments = parser.parse_args()
    print(
        "| kernel | dtype | config | model loads | linalg alloc | model peak "
        "| linalg tensors | linalg, loads x2 | peak / loads x2 |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")

    for path in examples.find_modules(arguments.paths):
        module = examples.load_module(path)
        handle = module.kernel
        tree = ast.parse(handle.source("npu"))
        aliases = import_aliases(tree)
        kernel = next(
            node
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == handle.kernel_name
        )
        # Which constexprs choose a transposed access: kept with the variant.
        layout = stored_layout(handle.entry.variants["npu"].facts, kernel.name)

        for dtype in (torch.float16, torch.float32):
            if dtype not in examples.dtypes(module):
                continue

            inputs = module.inputs("cpu", dtype)
            elem_sizes = pointer_sizes(handle, module.launch, inputs)

            for result in compile_check.check_variant(handle, module.launch, *inputs):
                model = footprint(
                    kernel, aliases, result.config, elem_sizes, layout=layout
                )
                alloc = mlir_bytes(
                    result.linalg, r"memref\.alloc\(\) : memref<([0-9a-z]+)>"
                )
                empty = mlir_bytes(
                    result.linalg, r"tensor\.empty\(\) : tensor<([0-9a-z]+)>"
                )
                config = "x".join(str(value) for value in result.config.values())
                print(
                    f"| {handle.kernel_name} | {str(dtype).removeprefix('torch.')} | {config} "
                    f"| {model.loads} | {alloc} | {model.peak} | {alloc + empty} "
                    f"| {2 * alloc + empty} | {model.peak / (2 * alloc + empty):.2f} |"
                )


if __name__ == "__main__":
    main()
