"""Write every generated source of the bundled examples (and of recorded manifests) to a directory.

Run it before and after a change to the passes or the layer around them and
compare the two directories (``diff -r``): a refactoring must leave every file
byte for byte as it was, or explain each difference. Per kernel it writes the
CUDA, NPU and CPU variants, the NPU variant emulated on CUDA and on the CPU,
and the launch facts stored with the cache entry. A variant that cannot be
built writes the error instead (``NAME.VARIANT.error``).

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) python scripts/dump_variants.py OUT_DIR \
        [--manifests DIR_OR_FILE ...]

Kernels of a manifest (``ninetoothed-ascend record``) are rebuilt from their
recorded NineToothed source, as ``warm`` and ``check`` rebuild them.
"""

import argparse
import json
import pathlib

from ninetoothed_ascend import examples
from ninetoothed_ascend.jit import GeneratedSource, rebuild

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The variants, and the devices the NPU variant is emulated on.
VARIANTS = ("cuda", "npu", "cpu")
EMULATIONS = ("cuda", "cpu")


def dump(handle, name, directory):
    """Write every source of ``handle`` (a kernel handle) under ``directory`` as ``name.*``."""

    for variant in VARIANTS:
        try:
            text, suffix = handle.source(variant), "py"
        except Exception as error:
            text, suffix = f"{type(error).__name__}: {error}\n", "error"

        (directory / f"{name}.{variant}.{suffix}").write_text(text)

    for device in EMULATIONS:
        try:
            text, suffix = handle.emulated_source(device).source, "py"
        except Exception as error:
            text, suffix = f"{type(error).__name__}: {error}\n", "error"

        (directory / f"{name}.npu-on-{device}.{suffix}").write_text(text)

    launch = handle.entry.launch or {}
    (directory / f"{name}.launch.json").write_text(
        json.dumps(launch, indent=1, sort_keys=True, default=repr) + "\n"
    )


def manifest_kernels(paths):
    """``(name, handle)`` of each kernel of the manifests under ``paths``."""

    files = []

    for path in paths:
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])

    for file in files:
        document = json.loads(file.read_text())

        for index, kernel in enumerate(document["kernels"]):
            generated = GeneratedSource(
                kernel["source"], kernel["kernel_name"], kernel["launch_name"]
            )
            # NineToothed's source is checked against its digest; the other
            # variants are what this installation's passes make of it.
            handle, _ = rebuild(
                kernel["definition"],
                generated,
                tuple(kernel["counters_delta"]),
                kernel["variants"],
                compare=(),
            )
            yield f"{file.stem}.{index:03d}.{kernel['kernel_name']}", handle


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path)
    parser.add_argument("--manifests", type=pathlib.Path, nargs="*", default=())
    arguments = parser.parse_args()
    arguments.directory.mkdir(parents=True, exist_ok=True)

    for path in examples.find_modules([ROOT / "examples"]):
        name = path.relative_to(ROOT / "examples").with_suffix("").as_posix()
        dump(
            examples.load_module(path).kernel,
            name.replace("/", "."),
            arguments.directory,
        )

    for name, handle in manifest_kernels(arguments.manifests):
        dump(handle, name, arguments.directory)


if __name__ == "__main__":
    main()
