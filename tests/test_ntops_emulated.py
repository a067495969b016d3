"""ntops' kernels whose NPU variants read a tensor padded in front (rot90, pooling with padding), emulated on the CPU against torch (level 4).

ntops (InfiniTensor's operator library written in NineToothed) is read from
``../shared/downstream/ntops`` beside the repository, or ``$NTOPS_ROOT``; the
test skips, saying so, where it is absent. It runs in a fresh process, with
ntops imported after ninetoothed-ascend and ``NINETOOTHED_ASCEND_EMULATE_NPU=1``,
so that CPU tensors run the NPU variant on Triton's interpreter.
"""

import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
NTOPS = pathlib.Path(
    os.environ.get("NTOPS_ROOT") or ROOT.parent / "shared" / "downstream" / "ntops"
)

PROGRAM = """
import torch
import ninetoothed_ascend  # noqa: F401
import ntops

torch.manual_seed(0)
differ = []

for shape in [(3, 4), (33, 2), (2, 3, 40)]:
    for k in range(4):
        for dims in [(0, 1), (1, 0)]:
            x = torch.randn(shape)
            if not torch.equal(ntops.torch.rot90(x, k=k, dims=dims), torch.rot90(x, k=k, dims=dims)):
                differ.append(("rot90", shape, k, dims))

x = torch.randn(2, 3, 9, 11)
pools = [
    (ntops.torch.max_pool2d, torch.nn.functional.max_pool2d),
    (ntops.torch.avg_pool2d, torch.nn.functional.avg_pool2d),
]

for ours, theirs in pools:
    got = ours(x, (3, 3), stride=(2, 2), padding=(1, 1))
    if not torch.allclose(got, theirs(x, 3, stride=2, padding=1), atol=1e-5):
        differ.append((ours.__name__, "padding 1"))

print(differ)
"""


@pytest.mark.skipif(
    not (NTOPS / "src" / "ntops" / "torch").is_dir(),
    reason=f"no ntops checkout at {NTOPS} (set NTOPS_ROOT to one of InfiniTensor/ntops)",
)
def test_ntops_reads_of_a_tensor_padded_in_front_emulated_on_the_cpu_match_torch(
    tmp_path,
):
    # UnsubtractLaneBounds rewrites these kernels' masks (the lowered level
    # showed rot90 reading before its input without it).
    completed = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=os.environ
        | {
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(NTOPS / "src")]),
            "NINETOOTHED_ASCEND_EMULATE_NPU": "1",
            "NINETOOTHED_ASCEND_CACHE_DIR": str(tmp_path / "cache"),
        },
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip().splitlines()[-1] == "[]"
