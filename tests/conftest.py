import importlib.metadata
import os
import pathlib
import tempfile

import pytest

# Imported before any test runs: it keeps ``triton.language`` as imported.
from libdevice_helpers import restore_triton_language

from ninetoothed_ascend import examples

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"

#: Every example module, by file stem (the stems are unique).
EXAMPLE_PATHS = {path.stem: path for path in examples.find_modules([EXAMPLES])}

EXAMPLE_NAMES = tuple(EXAMPLE_PATHS)

# The downstream library's own suite knows nothing of this project and has a
# conftest of its own; scripts/downstream_compare.py runs it (with
# --confcutdir, so this file stays out), tests/test_downstream_compare.py
# runs that script.
collect_ignore = ["downstream/suite"]

# Parametrizing by each example's dtypes and cases imports the examples while
# tests are collected; keep what that generates out of the user's cache.
os.environ.setdefault(
    "NINETOOTHED_ASCEND_CACHE_DIR", tempfile.mkdtemp(prefix="ninetoothed-ascend-")
)

#: The cache directory of the whole run (``.ci/run`` makes one for both
#: environments and every worker), before each test gets its own.
RUN_CACHE_DIR = pathlib.Path(os.environ["NINETOOTHED_ASCEND_CACHE_DIR"])


def triton_ascend_installed():
    try:
        importlib.metadata.version("triton-ascend")
    except importlib.metadata.PackageNotFoundError:
        return False

    return True


def pytest_collection_modifyitems(config, items):
    # Each environment runs only the tests it can: the Ascend compile check
    # needs triton-ascend as `triton`, everything else CUDA Triton.
    ascend = triton_ascend_installed()

    for item in items:
        if ("ascend" in item.keywords) != ascend:
            item.add_marker(
                pytest.mark.skip(
                    reason="runs in the other environment of .ci/run "
                    f"({'triton-ascend' if not ascend else 'CUDA Triton'})"
                )
            )


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch):
    """Every test gets an empty cache directory of its own."""

    directory = tmp_path / "cache"
    monkeypatch.setenv("NINETOOTHED_ASCEND_CACHE_DIR", str(directory))

    return directory


@pytest.fixture
def pristine_triton_language():
    """Start and end from ``triton.language`` as imported, whatever interpreted kernels did."""

    restore_triton_language()
    yield
    restore_triton_language()


@pytest.fixture(scope="session")
def run_cache():
    """A :class:`~ninetoothed_ascend.cache.Cache` shared by every test of the run.

    The compile check's tests pass it to remember ``ttir`` and ``ttadapter``
    output: the BiShengIR, compile-check and lowered tests compile many of
    the same launches, each once.
    """

    from ninetoothed_ascend.cache import Cache

    return Cache(RUN_CACHE_DIR)
