"""Run the stand-in library's instance norm (NPU variant, emulated) once per block size, against torch.

Issue 14: the emulated NPU variant of an instance norm with input statistics
was wrong inside a whole library's suite on an H100 and right alone. On a
GPU the autotuner picks the block size by timing, which other xdist workers
disturb; on the CPU the interpreter always takes the largest. This pins each
config of the NPU variant in turn, so a block size whose results are wrong
shows whether the mismatch follows the config rather than other kernels.

    python scripts/downstream_block_sizes.py [--device cuda] [--lengths 256,300,640,1024]

Prints one JSON line per (length, dtype, affine): the largest absolute error
per block size. Exits 1 when any error exceeds the suite's tolerance.
"""

import argparse
import importlib.util
import json
import pathlib
import re
import sys
import tempfile

import ninetoothed
import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "downstream"))

from downstream_ops import instance_norm  # noqa: E402
from downstream_ops.ops import _cached_make  # noqa: E402

_DTYPES = {torch.float32: ninetoothed.float32, torch.float16: ninetoothed.float16}
TOLERANCES = {torch.float32: 1e-4, torch.float16: 1e-2}
#: NineToothed numbers block sizes in the order kernels are made in a process.
_BLOCK = r"ninetoothed_meta_prefix_ninetoothed_BLOCK_SIZE_\d+"


def _pinned(source, block_size, directory):
    """Import ``source`` with its block size pinned: the one autotune config, or the CPU variant's chosen one."""

    if "triton.autotune(" in source:
        # The config whole, num_warps and num_stages included: a GPU compiles
        # (and pipelines) each config by them.
        source = re.sub(
            r"configs=\[.*?\], key=",
            lambda match: "configs=[{}], key=".format(
                next(
                    config
                    for config in re.findall(
                        r"triton\.Config\(\{[^}]*\}[^)]*\)", match.group()
                    )
                    if re.search(rf"{_BLOCK}': {block_size}\b", config)
                )
            ),
            source,
            flags=re.S,
        )
    else:
        source = re.sub(rf"({_BLOCK}=)\d+", rf"\g<1>{block_size}", source)

    path = (
        pathlib.Path(directory)
        / f"pinned_{len(list(pathlib.Path(directory).iterdir()))}.py"
    )
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--device", default="cuda" if torch.cuda.is_available() else "cpu"
    )
    parser.add_argument("--lengths", default="256,300,640,1024")
    arguments = parser.parse_args(argv)
    failed = False

    with tempfile.TemporaryDirectory() as directory:
        for length in map(int, arguments.lengths.split(",")):
            for dtype in (torch.float32, torch.float16):
                for affine in (True, False):
                    kernel = _cached_make(
                        instance_norm.premake, length, affine, _DTYPES[dtype]
                    )
                    source = kernel.emulated_source(arguments.device).source
                    configs = sorted(
                        {
                            int(size)
                            for size in re.findall(
                                rf"'{_BLOCK}': (\d+)", kernel.source("npu")
                            )
                        }
                    )
                    generator = torch.Generator().manual_seed(0)
                    input = (
                        torch.randn((1, 1, length), generator=generator) * 2 + 0.5
                    ).to(arguments.device, dtype)
                    weight = torch.rand(1, generator=generator).to(
                        arguments.device, dtype
                    )
                    bias = torch.randn(1, generator=generator).to(
                        arguments.device, dtype
                    )
                    expected = torch.nn.functional.instance_norm(
                        input.float(),
                        weight=weight.float() if affine else None,
                        bias=bias.float() if affine else None,
                    )
                    # What the library passes; Triton's interpreter copies every
                    # tensor's storage, so on the CPU an empty tensor stands in
                    # (the handle does the same with its own stand-in).
                    placeholder = torch.empty(
                        0, device="meta" if arguments.device != "cpu" else "cpu"
                    )
                    errors = {}

                    for block_size in configs:
                        module = _pinned(source, block_size, directory)
                        output = torch.empty_like(input)
                        getattr(module, kernel.launch_name)(
                            input,
                            weight if affine else placeholder,
                            bias if affine else placeholder,
                            1e-5,
                            output,
                            length,
                        )
                        errors[block_size] = float(
                            (output.float() - expected).abs().max()
                        )

                    failed |= any(
                        error > TOLERANCES[dtype] for error in errors.values()
                    )
                    print(
                        json.dumps(
                            {
                                "length": length,
                                "dtype": str(dtype),
                                "affine": affine,
                                "errors": errors,
                            }
                        ),
                        flush=True,
                    )

    return int(failed)


if __name__ == "__main__":
    sys.exit(main())
