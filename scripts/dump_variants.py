"""Write the NPU and CPU variant sources of every bundled example to a directory.

Run it before and after a change to the passes or the layer around them and
compare the two directories (``diff -r``): a refactoring must leave every file
byte for byte as it was, or explain each difference. An example whose variant
fails writes the error instead (``NAME.VARIANT.error``).

    NINETOOTHED_ASCEND_CACHE_DIR=$(mktemp -d) python scripts/dump_variants.py OUT_DIR
"""

import argparse
import pathlib

from ninetoothed_ascend import examples
from ninetoothed_ascend.runtime.handle import VariantUnavailableError

ROOT = pathlib.Path(__file__).resolve().parent.parent

#: The variants the passes build (the CUDA variant is NineToothed's source).
VARIANTS = ("npu", "cpu")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path)
    arguments = parser.parse_args()
    arguments.directory.mkdir(parents=True, exist_ok=True)

    for path in examples.find_modules([ROOT / "examples"]):
        handle = examples.load_module(path).kernel
        name = path.relative_to(ROOT / "examples").with_suffix("").as_posix()
        name = name.replace("/", ".")

        for variant in VARIANTS:
            try:
                text, suffix = handle.source(variant), "py"
            except VariantUnavailableError as error:
                text, suffix = f"{error}\n", "error"

            (arguments.directory / f"{name}.{variant}.{suffix}").write_text(text)


if __name__ == "__main__":
    main()
