"""Target: the SoC, the toolchain and the Unified Buffer a variant is generated for."""

import ast
import importlib.util
import pathlib
import textwrap

import pytest
import triton
from helpers import shared_example

from ninetoothed_ascend import host
from ninetoothed_ascend.cache import VARIANT_NAMES
from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.npu.remap_libdevice import RemapLibdevice
from ninetoothed_ascend.compiler.passes import PipelineError, run_pipeline
from ninetoothed_ascend.compiler.syntax import keyword
from ninetoothed_ascend.compiler.target import Soc, Target, soc
from ninetoothed_ascend.jit.fingerprint import environment_key


def test_soc_defaults_to_a2_and_reads_the_environment(monkeypatch):
    monkeypatch.delenv("NINETOOTHED_ASCEND_UB_BYTES", raising=False)
    monkeypatch.delenv("ASCEND_UB_CAPACITY_BITS", raising=False)
    assert soc() == Soc(ub_bytes=196608, num_aicore=24, num_vectorcore=48)

    monkeypatch.setenv("ASCEND_UB_CAPACITY_BITS", str(8 * 1000))
    assert soc().ub_bytes == 1000

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "2048")
    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_VECTORCORE", "40")
    assert (soc().ub_bytes, soc().num_vectorcore) == (2048, 40)

    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_AICORE", "many")
    with pytest.raises(ValueError, match="NINETOOTHED_ASCEND_NUM_AICORE"):
        soc()


ASCEND = "triton.language.extra.ascend"


CANN = "triton.language.extra.cann"


#: (triton-ascend version, autotune key limit, libdevice packages).
VERSIONS = [
    ("3.2.0", 12, (ASCEND,)),
    ("3.5.0", 6, (CANN,)),
    # Versions compare as numbers: 3.10 is after 3.2.
    ("3.10.1", 6, (CANN,)),
    # No triton-ascend here: 3.2.0's key limit, and an import that finds either.
    (None, 12, (CANN, ASCEND)),
]


def _keys(source):
    # DeferAutotune moves ``triton.autotune(...)`` into a factory: every call.
    return [
        ast.literal_eval(keyword(node, "key").value)
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "autotune"
    ]


def _npu(version):
    return Target("npu", triton_ascend_version=version)


def test_target_is_built_from_the_environment(monkeypatch):
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "4096")
    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_AICORE", "20")
    monkeypatch.setenv("NINETOOTHED_ASCEND_NUM_VECTORCORE", "40")

    target = Target.from_environment("npu")

    assert target.variant == "npu"
    assert (target.soc.name, target.soc.ub_bytes) == ("Ascend910B1", 4096)
    assert (target.soc.num_aicore, target.num_cubecore) == (20, 20)
    assert target.soc.num_vectorcore == 40
    assert target.triton_version == triton.__version__
    expected = (
        host.version(host.TRITON_ASCEND) if host.triton_package_is_ascend() else None
    )
    assert target.triton_ascend_version == expected


@pytest.mark.parametrize("version, limit, modules", VERSIONS)
def test_the_triton_ascend_version_decides_key_limit_and_libdevice(
    version, limit, modules
):
    assert _npu(version).autotune_key_limit == limit
    assert _npu(version).libdevice_modules == modules


def test_an_unreadable_triton_ascend_version_is_an_error():
    with pytest.raises(ValueError, match="'nightly' is not MAJOR.MINOR"):
        _npu("nightly")


@pytest.mark.parametrize("version, limit, modules", VERSIONS[:2])
def test_the_npu_pipeline_keys_every_autotuner_within_the_limit(
    version, limit, modules
):
    # addmm's key: FitUnifiedBuffer names its 4 innermost strides, which
    # FilterAutotuneKey puts before its 8 sizes.
    source = shared_example("addmm").kernel.source("cuda")

    keys = _keys(run_pipeline(source, pipelines.NPU, _npu(version)).source)

    assert keys
    assert max(len(key) for key in keys) == limit


@pytest.mark.parametrize("version, limit, modules", VERSIONS)
def test_remap_libdevice_imports_the_target_s_libdevice(version, limit, modules):
    source = textwrap.dedent(
        """
        import triton
        from triton.language.extra import libdevice

        @triton.jit
        def kernel(x):
            return libdevice.tanh(x)
        """
    )

    tree = ast.parse(run_pipeline(source, (RemapLibdevice,), _npu(version)).source)
    imported = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "triton.language.extra"
    ]
    (refusal,) = [
        node.exc.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Raise)
    ]

    assert imported == list(modules)
    assert all(f"{module}.libdevice" in refusal for module in modules)
    assert (ASCEND in refusal, CANN in refusal) == (ASCEND in modules, CANN in modules)


def test_passes_take_the_soc_from_the_target_not_the_environment(monkeypatch):
    source = shared_example("add").kernel.source("cuda")
    # 8 bytes of UB: no config of add fits.
    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "8")

    run_pipeline(source, pipelines.NPU, Target("npu", Soc()))

    with pytest.raises(PipelineError) as raised:
        run_pipeline(source, pipelines.NPU, Target.from_environment("npu"))

    assert raised.value.pass_name == "FitUnifiedBuffer"


def test_the_cache_key_hashes_the_target(monkeypatch):
    monkeypatch.delenv("NINETOOTHED_ASCEND_UB_BYTES", raising=False)
    monkeypatch.delenv("ASCEND_UB_CAPACITY_BITS", raising=False)
    before = environment_key("0" * 64)

    monkeypatch.setenv("NINETOOTHED_ASCEND_UB_BYTES", "4096")

    assert environment_key("0" * 64) != before


def test_the_pipeline_table_builds_every_variant_but_nineToothed_s():
    assert {"cuda", *pipelines.VARIANTS} == set(VARIANT_NAMES)
    assert set(pipelines.VARIANTS) == set(pipelines.RUNS_ON)


@pytest.mark.ascend
def test_the_installed_triton_ascend_agrees_with_its_target():
    # Read, not imported: importing triton.runtime.utils asks for a driver.
    path = importlib.util.find_spec("triton.runtime.utils").origin
    (axes,) = [
        node.value
        for node in ast.parse(pathlib.Path(path).read_text()).body
        if isinstance(node, ast.Assign)
        and [target.id for target in node.targets] == ["valid_axis_names"]
    ]
    target = Target.from_environment("npu")

    assert target.triton_ascend_version is not None
    assert target.autotune_key_limit == len(axes.elts)
    assert all(
        importlib.util.find_spec(f"{module}.libdevice") is not None
        for module in target.libdevice_modules
    )
