"""pytest plugin for ntops' own suite with every kernel's NPU variant emulated (level 4); ``scripts/ntops-suite.sh`` loads it.

Importing ``ninetoothed_ascend`` first activates the transparent import in
each pytest process (xdist workers included), so that ntops' kernels, built
with ``ninetoothed.make``, become handles. With ``NTOPS_SUITE_DEVICE=cpu``,
ntops' tests, written for CUDA, run on CPU tensors: its
``skip_if_cuda_not_available`` lets them run and each ``device`` parameter
``"cuda"`` becomes ``"cpu"``, where the handle runs the NPU variant on
Triton's interpreter (``NINETOOTHED_ASCEND_EMULATE_NPU=1``).
"""

import os

import ninetoothed_ascend  # noqa: F401  (before ntops is imported)

ON_CPU = os.environ.get("NTOPS_SUITE_DEVICE") == "cpu"

if ON_CPU:
    import tests.skippers

    tests.skippers.skip_if_cuda_not_available = lambda test: test


def pytest_collection_modifyitems(items):
    if not ON_CPU:
        return

    for item in items:
        parameters = getattr(getattr(item, "callspec", None), "params", {})

        if parameters.get("device") == "cuda":
            parameters["device"] = "cpu"
