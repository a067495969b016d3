"""What the CPU emulation computes with NumPy means what torch computes."""

import math

import pytest
import torch
from libdevice_helpers import KERNEL, MAPPED, PORTABLE, import_source, kernel_source

from ninetoothed_ascend.compiler import pipelines


def test_every_function_the_cpu_computes_with_numpy_has_a_numpy_meaning():
    for name, function in PORTABLE.items():
        if function is not None:
            assert (function.cpu is None) == callable(function.numpy), name


def _round_half_away(x):
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def _uniform(low, high):
    return lambda generator: torch.rand(64, generator=generator) * (high - low) + low


_NORMAL = lambda generator: torch.randn(64, generator=generator) * 2  # noqa: E731


_POSITIVE = _uniform(0.1, 5.0)


_UNIT = _uniform(-0.9, 0.9)


def _special_values(generator):
    x = torch.randn(64, generator=generator)
    x[::5] = math.inf
    x[1::5] = -math.inf
    x[2::5] = math.nan
    x[3::7] = -0.0

    return x


def _exponents(generator):
    return torch.randint(-4, 5, (64,), generator=generator).float()


#: name -> (torch reference, domain of each argument). Each Ascend function's
#: meaning: its C/libdevice namesake's, with triton-ascend's result dtype
#: (ilogb and ldexp in the input's float dtype, predicates as booleans).
REFERENCES = {
    "abs": (torch.abs, [_NORMAL]),
    "acos": (torch.acos, [_UNIT]),
    "acosh": (torch.acosh, [_uniform(1.1, 5.0)]),
    "asin": (torch.asin, [_UNIT]),
    "asinh": (torch.asinh, [_NORMAL]),
    "atan": (torch.atan, [_NORMAL]),
    "atan2": (torch.atan2, [_NORMAL, _NORMAL]),
    "atanh": (torch.atanh, [_UNIT]),
    "ceil": (torch.ceil, [_NORMAL]),
    "copysign": (torch.copysign, [_NORMAL, _NORMAL]),
    "cos": (torch.cos, [_NORMAL]),
    "cosh": (torch.cosh, [_NORMAL]),
    "cyl_bessel_i0": (torch.special.i0, [_NORMAL]),
    "div_rn": (torch.div, [_NORMAL, _POSITIVE]),
    "div_rz": (torch.div, [_NORMAL, _POSITIVE]),
    "erf": (torch.erf, [_NORMAL]),
    "erfinv": (torch.erfinv, [_UNIT]),
    "exp": (torch.exp, [_NORMAL]),
    "exp2": (torch.exp2, [_NORMAL]),
    "expm1": (torch.expm1, [_NORMAL]),
    "fdiv": (torch.div, [_NORMAL, _POSITIVE]),
    "floor": (torch.floor, [_NORMAL]),
    "fma": (lambda x, y, z: x * y + z, [_NORMAL, _NORMAL, _NORMAL]),
    "fmod": (torch.fmod, [_NORMAL, _POSITIVE]),
    "gamma": (lambda x: torch.exp(torch.lgamma(x)), [_POSITIVE]),
    "hypot": (torch.hypot, [_NORMAL, _NORMAL]),
    "ilogb": (lambda x: (torch.frexp(x).exponent - 1).float(), [_POSITIVE]),
    "isinf": (torch.isinf, [_special_values]),
    "isnan": (torch.isnan, [_special_values]),
    "ldexp": (torch.ldexp, [_NORMAL, _exponents]),
    "lgamma": (torch.lgamma, [_POSITIVE]),
    "log": (torch.log, [_POSITIVE]),
    "log10": (torch.log10, [_POSITIVE]),
    "log1p": (torch.log1p, [_POSITIVE]),
    "log2": (torch.log2, [_POSITIVE]),
    "nearbyint": (torch.round, [_NORMAL]),
    "nextafter": (torch.nextafter, [_NORMAL, _NORMAL]),
    "pow": (torch.pow, [_POSITIVE, _NORMAL]),
    "reciprocal": (torch.reciprocal, [_POSITIVE]),
    "relu": (torch.relu, [_NORMAL]),
    "round": (_round_half_away, [_NORMAL]),
    "rsqrt": (torch.rsqrt, [_POSITIVE]),
    "signbit": (torch.signbit, [_special_values]),
    "sin": (torch.sin, [_NORMAL]),
    "sinh": (torch.sinh, [_NORMAL]),
    "sqrt": (torch.sqrt, [_POSITIVE]),
    "sqrt_rn": (torch.sqrt, [_POSITIVE]),
    "tan": (torch.tan, [_UNIT]),
    "tanh": (torch.tanh, [_NORMAL]),
    "trunc": (torch.trunc, [_NORMAL]),
}


def test_every_mapped_function_has_a_reference():
    assert sorted(REFERENCES) == MAPPED


@pytest.mark.parametrize("name", MAPPED)
def test_each_mapped_function_means_on_the_cpu_what_torch_computes(name):
    """Level 3 (CPU interpreter): a triton-ascend kernel calling libdevice.NAME, emulated, against torch."""

    reference, domains = REFERENCES[name]
    generator = torch.Generator().manual_seed(0)
    arguments = [domain(generator) for domain in domains]
    padded = arguments + [torch.ones(64)] * (3 - len(arguments))
    output = torch.empty(64)
    module = import_source(pipelines.emulate(kernel_source(name), "cpu").source, name)

    module.kernel[(1,)](*padded, output, 60, BLOCK=64)

    expected = reference(*arguments).float()
    torch.testing.assert_close(
        output[:60], expected[:60], rtol=2e-6, atol=1e-6, equal_nan=True
    )


def test_flip_means_on_the_cpu_what_torch_flip_computes():
    source = KERNEL.format(name="flip", arguments="x, 0")
    module = import_source(pipelines.emulate(source, "cpu").source, "flip")
    x = torch.randn(64, generator=torch.Generator().manual_seed(0))
    output = torch.empty(64)

    module.kernel[(1,)](x, x, x, output, 64, BLOCK=64)

    torch.testing.assert_close(output, torch.flip(x, (0,)))


def test_div_rz_rounds_toward_zero():
    # 1/3 and -1/3 in fp32: round-to-nearest rounds up in magnitude for one
    # of them; toward zero never does.
    module = import_source(
        pipelines.emulate(kernel_source("div_rz"), "cpu").source, "rz"
    )
    x = torch.tensor([1.0, -1.0, 2.0, -2.0] * 16)
    y = torch.full((64,), 3.0)
    output = torch.empty(64)

    module.kernel[(1,)](x, y, y, output, 64, BLOCK=64)

    exact = x.double() / y.double()
    assert torch.all(output.double().abs() <= exact.abs())
    assert torch.all((exact - output.double()).abs() < 2**-22)
