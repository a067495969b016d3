"""Attention and triton-adapter-opt's heap corruption: the same bug as matmul's, cured by the same pass.

docs/ascend.md recorded that ``triton-adapter-opt`` (triton-ascend 3.2.0)
segfaults on NineToothed's scaled dot-product attention. Measured on
InfiniTensor/ntops's kernel (with an attention mask, fp16 and fp32, 3 tries
each): 6 of 6 compiles crash without ``ScalarizeTileLowerBounds`` and 6 of 6
pass with it. Under valgrind, the crash is a read of freed memory in the
adapter's first pass, ``--discrete-mask-access-conversion``, at the same
instruction, freed by the same call chain, as the matmul reproducer
(``tests/reproducers/adapter_lower_bound_crash.py``): one bug, the nested
runtime lower bounds in masks.

This project's ``flash_attention`` example does not happen to segfault
without the pass, but valgrind shows the same corruption in it; these tests
pin that down so that the cure stays in the pipeline for attention too.
Valgrind's report is deterministic where the segfault is not.
"""

import re
import shutil
import subprocess

import pytest
import torch
from helpers import load_example

from ninetoothed_ascend.check.compile_check import (
    DEFAULT_ARCH,
    check_variant,
    compile_stages,
)
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.npu.scalarize_padded_tile_lower_bounds import (
    ScalarizePaddedTileLowerBounds,
)
from ninetoothed_ascend.compiler.npu.scalarize_tile_lower_bounds import (
    ScalarizeTileLowerBounds,
)

pytestmark = [
    pytest.mark.ascend,
    pytest.mark.skipif(
        shutil.which("valgrind") is None, reason="needs valgrind on PATH"
    ),
]


#: The adapter's first pass, where the use after free happens.
FIRST_PASS = "--discrete-mask-access-conversion"


def adapter_inputs(monkeypatch, compile):
    """Run ``compile()`` with the adapter replaced by a recorder; return the TTIR texts it would have read."""

    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend

    # Triton loads the backend as a module of its own (not
    # ``triton.backends.ascend.compiler``); its stages look the adapter up there.
    backend = make_backend(GPUTarget("npu", DEFAULT_ARCH, 0))
    backend_globals = type(backend).add_stages.__globals__
    inputs = []

    def record(module, metadata, options, *, named_ops=False):
        inputs.append(str(module))

        return "func.func"

    with monkeypatch.context() as patch:
        patch.setitem(backend_globals, "ttir_to_linalg", record)
        compile()

    return inputs


def first_pass_under_valgrind(ttir, tmp_path):
    """Run the adapter's first pass on ``ttir`` under valgrind; return ``(error count, first invalid read frame)``."""

    from triton.backends.ascend.utils import _get_triton_adapter_opt_path

    source = tmp_path / "kernel.ttir.mlir"
    source.write_text(ttir)
    completed = subprocess.run(
        [
            "valgrind",
            "--error-limit=no",
            _get_triton_adapter_opt_path(),
            str(source),
            FIRST_PASS,
            "-o",
            str(tmp_path / "kernel.out.mlir"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    errors = int(re.search(r"ERROR SUMMARY: (\d+) errors", completed.stderr)[1])
    frame = re.search(
        r"Invalid read of size \d+\n==\d+==\s+at (0x[0-9A-F]+)", completed.stderr
    )

    return errors, frame and frame[1]


def flash_attention_adapter_input(monkeypatch, pipeline):
    monkeypatch.setitem(pipelines.VARIANTS, "npu", pipeline)
    module = load_example("flash_attention")
    inputs = module.inputs("cpu", torch.float16, is_causal=True)

    return adapter_inputs(
        monkeypatch, lambda: check_variant(module.kernel, module.launch, *inputs)
    )[0]


def test_flash_attention_without_the_lower_bound_passes_reads_freed_memory_where_matmul_does(
    monkeypatch, tmp_path
):
    from reproducers import adapter_lower_bound_crash as reproducer

    without = tuple(
        step
        for step in pipelines.NPU
        if step
        not in (
            ScalarizeTileLowerBounds,
            ScalarizePaddedTileLowerBounds,
        )
    )
    attention_errors, attention_frame = first_pass_under_valgrind(
        flash_attention_adapter_input(monkeypatch, without), tmp_path
    )
    reproducer_ttir = adapter_inputs(
        monkeypatch,
        lambda: compile_stages(
            reproducer.repro, {"x_ptr": "*fp16", "N": "i32"}, {"B": 32}
        ),
    )[0]
    reproducer_errors, reproducer_frame = first_pass_under_valgrind(
        reproducer_ttir, tmp_path
    )

    assert attention_errors > 0
    assert reproducer_errors > 0
    assert attention_frame is not None
    assert attention_frame == reproducer_frame


def test_flash_attention_with_the_pass_is_clean_under_valgrind(monkeypatch, tmp_path):
    errors, _ = first_pass_under_valgrind(
        flash_attention_adapter_input(monkeypatch, pipelines.NPU), tmp_path
    )

    assert errors == 0
