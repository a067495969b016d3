"""The documents that are generated from the code stay in step with it."""

import importlib.util
import pathlib

from conftest import EXAMPLE_NAMES
from helpers import shared_example

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


def test_every_pass_has_a_row_in_the_pass_table():
    from ninetoothed_ascend.compiler import pipelines

    document = load_script().DOCUMENT.read_text()

    for step in (*pipelines.NPU, *pipelines.CPU):
        assert f"| `{step.__name__}` |" in document
