"""Dropout: ``output = where(rand(seed, offset) > p, input / (1 - p), 0)``.

Written as ntops writes it: one uniform random number per element from
``ntl.rand`` (Philox) keyed by the seed and the element's offset in the
input. torch cannot draw the same numbers, so there is no ``reference``
result to compare with: :func:`verify` checks instead that every output is
either 0 or ``input / (1 - p)`` and that the kept fraction is within six
standard deviations of ``1 - p`` (a binomial bound for the size used).
"""

import math

import ninetoothed
import ninetoothed.language as ntl
import torch
from ninetoothed import Tensor

import ninetoothed_ascend
from ninetoothed_ascend import examples


def arrangement(input, p, seed, output, BLOCK_SIZE=ninetoothed.block_size()):
    return input.tile((1, BLOCK_SIZE)), p, seed, output.tile((1, BLOCK_SIZE))


def application(input, p, seed, output):
    output = ntl.where(ntl.rand(seed, input.offsets()) > p, input / (1 - p), 0)  # noqa: F841


tensors = (Tensor(2), Tensor(0), Tensor(0), Tensor(2))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="dropout"
)


CASES = ({"shape": (4099,), "p": 0.3}, {"shape": (3, 5, 67), "p": 0.5})

#: Shapes for bench/npu_vs_cuda.py: large enough to be bandwidth- or compute-bound on a GPU.
BENCH_CASES = ({"shape": (8192, 8192), "p": 0.3},)


#: ``tl.rand`` is a ``triton.jit`` function that calls other ones (``randint``,
#: ``philox``); the CPU pipeline's InterpretLanguageFunctions interprets
#: ``tl.rand`` itself but not what it calls (a bare kernel under
#: TRITON_INTERPRET=1 runs ``tl.rand`` fine).
def inputs(device, dtype=torch.float16, shape=(4099,), p=0.3, seed=1234):
    """The input tensor, ``p`` (``float``, the probability of dropping) and ``seed`` (``int``)."""

    generator = torch.Generator().manual_seed(0)

    return torch.randn(shape, generator=generator).to(device, dtype), p, seed


def launch(kernel, input, p, seed):
    output = torch.empty_like(input)
    kernel(input.view(-1, input.shape[-1]), p, seed, output.view(-1, input.shape[-1]))

    return output


def verify(outputs, input, p, seed):
    """Check the dropout's output without its random numbers.

    :param outputs: ``tuple`` holding the output tensor (``input``'s shape and dtype).
    :param input: the input tensor.
    :param p: ``float``, the probability of dropping.
    :param seed: ``int``.
    :return: ``(matches, max_abs_error)``: whether every element is 0 or
        ``input / (1 - p)`` (within the dtype's tolerance, from
        :data:`ninetoothed_ascend.examples.TOLERANCES`) and the kept fraction
        is within six binomial standard deviations of ``1 - p``; the largest
        absolute difference of a kept element from ``input / (1 - p)``.
    """

    (output,) = outputs
    atol, rtol = examples.TOLERANCES[output.dtype]
    output, scaled = output.float().cpu(), input.float().cpu() / (1 - p)
    # An input of 0 would read as dropped either way; normally distributed
    # inputs hold none.
    kept = output != 0
    difference = (output - scaled).abs()[kept]
    values_match = bool((difference <= atol + rtol * scaled[kept].abs()).all())
    kept_fraction = kept.sum().item() / output.numel()
    bound = 6 * math.sqrt(p * (1 - p) / output.numel())
    fraction_matches = abs(kept_fraction - (1 - p)) <= bound
    max_abs_error = difference.max().item() if difference.numel() else 0.0

    return values_match and fraction_matches, max_abs_error
