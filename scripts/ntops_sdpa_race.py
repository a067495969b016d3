"""ntops' scaled-dot-product attention with a KV cache, each config forced, against torch (needs a CUDA GPU).

ntops' kernel writes the KV cache slot and reads the cache in different
programs, so its result depends on the config and on the order programs run
in. This forces each config through ntops' ``premake(block_size_m=...,
block_size_n=...)`` and counts the wrong cases among 12 random ones, with
plain NineToothed, or with ``plugin`` as the first argument, through
``import ninetoothed_ascend`` (set ``NINETOOTHED_ASCEND_EMULATE_NPU=1`` to
emulate the NPU variant on the GPU)::

    PYTHONPATH=src python scripts/ntops_sdpa_race.py [plugin]

ntops is read from ``$NTOPS_ROOT``, else ``../shared/downstream/ntops``.
"""

import functools
import os
import pathlib
import random
import sys

import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
NTOPS = pathlib.Path(
    os.environ.get("NTOPS_ROOT") or ROOT.parent / "shared" / "downstream" / "ntops"
)
sys.path.insert(0, str(NTOPS / "src"))

import ntops  # noqa: E402
import ntops.kernels.scaled_dot_product_attention as sdpa  # noqa: E402

if sys.argv[1:] == ["plugin"]:
    import ninetoothed_ascend  # noqa: F401

#: (block_size_m, block_size_n) forced in turn.
CONFIGS = ((32, 32), (64, 64), (128, 128), (64, 32), (128, 32))


def wrong_cases(block_size_m, block_size_n, cases=12):
    """Run ``cases`` random KV-cache attentions at one config; print and count those off torch's by more than 0.01."""

    sdpa.premake = functools.partial(
        premake, block_size_m=block_size_m, block_size_n=block_size_n
    )
    wrong = 0

    for seed in range(cases):
        random.seed(seed)
        torch.manual_seed(seed)
        batch = random.randint(1, 4)
        heads_q = 2 ** random.randint(1, 5)
        length_q = random.randint(1, 512)
        dim = random.choice([32, 64])
        heads_kv = 2 ** random.randint(1, max(1, heads_q.bit_length() - 1))
        length_kv = random.randint(1, 512)
        query = torch.randn(batch, heads_q, length_q, dim, device="cuda")
        key = torch.randn(batch, heads_kv, length_kv, dim, device="cuda")
        value = torch.randn(batch, heads_kv, length_kv, dim, device="cuda")
        expected = F.scaled_dot_product_attention(
            query, key.clone(), value.clone(), enable_gqa=True
        )
        present_key, present_value = key[:, :, -1:].clone(), value[:, :, -1:].clone()
        key[:, :, -1:] = 0
        value[:, :, -1:] = 0
        output = ntops.torch.scaled_dot_product_attention(
            query,
            key,
            value,
            enable_gqa=True,
            present_key=present_key,
            present_value=present_value,
            present_key_slot=key[:, :, -1:],
            present_value_slot=value[:, :, -1:],
        )

        if not torch.allclose(output, expected, atol=0.01, rtol=0.01):
            wrong += 1
            print(
                f"  {block_size_m} x {block_size_n}: batch {batch}, {heads_q} query "
                f"heads over {heads_kv}, {length_q} queries, {length_kv} keys, "
                f"dim {dim}: max error {(output - expected).abs().max().item():.3g}"
            )

    return wrong


premake = sdpa.premake

for block_size_m, block_size_n in CONFIGS:
    try:
        wrong = wrong_cases(block_size_m, block_size_n)
        print(f"{block_size_m} x {block_size_n}: {wrong} of 12 KV-cache cases wrong")
    except Exception as error:  # the config cannot run at all: say why, go on
        print(f"{block_size_m} x {block_size_n}: {type(error).__name__}: {error}")
