"""warm.compared_variants: which recorded variant digests a rebuild must reproduce."""

from ninetoothed_ascend.jit import VARIANTS
from ninetoothed_ascend.manifest import environment_description
from ninetoothed_ascend.warm import compared_variants


def test_a_manifest_from_this_environment_has_every_variant_compared():
    assert compared_variants({"environment": environment_description()}) == VARIANTS


def test_a_manifest_from_another_triton_has_only_ninetoothed_s_source_compared():
    # Recorded with CUDA Triton, checked where ``triton`` is triton-ascend
    # (scripts/ntops-corpus.sh): the CPU and NPU variants built here differ,
    # and are built here from NineToothed's source, whose digest is checked.
    recorded = environment_description() | {"triton": "another"}

    assert compared_variants({"environment": recorded}) == ()
    assert compared_variants({}) == ()
