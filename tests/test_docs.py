"""The documents that are generated from the code stay in step with it, and cite nothing outside the repository."""

import importlib.util
import pathlib
import re

from conftest import EXAMPLE_NAMES
from helpers import ROOT, shared_example

SCRIPT = pathlib.Path(__file__).resolve().parent.parent / "scripts" / "pass_table.py"


def load_script():
    spec = importlib.util.spec_from_file_location("pass_table", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    return module


def test_pass_table_lists_the_kernels_each_pass_fires_on():
    pass_table = load_script()
    fired = pass_table.fires_on([shared_example(name) for name in EXAMPLE_NAMES])
    document = pass_table.DOCUMENT.read_text()

    assert fired["npu"]["FoldTrueMask"]
    assert pass_table.updated(document, fired, len(EXAMPLE_NAMES)) == document, (
        "docs/passes.md is out of date: run python scripts/pass_table.py"
    )


def test_every_pass_states_its_rule_and_has_tests():
    from ninetoothed_ascend.compiler import pipelines

    pass_table = load_script()
    stated = {
        "npu": ("Constraint", "Source", "Rewrites"),
        "cpu": ("Constraint", "Source"),
    }

    for variant, passes in pipelines.VARIANTS.items():
        for pass_class in passes:
            fields = pass_table.fields(pass_class)

            assert [f for f in stated[variant] if fields.get(f)] == list(
                stated[variant]
            ), f"{pass_class.__name__} states no {stated[variant]} in its docstring"
            assert pass_table.test_module(pass_class), (
                f"{pass_class.__name__} has no test module mirroring its module"
            )

    for passes in pipelines.EMULATIONS.values():
        for pass_class in set(passes) - set(pipelines.CPU):
            assert pass_table.fields(pass_class).get("Rewrites")
            assert pass_table.test_module(pass_class)


def test_docs_and_source_cite_nothing_outside_the_repository():
    # A file outside the repository (the facts kept beside it, one machine's
    # baselines) is not there for a reader: docs/ascend.md holds the facts.
    outside = re.compile(r"\.\./shared|/work/|ASCEND\.md")
    files = [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    files += (ROOT / "src").rglob("*.py")
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if outside.search(line)
    ]

    assert cited == []
