"""The downstream library's own test suite: it knows nothing of ninetoothed-ascend.

Run it from the repository root with ``--confcutdir=tests/downstream`` so
that the project's ``tests/conftest.py`` (which imports ninetoothed-ascend)
stays out: ``scripts/downstream_compare.py`` runs it with plain NineToothed,
with ``NINETOOTHED_ASCEND=1`` and with ``NINETOOTHED_ASCEND_EMULATE_NPU=1``
as well. Tensors go to CUDA where there is a GPU, else to the CPU (plain
NineToothed then needs ``TRITON_INTERPRET=1``).
"""

import pathlib
import sys

import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "full: the whole stand-in library (many kernels in one process); CI runs "
        '-m "not full"',
    )


@pytest.fixture
def device():
    return "cuda" if torch.cuda.is_available() else "cpu"
