"""Top-k, top-p (nucleus) sampling of one token per row of logits, with the random numbers given.

For row ``b``: ``probs = softmax(logits[b])`` in fp32; tokens are ranked by
probability, highest first, ties by token index; token ``i`` is kept when
its rank is below ``top_k[b]``, the probability of the tokens ranked before
it is below ``top_p[b]`` (so the most probable token is always kept) and its
probability is not zero. The sampled token is the kept one at which the
cumulative kept probability, in rank order, first exceeds
``uniform[b] * (total kept probability)``. Given ``uniform``, the result is
deterministic and torch reproduces it with ``torch.sort``.

One program samples one row in one tile, without a sort: ranks and the
probability ranked before each token come from comparing every pair of
tokens of the row, which suits small vocabularies (hundreds of tokens).
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)


def arrangement(logits, top_k, top_p, uniform, output, BLOCK_SIZE=BLOCK_SIZE):
    logits_arranged = logits.tile((1, BLOCK_SIZE))
    logits_arranged.dtype = logits_arranged.dtype.squeeze(0)

    return (
        logits_arranged.squeeze(1),
        top_k.tile((1,)),
        top_p.tile((1,)),
        uniform.tile((1,)),
        output.tile((1,)),
    )


def application(logits, top_k, top_p, uniform, output):
    logits_fp32 = ntl.cast(logits, ntl.float32)
    numerator = ntl.exp(logits_fp32 - ntl.max(logits_fp32))
    probs = numerator / ntl.sum(numerator)
    index = ntl.arange(0, logits.shape[0])

    # before[i, j]: token j ranks before token i.
    before = (probs[None, :] > probs[:, None]) | (
        (probs[None, :] == probs[:, None]) & (index[None, :] < index[:, None])
    )
    rank = ntl.sum(ntl.where(before, 1, 0), 1)
    mass_before = ntl.sum(ntl.where(before, probs[None, :], 0.0), 1)

    kept = (rank < top_k) & (mass_before < top_p) & (probs > 0)
    threshold = uniform * ntl.sum(ntl.where(kept, probs, 0.0))
    num_kept = ntl.sum(ntl.where(kept, 1, 0))
    position = ntl.sum(ntl.where(kept & (mass_before + probs <= threshold), 1, 0))
    position = ntl.minimum(position, num_kept - 1)

    output = ntl.sum(ntl.where(rank == position, index, 0))  # noqa: F841


tensors = (Tensor(2, other=float("-inf")), Tensor(1), Tensor(1), Tensor(1), Tensor(1))

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="topk_topp_sampling"
)


#: Vocabularies up to 128: the pairwise ranking holds a vocab x vocab tile,
#: which for a 256-lane block (vocab 129 to 256) exceeds the Unified Buffer's
#: 192 KB, and a ranking cannot be split into sub-blocks (docs/ub.md).
CASES = ({"batch": 8, "vocab": 128}, {"batch": 5, "vocab": 100})


def inputs(device, dtype=torch.float16, batch=8, vocab=128):
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn((batch, vocab), generator=generator)
    top_k = torch.randint(
        1, vocab + 1, (batch,), generator=generator, dtype=torch.int32
    )
    top_k[0] = vocab
    top_p = torch.rand((batch,), generator=generator) * 0.9 + 0.1
    top_p[1] = 1.0
    uniform = torch.rand((batch,), generator=generator)

    return (
        logits.to(device, dtype),
        top_k.to(device),
        top_p.to(device),
        uniform.to(device),
    )


def launch(kernel, logits, top_k, top_p, uniform):
    output = torch.empty(logits.shape[0], dtype=torch.int64, device=logits.device)
    kernel(
        logits,
        top_k,
        top_p,
        uniform,
        output,
        BLOCK_SIZE=triton.next_power_of_2(logits.shape[-1]),
    )

    return output


def reference(logits, top_k, top_p, uniform):
    probs = torch.softmax(logits.float(), dim=-1)
    sorted_probs, sorted_index = torch.sort(probs, dim=-1, descending=True, stable=True)
    mass_before = sorted_probs.cumsum(-1) - sorted_probs
    rank = torch.arange(probs.shape[-1], device=probs.device)
    kept = (rank < top_k[:, None]) & (mass_before < top_p[:, None]) & (sorted_probs > 0)
    kept_probs = torch.where(kept, sorted_probs, 0.0)
    threshold = uniform * kept_probs.sum(-1)
    position = (kept & (kept_probs.cumsum(-1) <= threshold[:, None])).sum(-1)
    position = torch.minimum(position, kept.sum(-1) - 1)

    return sorted_index.gather(-1, position[:, None]).squeeze(-1)
