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

    assert result.exit_code == 2  # a usage error
    error = result.output.strip().splitlines()[-1]
    assert error.startswith("Error: ")
    assert "does not define kernel, inputs, launch, reference" in error
    assert "Traceback" not in result.output


def test_demo_s_last_lines_say_what_ran_against_what_and_what_next(cache_dir):
    result = CliRunner().invoke(
        main, ["demo", str(EXAMPLES / "elementwise" / "add.py"), "--device", "cpu"]
    )
    last = result.output.strip().splitlines()[-3:]

    assert last[0] == "ran: the CPU variant (Triton's interpreter), on cpu"
    assert last[1].startswith(
        "compared with torch within atol/rtol float16 0.01/0.01; "
        "bfloat16 0.05/0.05; float32 0.0001/0.0001"
    )
    assert "`ninetoothed-ascend check` in the Ascend environment" in last[2]


def test_demo_without_the_device_says_so_in_one_line():
    # Before: torch's own error, counted as 3 mismatches.
    for device in ("npu", "cuda"):
        result = CliRunner().invoke(
            main, ["demo", str(EXAMPLES / "elementwise" / "add.py"), "--device", device]
        )

        assert result.exit_code == 2
        assert len(result.output.strip().splitlines()) == 1
        assert result.output.startswith(f"Error: --device {device}: ")
        assert "mismatches" not in result.output


NAN_EXAMPLE = """
import torch

from add import arrangement, application, kernel


def inputs(device, dtype=torch.float16):
    return (torch.ones(8, device=device, dtype=dtype),) * 2


def launch(kernel, input, other):
    output = torch.empty_like(input)
    kernel(input, other, output)
    output[3] = float("nan")

    return output


def reference(input, other):
    return input + other
"""


def test_demo_does_not_call_a_nan_an_error_of_0(tmp_path, monkeypatch):
    # Before: ``DIFFERS from torch (max abs error 0)``.
    monkeypatch.syspath_prepend(str(EXAMPLES / "elementwise"))
    (tmp_path / "nan_example.py").write_text(NAN_EXAMPLE)

    result = CliRunner().invoke(
        main,
        [
            "demo",
            str(tmp_path / "nan_example.py"),
            "--device",
            "cpu",
            "--dtype",
            "float32",
        ],
    )

    assert result.exit_code == 1
    assert (
        "DIFFERS from torch (1 NaN or infinite elements where torch's differ, "
        "max abs error 0 elsewhere" in result.output
    )
