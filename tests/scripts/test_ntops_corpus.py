"""scripts/ntops_corpus.py: ntops' launches recorded into manifests, and the Ascend compile check of each.

ntops (InfiniTensor's operator library written in NineToothed) is read from
``../shared/downstream/ntops`` beside the repository, or ``$NTOPS_ROOT``; the
tests skip, saying so, where it is absent.
"""

import collections
import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import pytest

from ninetoothed_ascend import manifest

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPT = ROOT / "scripts" / "ntops_corpus.py"
NTOPS = pathlib.Path(
    os.environ.get("NTOPS_ROOT") or ROOT.parent / "shared" / "downstream" / "ntops"
)

needs_ntops = pytest.mark.skipif(
    not (NTOPS / "src" / "ntops" / "torch").is_dir(),
    reason=f"no ntops checkout at {NTOPS} (set NTOPS_ROOT to one of InfiniTensor/ntops)",
)

_spec = importlib.util.spec_from_file_location("ntops_corpus", SCRIPT)
ntops_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ntops_corpus)


def record(out, *modules, python=sys.executable):
    """Run ``record`` into ``out``; return its summary (``record.json``)."""

    command = [python, str(SCRIPT), "record", str(out), "--ntops-root", str(NTOPS)]
    completed = subprocess.run(
        command + (["--modules", ",".join(modules)] if modules else []),
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

    return json.loads((out / "record.json").read_text())


def recorded_kernels(directory):
    return [
        kernel
        for path in sorted(directory.glob("round-*.json"))
        for kernel in manifest.read(path)["kernels"]
    ]


@needs_ntops
def test_record_holds_each_launch_once_with_its_dtype_and_keeps_those_whose_cpu_call_failed(
    tmp_path,
):
    summary = record(tmp_path, "add", "sin")
    kernels = recorded_kernels(tmp_path)
    dtypes = collections.defaultdict(list)

    for kernel in kernels:
        (call,) = kernel["calls"]
        first = call["args"][0]
        assert call["device"] == "cpu"
        dtypes[ntops_corpus.kernel_module(kernel), len(first["tensor"])].append(
            first["dtype"]
        )

    # One kernel per ndim (ntops makes them from the ndim alone), launched in
    # float16 and float32 at every ndim and in bfloat16 at 3-D: each launch
    # in a manifest of its own round, once.
    assert {key: sorted(found) for key, found in dtypes.items()} == {
        (module, ndim): sorted(
            ["float16", "float32"] + (["bfloat16"] if ndim == 3 else [])
        )
        for module in ("add", "sin")
        for ndim in (1, 2, 3, 4)
    }
    assert len(list(tmp_path.glob("round-*.json"))) == 3
    assert summary["launches"] == len(kernels) == 18
    assert summary["per_module"] == {"add": 9, "sin": 9}

    # Triton's `tl.sin` takes fp32 and fp64 only (triton/language/math.py,
    # 3.6 and 3.9; CUDA compiles refuse it too): the float16 calls fail on the
    # interpreter, and their launches are recorded all the same.
    (failure,) = summary["failures"]
    assert (failure["module"], failure["stage"]) == ("sin", "launch")
    assert "Expected dtype ['fp32', 'fp64'] but got fp16" in failure["error"]
    assert failure["cases"] == [f"float16 {ndim}-D" for ndim in (1, 2, 3, 4)]


def test_sweep_reports_a_kernel_check_could_not_build_as_the_launch_s_error():
    # ``check --json`` reports such a kernel as ``{"kernel": ..., "failed":
    # why}``, with no config: the sweep failed on it with a KeyError.
    kernel = {
        "key": "0" * 64,
        "origin": {"application": "ntops.kernels.add:application"},
        "calls": [{"args": [{"dtype": "float32", "tensor": [4], "stride": [1]}]}],
    }
    results = [{"kernel": "application 000000000000", "failed": "cannot be built"}]

    launch = ntops_corpus._launch({}, kernel, results, None)

    assert (launch["module"], launch["error"], launch["configs"]) == (
        "add",
        "cannot be built",
        [],
    )


def test_sweep_counts_a_launch_the_npu_variant_refuses_apart_from_failures(capsys):
    kernel = {
        "key": "0" * 64,
        "origin": {"application": "ntops.kernels.bincount:application"},
        "calls": [{"args": [{"dtype": "int32", "tensor": [100], "stride": [1]}]}],
    }
    refusal = "kernel `application` (NPU variant) cannot run this launch on Ascend"
    results = [{"kernel": "application 000000000000", "refused": refusal}]

    launch = ntops_corpus._launch({}, kernel, results, None)

    assert (launch["module"], launch["refused"], launch["error"]) == (
        "bincount",
        refusal,
        None,
    )

    ntops_corpus.print_sweep_summary([launch], 3)
    printed = capsys.readouterr().out

    assert "L2: 0/1 launches pass ttir and ttadapter; 1 refused before compiling" in (
        printed
    )
    assert f"1  [refused] {refusal}" in printed


def _compiled_launch(module, bishengir):
    # A level-3 sweep result: one launch of ``module``, one config of 100,000
    # bytes by the UB model, with the BiShengIR result ``bishengir``.
    return {
        "module": module,
        "error": None,
        "refused": None,
        "configs": [
            {
                "config": {"BLOCK_SIZE": 4096},
                "seconds": {"ttir": 0.1, "ttadapter": 0.1, "bishengir": 1.0},
                "discrete_mem_access": 0,
                "ub_model_bytes": 100000,
                "bishengir": bishengir,
            }
        ],
    }


def _overflowing_add():
    """A level-3 launch of ntops' add whose one config BiShengIR overflows."""

    return _compiled_launch(
        "add",
        {
            "outcome": "ub_overflow",
            "ub_required_bytes": 262144,
            "ub_available_bytes": 196608,
            "planned_ub_bytes": None,
            "message": "ub overflow, requires 262144 bits",
        },
    )


def test_sweep_names_a_ub_overflow_among_the_failures_strict_fails_on(capsys):
    launch = _overflowing_add()

    failures = ntops_corpus.print_sweep_summary([launch], 3)

    assert ntops_corpus.unknown_failures(failures) == {
        "[bishengir ub_overflow] ub overflow, requires 262144 bits": ["add"]
    }


def test_sweep_counts_a_failed_memory_report_apart_from_failures(capsys):
    launch = _compiled_launch(
        "scaled_dot_product_attention",
        {
            "outcome": "hivmc",
            "ub_required_bytes": None,
            "ub_available_bytes": None,
            "planned_ub_bytes": None,
            "message": "",
            "crashes": 0,
            "report_error": "error: 'scf.for' op Failed to collect vector "
            "loop tiling info",
        },
    )

    failures = ntops_corpus.print_sweep_summary([launch], 3)
    printed = capsys.readouterr().out

    assert ntops_corpus.unknown_failures(failures) == {}
    assert "--enable-memory-display failed on 1 configs" in printed
    assert "UB model / BiShengIR: no config with both" in printed


def test_lowered_sweep_counts_what_ran_and_names_a_fault_among_the_failures(capsys):
    # ``check --run --json`` reports one record per kernel: outcome and detail.
    def launch(module, outcome, detail):
        kernel = {
            "key": "0" * 64,
            "origin": {"application": f"ntops.kernels.{module}:application"},
            "calls": [{"args": [{"dtype": "float32", "tensor": [4], "stride": [1]}]}],
        }
        results = [
            {
                "kernel": "application 000000000000 contiguous",
                "outcome": outcome,
                "detail": detail,
                "seconds": 1.5,
            }
        ]

        return ntops_corpus._launch({}, kernel, results, None)

    fault = (
        "kernel application: SIGSEGV in the lowered kernel (start-fenced "
        "placement): read 56 bytes before the first byte of tensor argument 0"
    )
    launches = [
        launch("add", "ran", "not compared: a manifest records no reference"),
        launch("max_pool2d", "fault", fault),
    ]

    assert launches[1]["lowered"] == {
        "outcome": "fault",
        "detail": fault,
        "seconds": 1.5,
    }
    assert (launches[1]["error"], launches[1]["configs"]) == (None, [])

    failures = ntops_corpus.print_lowered_summary(launches)
    printed = capsys.readouterr().out

    assert ntops_corpus.unknown_failures(failures) == {
        "[lowered fault] " + fault.replace("56", "N").replace("0", "N"): ["max_pool2d"]
    }
    assert [
        line.split() for line in printed.splitlines() if line.startswith("total")
    ] == [["total", "2", "1", "1", "0", "0"]]


def test_strict_sweep_passes_a_failure_known_failures_names_for_its_module(
    monkeypatch, capsys
):
    launch = _overflowing_add()
    failures = ntops_corpus.print_sweep_summary([launch], 3)
    known = {"[bishengir ub_overflow] ": ({"sub"}, "named for sub only")}
    monkeypatch.setattr(ntops_corpus, "KNOWN_FAILURES", known)

    assert ntops_corpus.unknown_failures(failures) == failures

    known["[bishengir ub_overflow] "] = ({"add"}, "named for add")

    assert ntops_corpus.unknown_failures(failures) == {}
