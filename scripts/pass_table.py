"""Fill the "fires on" column of docs/passes.md from the bundled examples.

For every example kernel, the rewrites its NPU and CPU variants recorded
(``handle.rewrites(variant)``) say which passes changed it. This script
rewrites the last column of each pipeline's table in docs/passes.md with
those kernels; ``--check`` only compares, and exits with 1 if the document
is out of date (the tests run it that way).

    python scripts/pass_table.py [--check]
"""

import argparse
import collections
import pathlib
import re
import sys

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler import pipelines

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "passes.md"

#: The heading of each variant's pipeline table in the document, and the variant.
SECTIONS = {f"## {variant.upper()} pipeline": variant for variant in pipelines.VARIANTS}


def fires_on(modules):
    """Return ``{variant: {pass name: sorted kernel names}}`` for loaded example ``modules``."""

    fired = {variant: collections.defaultdict(set) for variant in SECTIONS.values()}

    for module in modules:
        for variant, passes in fired.items():
            for pass_name, count in module.kernel.rewrites(variant):
                if count:
                    passes[pass_name].add(module.kernel.kernel_name)

    return {
        variant: {name: sorted(kernels) for name, kernels in passes.items()}
        for variant, passes in fired.items()
    }


def updated(document, fired, kernel_count):
    """Return ``document`` (``str``) with each table row's last cell set from ``fired``.

    A pass that fires on all ``kernel_count`` examples gets "every example (N)".
    """

    lines, variant = [], None

    for line in document.splitlines(keepends=True):
        heading = line.strip()

        if heading.startswith("#"):
            variant = SECTIONS.get(heading)

        row = re.match(r"\| `(\w+)` \|(.*)\|([^|]*)\|\n?$", line)

        if variant is not None and row:
            kernels = fired[variant].get(row.group(1), [])
            cell = (
                f"every example ({kernel_count})"
                if len(kernels) == kernel_count
                else ", ".join(kernels) or "—"
            )
            line = f"| `{row.group(1)}` |{row.group(2)}| {cell} |\n"

        lines.append(line)

    return "".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    arguments = parser.parse_args()

    modules = [
        examples.load_module(path)
        for path in examples.find_modules([ROOT / "examples"])
    ]
    document = DOCUMENT.read_text()
    new = updated(document, fires_on(modules), len(modules))

    if arguments.check:
        if new != document:
            sys.exit(f"{DOCUMENT} is out of date: run python scripts/pass_table.py")
        return

    DOCUMENT.write_text(new)


if __name__ == "__main__":
    main()
