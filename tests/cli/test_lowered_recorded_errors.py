"""``check --run --manifest``: a recorded kernel whose launch raises is that kernel's error, and the run goes on."""

import torch

from ninetoothed_ascend.cache import Cache
from ninetoothed_ascend.cli import _lowered


class _Handle:
    def lowered(self, config, directory=None, timeout=None, cache=None):
        return _Runner()


class _Runner:
    records = ()


def _refusing_launch(kernel, *arguments):
    raise TypeError(
        "launch_application() missing 1 required positional argument: 'stride_h'"
    )


def _launch(kernel, *arguments):
    pass


def test_a_kernel_whose_launch_raises_is_reported_and_the_next_runs(tmp_path):
    checks = [
        ("refused", _Handle(), _refusing_launch, lambda: [torch.zeros(2)]),
        ("ran", _Handle(), _launch, lambda: [torch.zeros(2)]),
    ]

    records, failures = _lowered.run_recorded(
        checks, "contiguous", 0, Cache(tmp_path), None, as_json=True
    )

    assert failures == 1
    assert [record["outcome"] for record in records] == ["error", _lowered.RAN]
    assert records[0]["detail"].startswith("TypeError: launch_application() missing")
