"""Examples that check their outputs with ``verify`` instead of comparing with a torch ``reference``."""

import types

import pytest
import torch
from helpers import shared_example

from ninetoothed_ascend import examples


def _module(**attributes):
    return types.SimpleNamespace(
        inputs=lambda device, dtype: (torch.ones(4, device=device, dtype=dtype),),
        launch=lambda kernel, input: kernel(input),
        **attributes,
    )


def _unused_reference(*inputs):
    raise AssertionError("compare must not call reference when verify is defined")


def test_compare_uses_verify_in_place_of_reference():
    calls = []

    def verify(outputs, input):
        calls.append((outputs, input))

        return False, 0.5

    module = _module(reference=_unused_reference, verify=verify)

    result = examples.compare(module, lambda input: 2 * input, "cpu", torch.float32)

    assert (result.matches, result.max_abs_error) == (False, 0.5)
    ((outputs, input),) = calls
    assert isinstance(outputs, tuple)
    torch.testing.assert_close(outputs[0], 2 * input)


def test_load_module_accepts_verify_without_reference(tmp_path):
    path = tmp_path / "verified.py"
    path.write_text(
        "kernel = None\n"
        "def inputs(device, dtype): return ()\n"
        "def launch(kernel): return ()\n"
        "def verify(outputs): return True, 0.0\n"
    )

    assert examples.load_module(path).verify(()) == (True, 0.0)

    path.write_text(path.read_text().replace("def verify", "def other"))

    with pytest.raises(AttributeError, match="does not define reference"):
        examples.load_module(path)


def _dropout(input, p, keep):
    return torch.where(keep, input.float() / (1 - p), 0.0).to(input.dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.bfloat16])
def test_dropout_verify_accepts_a_dropout(dtype):
    module = shared_example("dropout")
    input, p, seed = module.inputs("cpu", dtype, shape=(3, 5, 67), p=0.3)
    keep = torch.rand(input.shape, generator=torch.Generator().manual_seed(1)) > p

    matches, max_abs_error = module.verify((_dropout(input, p, keep),), input, p, seed)

    assert matches
    assert (
        max_abs_error
        <= examples.TOLERANCES[dtype][0] + 2 * examples.TOLERANCES[dtype][1]
    )


def test_dropout_verify_rejects_unscaled_kept_values():
    module = shared_example("dropout")
    input, p, seed = module.inputs("cpu", torch.float32, p=0.3)
    keep = torch.rand(input.shape, generator=torch.Generator().manual_seed(1)) > p

    matches, max_abs_error = module.verify(
        (torch.where(keep, input, 0.0),), input, p, seed
    )

    assert not matches
    assert max_abs_error > 0.1


@pytest.mark.parametrize("kept_fraction", [1.0, 0.5, 0.0])
def test_dropout_verify_rejects_a_wrong_kept_fraction(kept_fraction):
    module = shared_example("dropout")
    input, p, seed = module.inputs("cpu", torch.float32, p=0.3)
    keep = (
        torch.rand(input.shape, generator=torch.Generator().manual_seed(1))
        < kept_fraction
    )

    matches, _ = module.verify((_dropout(input, p, keep),), input, p, seed)

    assert not matches
