"""InterpretKernels, on a small module run on Triton's interpreter."""

import pytest
import torch
from cpu_kernels import ADD_ONE, compiled_module
from helpers import rewrite

from ninetoothed_ascend.compiler.cpu.bind_language_module import BindLanguageModule
from ninetoothed_ascend.compiler.cpu.interpret_kernels import InterpretKernels


def test_kernels_are_decorated_with_the_interpreter_and_nothing_else():
    source, count = rewrite(
        InterpretKernels,
        """
        import triton
        from triton import jit
        @jit
        def kernel(x):
            pass
        @triton.autotune(configs=[], key=[])
        @triton.jit
        def tuned(x):
            pass
        def launch(x):
            pass
        """,
    )

    assert count == 2
    assert source.count("@triton.runtime.interpreter.InterpretedFunction") == 2
    assert "@triton.autotune(configs=[], key=[])" in source
    assert "import triton.runtime.interpreter" in source
    assert "def launch(x):\n    pass" in source


@pytest.mark.usefixtures("pristine_triton_language")
def test_the_kernel_runs_on_the_interpreter_whatever_the_environment(
    tmp_path, monkeypatch
):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, y = torch.arange(8, dtype=torch.float32), torch.zeros(8)

    compiled_module(ADD_ONE, (BindLanguageModule, InterpretKernels), tmp_path).launch(
        x, y
    )

    assert torch.equal(y, x + 1)


def test_without_it_the_kernel_asks_for_a_device(tmp_path, monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    x, y = torch.arange(8, dtype=torch.float32), torch.zeros(8)
    module = compiled_module(ADD_ONE, (BindLanguageModule,), tmp_path)

    with pytest.raises(Exception, match="(?i)driver|cuda|device|gpu"):
        module.launch(x, y)
