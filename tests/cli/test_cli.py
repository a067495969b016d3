"""The main job: ``ninetoothed-ascend demo`` on the bundled examples, on the CPU."""

from click.testing import CliRunner
from conftest import EXAMPLES

from ninetoothed_ascend import examples
from ninetoothed_ascend.cli import main


def test_demo_generates_runs_and_checks_an_example(cache_dir):
    result = CliRunner().invoke(
        main, ["demo", str(EXAMPLES / "elementwise" / "add.py"), "--device", "cpu"]
    )

    assert result.exit_code == 0, result.output
    assert "1 kernels, 0 mismatches" in result.output
    assert result.output.count("matches torch") == len(examples.DTYPES)
    assert "rewrites: FoldTrueMask x3" in result.output
    assert str(cache_dir) in result.output


def test_demo_rejects_a_module_that_is_not_an_example(tmp_path):
    bad = tmp_path / "not_an_example.py"
    bad.write_text("x = 1\n")

    result = CliRunner().invoke(main, ["demo", str(bad), "--device", "cpu"])

    assert result.exit_code == 1
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("Error: ")
    assert "does not define kernel, inputs, launch, reference" in error
    assert "Traceback" not in result.output
