"""Count autotune configs per example, CUDA variant vs NPU variant, and NPU duplicates.

triton-ascend ignores ``num_warps`` and ``num_stages`` (its autotune example;
docs/ascend.md, "Autotuning"), so two NPU configs whose
meta-parameters are equal are one NPU compile paid twice. Prints, per
example, the configs of each variant and how many NPU configs repeat the
meta-parameters of another, then the totals.

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) .venv/bin/python bench/npu_configs.py [examples]
"""

import argparse
import ast
import pathlib

from ninetoothed_ascend import examples


def autotune_configs(source):
    """Return the meta-parameter dicts (as source text) of each ``triton.autotune`` call."""

    found = []

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("autotune"):
            for keyword in node.keywords:
                if keyword.arg == "configs" and isinstance(keyword.value, ast.List):
                    found.append(
                        [ast.unparse(config.args[0]) for config in keyword.value.elts]
                    )

    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "paths", nargs="*", type=pathlib.Path, default=[pathlib.Path("examples")]
    )
    arguments = parser.parse_args()
    totals = {"cuda": 0, "npu": 0, "duplicates": 0}
    print("| example | CUDA configs | NPU configs | NPU duplicates |")
    print("| --- | ---: | ---: | ---: |")

    for path in examples.find_modules(arguments.paths):
        handle = examples.load_module(path).kernel
        cuda = sum(map(len, autotune_configs(handle.source("cuda"))))
        npu_lists = autotune_configs(handle.source("npu"))
        npu = sum(map(len, npu_lists))
        duplicates = sum(len(configs) - len(set(configs)) for configs in npu_lists)
        totals["cuda"] += cuda
        totals["npu"] += npu
        totals["duplicates"] += duplicates
        print(f"| {path.stem} | {cuda} | {npu} | {duplicates} |")

    print(f"| total | {totals['cuda']} | {totals['npu']} | {totals['duplicates']} |")


if __name__ == "__main__":
    main()
