"""Top-k, top-p (nucleus) sampling of one token per row of logits, with the random numbers given.

For row ``b``: ``probs = softmax(logits[b])`` in fp32; tokens are ranked by
logit, highest first, ties by token index (the order of their
probabilities); token ``i`` is kept when its rank is below ``top_k[b]``, the
probability of the tokens ranked before it is below ``top_p[b]`` (so the
most probable token is always kept) and its probability is not zero. The
sampled token is the kept one at which the cumulative kept probability, in
rank order, first exceeds ``uniform[b] * (total kept probability)``. Given
``uniform``, the result is deterministic and torch reproduces it with
``torch.sort``.

One program samples one row, without a sort: ranks and the probability
ranked before each token come from comparing every pair of tokens of the
row. The row is one tile; the tokens it is compared with are loaded again in
``CHUNK``-token pieces, so the pairwise tile is ``BLOCK_SIZE x CHUNK``, not
``BLOCK_SIZE x BLOCK_SIZE`` (which for 128 tokens needs 263,424 bytes of
Unified Buffer in fp16 by BiShengIR, more than A2's 192 KB). Ranking
compares logits, which both loads give bit for bit, so a token never ranks
before itself. This suits small vocabularies (hundreds of tokens).
"""

import ninetoothed.language as ntl
import torch
import triton
from ninetoothed import Symbol, Tensor

import ninetoothed_ascend

BLOCK_SIZE = Symbol("BLOCK_SIZE", constexpr=True)

#: Tokens compared with the whole row at a time; part of the arrangement.
CHUNK = 16


def arrangement(logits, chunks, top_k, top_p, uniform, output, BLOCK_SIZE=BLOCK_SIZE):
    logits_arranged = logits.tile((1, BLOCK_SIZE))
    logits_arranged.dtype = logits_arranged.dtype.squeeze(0)

    # The same logits as a sequence of CHUNK-token tiles per row.
    chunks_arranged = chunks.tile((1, CHUNK)).tile((1, -1))
    chunks_arranged.dtype = chunks_arranged.dtype.squeeze(0)
    chunks_arranged.dtype.dtype = chunks_arranged.dtype.dtype.squeeze(0)

    return (
        logits_arranged.squeeze(1),
        chunks_arranged.squeeze(1),
        top_k.tile((1,)),
        top_p.tile((1,)),
        uniform.tile((1,)),
        output.tile((1,)),
    )


def application(logits, chunks, top_k, top_p, uniform, output):
    logits_fp32 = ntl.cast(logits, ntl.float32)
    maximum = ntl.max(logits_fp32)
    numerator = ntl.exp(logits_fp32 - maximum)
    total = ntl.sum(numerator)
    probs = numerator / total
    index = ntl.arange(0, logits.shape[0])

    rank = ntl.zeros(logits.shape, dtype=ntl.int32)
    mass_before = ntl.zeros(logits.shape, dtype=ntl.float32)

    for c in range(chunks.shape[0]):
        other = ntl.cast(chunks[c], ntl.float32)
        other_probs = ntl.exp(other - maximum) / total
        other_index = c * chunks.dtype.shape[0] + ntl.arange(0, chunks.dtype.shape[0])
        # before[i, j]: token j of the chunk ranks before token i of the row.
        before = (other[None, :] > logits_fp32[:, None]) | (
            (other[None, :] == logits_fp32[:, None])
            & (other_index[None, :] < index[:, None])
        )
        rank += ntl.sum(ntl.where(before, 1, 0), 1)
        mass_before += ntl.sum(ntl.where(before, other_probs[None, :], 0.0), 1)

    kept = (rank < top_k) & (mass_before < top_p) & (probs > 0)
    threshold = uniform * ntl.sum(ntl.where(kept, probs, 0.0))
    num_kept = ntl.sum(ntl.where(kept, 1, 0))
    position = ntl.sum(ntl.where(kept & (mass_before + probs <= threshold), 1, 0))
    position = ntl.minimum(position, num_kept - 1)

    output = ntl.sum(ntl.where(rank == position, index, 0))  # noqa: F841


tensors = (
    Tensor(2, other=float("-inf")),
    Tensor(2, other=float("-inf")),
    Tensor(1),
    Tensor(1),
    Tensor(1),
    Tensor(1),
)

kernel = ninetoothed_ascend.make(
    arrangement, application, tensors, kernel_name="topk_topp_sampling"
)


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
    _, sorted_index = torch.sort(logits.float(), dim=-1, descending=True, stable=True)
    sorted_probs = probs.gather(-1, sorted_index)
    mass_before = sorted_probs.cumsum(-1) - sorted_probs
    rank = torch.arange(probs.shape[-1], device=probs.device)
    kept = (rank < top_k[:, None]) & (mass_before < top_p[:, None]) & (sorted_probs > 0)
    kept_probs = torch.where(kept, sorted_probs, 0.0)
    threshold = uniform * kept_probs.sum(-1)
    position = (kept & (kept_probs.cumsum(-1) <= threshold[:, None])).sum(-1)
    position = torch.minimum(position, kept.sum(-1) - 1)

    return sorted_index.gather(-1, position[:, None]).squeeze(-1)
