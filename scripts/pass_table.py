"""Generate docs/passes.md's pipeline tables from the passes themselves.

Each pass states its rule in its class docstring, as fields: ``:Constraint:``
(what the target cannot take), ``:Source:`` (the triton-ascend document,
issue or measurement it comes from) and ``:Rewrites:`` (what the pass
changes). A table row per pass, in the order of
``ninetoothed_ascend.compiler.pipelines``, is made of those fields, the test
module that mirrors the pass's module (``tests/compiler/npu/test_<module>.py``
for ``compiler/npu/<module>.py``), and the bundled examples whose variant the
pass changed (``handle.rewrites(variant)``). The prose between the tables is
written by hand; this script replaces each table whole. ``--check`` only
compares, and exits with 1 if the document is out of date (the tests run it
that way).

    python scripts/pass_table.py [--check]
"""

import argparse
import collections
import inspect
import pathlib
import re
import sys

from ninetoothed_ascend import examples
from ninetoothed_ascend.compiler import pipelines

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCUMENT = ROOT / "docs" / "passes.md"

#: The fields a pass's docstring states its rule in.
FIELDS = ("Constraint", "Source", "Rewrites")

#: Each table: its heading in the document, the variant whose rewrites fill
#: its "fires on" column (``None``: no such column), the passes it lists, and
#: its columns.
TABLES = {
    "## NPU pipeline": (
        "npu",
        pipelines.NPU,
        ("pass", "constraint", "source", "what it rewrites", "tests", "fires on"),
    ),
    "## CPU pipeline": (
        "cpu",
        pipelines.CPU,
        ("pass", "constraint", "source", "tests", "fires on"),
    ),
    "## Emulation pipelines": (
        None,
        tuple(
            dict.fromkeys(
                pass_class
                for passes in pipelines.EMULATIONS.values()
                for pass_class in passes
                if pass_class not in pipelines.CPU
            )
        ),
        ("pass", *pipelines.EMULATIONS, "what it maps", "tests"),
    ),
}


def fields(pass_class):
    """Return ``{field: text}`` of the ``:Field: text`` lines of a pass's docstring.

    Field names are capitalized (reST roles such as ``:class:`` are not).

    A field's text runs to the next field or the docstring's end; its lines
    are joined with single spaces.
    """

    docstring = inspect.getdoc(pass_class) or ""
    found = re.findall(r"^:([A-Z]\w*):(.*?)(?=^:[A-Z]\w*:|\Z)", docstring, re.M | re.S)

    return {name: " ".join(text.split()) for name, text in found}


def test_module(pass_class):
    """Return the test module mirroring ``pass_class``'s module, relative to the root, or ``None``.

    A pass whose own module has none is tested with the class it derives
    from (the first in its method resolution order whose module has one).
    """

    for cls in pass_class.__mro__:
        parts = cls.__module__.split(".")[1:]
        path = pathlib.Path("tests", *parts[:-1], f"test_{parts[-1]}.py")

        if (ROOT / path).is_file():
            return path

    return None


def fires_on(modules):
    """Return ``{variant: {pass name: sorted kernel names}}`` for loaded example ``modules``."""

    fired = {variant: collections.defaultdict(set) for variant in pipelines.VARIANTS}

    for module in modules:
        for variant, passes in fired.items():
            for pass_name, count in module.kernel.rewrites(variant):
                if count:
                    passes[pass_name].add(module.kernel.kernel_name)

    return {
        variant: {name: sorted(kernels) for name, kernels in passes.items()}
        for variant, passes in fired.items()
    }


def table(heading, fired, kernel_count):
    """Return the Markdown table under ``heading`` (a key of :data:`TABLES`)."""

    variant, passes, columns = TABLES[heading]
    lines = [
        "| " + " | ".join(columns) + " |",
        "| " + " | ".join("---" for _ in columns) + " |",
    ]

    for pass_class in passes:
        stated = fields(pass_class)
        tests = test_module(pass_class)
        cells = {
            "pass": f"`{pass_class.__name__}`",
            "constraint": stated.get("Constraint", "—"),
            "source": stated.get("Source", "—"),
            "what it rewrites": stated.get("Rewrites", "—"),
            "what it maps": stated.get("Rewrites", "—"),
            "tests": f"`{tests}`" if tests else "—",
        }

        for device_type, emulation in pipelines.EMULATIONS.items():
            cells[device_type] = "yes" if pass_class in emulation else "—"

        if variant is not None:
            kernels = fired[variant].get(pass_class.__name__, [])
            cells["fires on"] = (
                f"every example ({kernel_count})"
                if len(kernels) == kernel_count
                else ", ".join(kernels) or "—"
            )

        lines.append("| " + " | ".join(cells[column] for column in columns) + " |")

    return "\n".join(lines) + "\n"


def updated(document, fired, kernel_count):
    """Return ``document`` (``str``) with the table after each heading of :data:`TABLES` regenerated.

    The table is the first run of lines starting with ``|`` after the heading.
    """

    for heading in TABLES:
        pattern = re.compile(
            rf"(^{re.escape(heading)}\n(?:(?!\|).*\n)*?)((?:\|.*\n)+)", re.M
        )

        if not pattern.search(document):
            raise SystemExit(f"{DOCUMENT}: no table under {heading!r}")

        document = pattern.sub(
            lambda match, heading=heading: (
                match.group(1) + table(heading, fired, kernel_count)
            ),
            document,
            count=1,
        )

    return document


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
