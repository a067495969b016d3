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


def sweep(directory, out, *options):
    """Run ``sweep`` over ``directory`` in this (triton-ascend) environment; return its JSON."""

    command = [sys.executable, str(SCRIPT), "sweep", str(directory), "--json", str(out)]
    completed = subprocess.run(
        command + ["--python", sys.executable, *options],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr

    return json.loads(out.read_text())


def failure_groups(launches):
    """``{message: sorted ntops modules}`` of the launches that failed ``ttir`` or ``ttadapter``."""

    groups = collections.defaultdict(set)

    for launch in launches:
        if launch["error"]:
            groups[ntops_corpus._message_group(launch["error"])].add(launch["module"])

    return {message: sorted(modules) for message, modules in groups.items()}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Every ntops launch, recorded with ``.venv`` (CUDA Triton: the CPU variant runs on its interpreter)."""

    python = ROOT / ".venv" / "bin" / "python"

    if not python.exists():
        pytest.skip(
            f"recording runs the CPU variant on CUDA Triton's interpreter, with {python} "
            "(scripts/setup-env.sh cuda builds it)"
        )

    directory = tmp_path_factory.mktemp("ntops") / "manifests"

    return directory, record(directory, python=python)


#: The configs of ntops' launches that do not reach BiShengIR's ``hivmc``
#: step yet: module -> (outcome, why).
KNOWN_FAILURES = {
    "bincount": (
        "ub_overflow",
        "at 100 inputs the window axis is 128 lanes, as the literal block is: "
        "SplitSubBlocks cannot tell the block's literal from the window's, and "
        "the UB model sizes the int64 input at 4 bytes",
    ),
    "softmax": (
        "error",
        "fp64: BiShengIR 1.2.0 has no f32 -> f64 extension "
        '("unsupported datatype for arith::ExtFOp to hfusion")',
    ),
    "acosh": (
        "error",
        "fp64: BiShengIR 1.2.0 has no f64 -> f32 truncation "
        '("unsupported datatype for arith::TruncFOp to hfusion")',
    ),
    "atan": ("error", "fp64, as acosh"),
}


@pytest.mark.ascend
@needs_ntops
def test_every_ntops_launch_passes_level_2_and_its_extreme_configs_reach_hivmc(
    corpus, tmp_path
):
    """Levels 2 and 3 over ntops' whole corpus: every launch through ``ttir`` and ``ttadapter``, and its smallest and largest config by the UB model through BiShengIR (ascendnpu-ir 1.2.0) to ``hivmc``, but for :data:`KNOWN_FAILURES`."""

    directory, summary = corpus
    result = sweep(
        directory,
        tmp_path / "sweep.json",
        *("--level", "3", "--configs", "extremes", "--jobs", "2", "--timeout", "300"),
    )
    launches = result["launches"]
    failed = collections.defaultdict(set)

    for launch in launches:
        for config in launch["configs"]:
            if config["bishengir"]["outcome"] != "hivmc":
                failed[launch["module"]].add(config["bishengir"]["outcome"])

    assert result["complete"]
    assert len(launches) == summary["launches"] > 900
    assert failure_groups(launches) == {}
    assert dict(failed) == {
        module: {outcome} for module, (outcome, _) in KNOWN_FAILURES.items()
    }
