"""Reading bishengir-compile's output, and the line printed where ascendnpu-ir is missing (no compiler needed)."""

import importlib.util
import json

import pytest

from ninetoothed_ascend.check import bishengir

# Captured from ascendnpu-ir 1.2.0 on examples/elementwise/add.py fp32
# (BLOCK_SIZE 8192, unspecialized strides) and on the same kernel at 64.
OVERFLOW = """\
[ERROR] Cannot find hivmc under $PATH 
[ERROR] Failed to run `hivmc --version`.
[WARNING] Failed to detect hivmc version for backward compatibility
[NOTE] Ub overflow detected; automatically set enable-code-motion to false and retrying compilation.
[NOTE] Ub overflow detected; automatically set enable-auto-multi-buffer to false and retrying compilation.
[NOTE] Due to Ub overflow, automatically set enable-code-motion to false, set enable-auto-multi-buffer to false; compilation still failed.
loc("kernel.ttadapter.mlir":1:1): error: Failed to run BiShengHIR pipeline

loc("kernel.ttadapter.mlir":2:3): error: ub overflow, requires 4194304 bits while 1572864 bits available! (possible reason: tiling basic block is too large or block number is more than what user expect due to multi-buffer feature is enabled and some ops need extra local buffer.)
[ERROR] Failed to run BiShengIR pipeline
"""


REACHED_HIVMC = """\
[ERROR] Cannot find hivmc under $PATH 
[ERROR] Failed to run `hivmc --version`.
[WARNING] Failed to detect hivmc version for backward compatibility
[ERROR] Cannot find hivmc under $PATH 
loc("kernel.ttadapter.mlir":1:1): error: External hivmc run fails, returning module before running external compiler
[ERROR] Failed to run BiShengIR pipeline
"""


def test_an_overflow_gives_required_and_available_bytes():
    result = bishengir.parse_output(OVERFLOW, seconds=0.5)

    assert result.outcome == "ub_overflow"
    assert (result.ub_required_bytes, result.ub_available_bytes) == (524288, 196608)
    assert result.message.startswith(
        'loc("kernel.ttadapter.mlir":2:3): error: ub overflow'
    )
    assert "Cannot find hivmc" not in result.message
    assert result.seconds == 0.5


def test_reaching_the_external_hivmc_step_is_success():
    result = bishengir.parse_output(REACHED_HIVMC, arch="Ascend910B4")

    assert (result.outcome, result.message, result.arch) == ("hivmc", "", "Ascend910B4")
    assert result.ub_required_bytes is None


def test_any_other_failure_keeps_the_compilers_error():
    result = bishengir.parse_output(
        "loc(\"kernel.ttadapter.mlir\":1:1): error: custom op 'garbage' is unknown\n"
    )

    assert result.outcome == "error"
    assert "custom op 'garbage' is unknown" in result.message


# LLVM's crash report, as ascendnpu-ir 1.2.0 prints it on a SIGSEGV.
CRASH = """\
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace.
Stack dump:
0.	Program arguments: bishengir-compile kernel.ttadapter.mlir
[ERROR] #36 0x00007f16083278ec clone3 ./misc/../sysdeps/unix/sysv/linux/x86_64/clone3.S:83:0
"""


def _stand_in_compiler(tmp_path, monkeypatch, failing_when, failure):
    # A stand-in bishengir-compile: each run appends its arguments to
    # ``runs``; where the shell condition ``failing_when`` holds it prints
    # ``failure`` and fails (dying of SIGSEGV after a crash report), else it
    # reaches hivmc.
    runs = tmp_path / "runs"
    runs.write_text("")
    (tmp_path / "failure.txt").write_text(failure)
    (tmp_path / "hivmc.txt").write_text(REACHED_HIVMC)
    die = "kill -SEGV $$" if "Stack dump:" in failure else "exit 1"
    compiler = tmp_path / "bishengir-compile"
    compiler.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {runs}\n'
        f"if {failing_when.format(runs=runs)}; then\n"
        f"  cat {tmp_path / 'failure.txt'} >&2; {die}\n"
        "fi\n"
        f"cat {tmp_path / 'hivmc.txt'} >&2; exit 1\n"
    )
    compiler.chmod(0o755)
    monkeypatch.setattr(bishengir, "compiler_path", lambda arch: compiler)

    return runs


def _compiler_that_crashes(tmp_path, monkeypatch, crashing_runs):
    # Its first ``crashing_runs`` runs crash, the next ones reach hivmc.
    return _stand_in_compiler(
        tmp_path,
        monkeypatch,
        '[ "$(wc -l < {runs})" -le ' + str(crashing_runs) + " ]",
        CRASH,
    )


def test_a_compile_that_crashes_is_run_again(tmp_path, monkeypatch):
    runs = _compiler_that_crashes(tmp_path, monkeypatch, crashing_runs=1)

    result = bishengir.compile_linalg("module {}")

    assert (result.outcome, result.crashes) == ("hivmc", 1)
    assert len(runs.read_text().splitlines()) == 2


