"""runtime.interpreted: CPU variants call triton.language's own jit functions interpreted, and leave Triton usable."""

import sys

import pytest
import torch
from helpers import load_example, shared_example
from libdevice_helpers import DOT_KERNEL, cuda_make_ir

import ninetoothed_ascend
from ninetoothed_ascend import examples
from ninetoothed_ascend.runtime import interpreted


def test_running_a_cpu_variant_leaves_triton_usable_for_compilation(
    pristine_triton_language,
):
    """Why InterpretLanguageFunctions restores ``triton.language.core``: without it, Triton 3.9 leaves 64 builtins patched."""

    module = shared_example("softmax")
    source = DOT_KERNEL.replace('"hf32"', '"tf32"')
    assert "tt.dot" in cuda_make_ir(source, "before_interpreting", "*fp32")

    examples.compare(module, module.kernel.variant("cpu"), "cpu", torch.float32)

    assert "tt.dot" in cuda_make_ir(source, "after_interpreting", "*fp32")


def test_without_restoring_language_core_interpreting_breaks_compilation(
    monkeypatch, pristine_triton_language
):
    # The interpreted copies without the wrapper that restores the module,
    # where the CPU variant imports them from.
    monkeypatch.setattr(
        ninetoothed_ascend.runtime,
        "interpreted",
        ninetoothed_ascend.runtime.interpreter._interpreted_copy,
    )

    for name in [name for name in sys.modules if ".variants." in name]:
        monkeypatch.delitem(sys.modules, name)

    module = load_example("softmax")
    source = DOT_KERNEL.replace('"hf32"', '"tf32"')

    examples.compare(module, module.kernel.variant("cpu"), "cpu", torch.float32)

    with pytest.raises(Exception, match="has no attribute 'dtype'"):
        cuda_make_ir(source, "unrestored", "*fp32")


def test_interpreted_copies_interpret_their_callees_and_leave_triton_alone():
    import triton
    import triton.language as tl

    sort = interpreted(tl.sort)
    namespace = sort.__wrapped__.__globals__

    # sort calls sort_impl: interpreted; max passes _elementwise_max to a
    # reduction: kept, so the interpreter recognizes it.
    assert isinstance(
        namespace["sort_impl"], triton.runtime.interpreter.InterpretedFunction
    )
    assert isinstance(
        interpreted(tl.max).__wrapped__.__globals__["_elementwise_max"],
        triton.runtime.JITFunction,
    )
    assert isinstance(tl.standard.sort_impl, triton.runtime.JITFunction)
    assert interpreted(tl.sort).__wrapped__ is sort.__wrapped__