def test_a_compile_that_always_crashes_is_an_error_with_the_crash(
    tmp_path, monkeypatch
):
    runs = _compiler_that_crashes(tmp_path, monkeypatch, crashing_runs=99)

    result = bishengir.compile_linalg("module {}")

    assert (result.outcome, result.crashes) == ("error", bishengir.CRASH_RUNS)
    assert "clone3" in result.message
    assert len(runs.read_text().splitlines()) == bishengir.CRASH_RUNS


def test_a_diagnosed_error_is_not_run_again(tmp_path, monkeypatch):
    runs = _compiler_that_crashes(tmp_path, monkeypatch, crashing_runs=0)
    (tmp_path / "hivmc.txt").write_text(
        "loc(\"kernel.ttadapter.mlir\":2:3): error: 'hivm.hir.vsort' op failed to verify\n"
    )

    result = bishengir.compile_linalg("module {}")

    assert (result.outcome, result.crashes) == ("error", 0)
    assert len(runs.read_text().splitlines()) == 1


def _compiler_that_fails_to_report(tmp_path, monkeypatch, failure):
    # With --enable-memory-display it fails with ``failure``; without it, it
    # reaches hivmc.
    return _stand_in_compiler(
        tmp_path,
        monkeypatch,
        'echo "$*" | grep -q -- --enable-memory-display',
        failure,
    )


TILING_INFO = (
    "loc(\"kernel.ttadapter.mlir\":166:18): error: 'scf.for' op Failed to "
    "collect vector loop tiling info\n"
)


@pytest.mark.parametrize(
    ("failure", "reporting_runs", "reported"),
    [(CRASH, bishengir.CRASH_RUNS, "clone3"), (TILING_INFO, 1, "tiling info")],
    ids=["crash", "diagnosed"],
)
def test_a_failed_memory_report_leaves_the_outcome_to_the_launchs_command(
    tmp_path, monkeypatch, failure, reporting_runs, reported
):
    runs = _compiler_that_fails_to_report(tmp_path, monkeypatch, failure)

    result = bishengir.compile_linalg("module {}", memory_report=True)

    assert (result.outcome, result.planned_ub_bytes) == ("hivmc", None)
    assert reported in result.report_error
    commands = runs.read_text().splitlines()
    assert ["--enable-memory-display" in command for command in commands] == [
        True
    ] * reporting_runs + [False]


def test_an_error_of_the_launchs_command_stays_an_error(tmp_path, monkeypatch):
    runs = _compiler_that_fails_to_report(tmp_path, monkeypatch, TILING_INFO)
    (tmp_path / "hivmc.txt").write_text(TILING_INFO)

    result = bishengir.compile_linalg("module {}", memory_report=True)

    assert result.outcome == "error"
    assert "Failed to collect vector loop tiling info" in result.message
    assert len(runs.read_text().splitlines()) == 2


def test_the_planned_ub_is_the_end_of_the_highest_buffer(tmp_path):
    # The shape of --enable-memory-display's report (ascendnpu-ir 1.2.0):
    # extent in bits, one byte offset per multi-buffer copy.
    report = {
        "Record": [
            {
                "scope": "ub",
                "memory_info_array": [
                    {"extent": 16384, "offset": [0, 4096]},
                    {"extent": 16384, "offset": [2048, 6144]},
                ],
            },
            {"scope": "l1", "memory_info_array": [{"extent": 8, "offset": [1 << 20]}]},
        ]
    }
    (tmp_path / "memory_info_aiv.json").write_text(json.dumps(report))

    assert bishengir.planned_ub_bytes(tmp_path) == 8192


def test_without_ascendnpu_ir_one_line_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)

    line = bishengir.missing()

    assert line.count("\n") == 0
    assert "pip install 'ninetoothed-ascend[bishengir]'" in line

    with pytest.raises(bishengir.BiShengIRNotInstalled, match="ascendnpu-ir"):
        bishengir.compile_linalg("module {}")


def test_an_unknown_soc_is_refused_by_name():
    with pytest.raises(ValueError, match="Ascend910X"):
        bishengir.compiler_path("Ascend910X")


def test_noncontiguous_inputs_have_the_same_values_and_other_strides():
    import torch

    from ninetoothed_ascend.examples import noncontiguous

    matrix, vector, scalar = torch.randn(3, 5), torch.randn(7), torch.tensor(2.0)
    rows, shifted, same, number = noncontiguous((matrix, vector, scalar, 3))

    assert torch.equal(rows, matrix) and rows.stride() == (6, 1)
    assert torch.equal(shifted, vector) and shifted.data_ptr() % 16 != 0
    assert same is scalar and number == 3


def test_a_single_buffered_stage_turns_multi_buffering_off_whatever_the_launch_states(
    tmp_path, monkeypatch
):
    from ninetoothed_ascend.check.compile_check import BiShengIRStage

    runs = _compiler_that_crashes(tmp_path, monkeypatch, crashing_runs=0)

    with BiShengIRStage(single_buffered=True) as stage:
        result = stage.submit("module {}", {"multibuffer": True}).result()

    assert result.outcome == "hivmc"
    (command,) = runs.read_text().splitlines()
    assert "--enable-auto-multi-buffer=False" in command.split()
    assert "--enable-auto-multi-buffer=True" not in command.split()
