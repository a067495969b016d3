"""Transparent import: a downstream library on plain NineToothed runs unchanged; ``disable()`` restores NineToothed."""

import pathlib
import sys

import ninetoothed
import pytest
from helpers import run_python

import ninetoothed_ascend
from ninetoothed_ascend import activation
from ninetoothed_ascend.jit import Handle
from ninetoothed_ascend.jit import ninetoothed_adapter as adapter

DOWNSTREAM = pathlib.Path(__file__).resolve().parent / "downstream"
SRC = pathlib.Path(ninetoothed_ascend.__file__).resolve().parent.parent

#: A few of the fixture's operators: each test process generates them afresh.
SOME_OPS = ["add", "where_max", "relu_add"]


def run_downstream(code, cache_dir, **env):
    return run_python(
        code,
        cache_dir,
        PYTHONPATH=f"{SRC}:{DOWNSTREAM}",
        **env,
    )


def assert_ran_dual(report, count=len(SOME_OPS)):
    # A handle's class is Handle, or its subclass with a ``__call__`` written
    # for the kernel's launch function (jit/dispatch.py).
    assert len(report["kernels"]) == count
    assert set(report["kernels"]) <= {
        "ninetoothed_ascend.jit.handle.Handle",
        "ninetoothed_ascend.jit.dispatch.Handle",
    }
    assert report["max_abs_error"] < 1e-5


def test_import_before_the_library(cache_dir):
    report = run_downstream(
        f"""
        import ninetoothed_ascend
        from downstream_ops.ops import main
        main({SOME_OPS!r})
        """,
        cache_dir,
    )

    assert_ran_dual(report)


def test_import_after_the_library_and_a_bound_make(cache_dir):
    report = run_downstream(
        f"""
        import json
        from ninetoothed import make as bound_make
        from downstream_ops import kernels, ops
        import ninetoothed_ascend
        bound = bound_make(*kernels.premake("mul", 2))
        ops.main({SOME_OPS!r})
        """,
        cache_dir,
    )

    assert_ran_dual(report)


def test_environment_variable_activates_at_interpreter_start(cache_dir):
    # ``site.addsitedir`` runs the shipped .pth file as interpreter start does
    # for site-packages; the import is deferred until NineToothed's.
    code = f"""
        import site, sys
        site.addsitedir({str(SRC)!r})
        before = "ninetoothed_ascend" in sys.modules
        from downstream_ops.ops import main
        assert not before, "activated before NineToothed was imported"
        main({SOME_OPS!r})
        """

    assert_ran_dual(run_downstream(code, cache_dir, NINETOOTHED_ASCEND="1"))


@pytest.mark.parametrize("value", ["", "0"])
def test_environment_variable_unset_costs_nothing(cache_dir, value):
    report = run_downstream(
        f"""
        import json, site, sys
        site.addsitedir({str(SRC)!r})
        import ninetoothed
        print(json.dumps({{
            "loaded": sorted(m for m in ("ninetoothed_ascend", "_ninetoothed_ascend_startup", "torch") if m in sys.modules),
            "make": ninetoothed.make.__module__,
        }}))
        """,
        cache_dir,
        NINETOOTHED_ASCEND=value,
    )

    assert report == {"loaded": [], "make": "ninetoothed.make"}


PLAIN_FAILURE = """
    import json
    {prelude}
    from downstream_ops.ops import main
    try:
        main(["add"])
    except Exception as error:
        print(json.dumps({{"error": type(error).__name__ + ": " + str(error)}}))
"""


def test_disable_restores_plain_ninetoothed(cache_dir):
    plain = run_downstream(PLAIN_FAILURE.format(prelude=""), cache_dir)
    disabled = run_downstream(
        PLAIN_FAILURE.format(
            prelude="import ninetoothed_ascend; ninetoothed_ascend.disable()"
        ),
        cache_dir,
    )

    # Without a GPU, plain NineToothed cannot make a kernel; neither can it after disable().
    assert "error" in plain
    assert disabled == plain


def test_disable_and_activate_are_idempotent_and_exact():
    replaced = (
        ninetoothed.make,
        ninetoothed.jit,
        adapter.MAKE_MODULE.jit,
        adapter.NineToothedHandle.__call__,
    )
    assert activation.is_active()
    assert ninetoothed.make is ninetoothed_ascend.make

    try:
        ninetoothed_ascend.disable()
        ninetoothed_ascend.disable()

        assert not activation.is_active()
        assert ninetoothed.make is adapter.PLAIN_MAKE
        assert ninetoothed.jit is adapter.PLAIN_JIT
        assert adapter.MAKE_MODULE.jit is adapter.PLAIN_JIT
        assert adapter.NineToothedHandle.__call__.__module__ == "ninetoothed.jit"
    finally:
        ninetoothed_ascend.activate()
        ninetoothed_ascend.activate()

    assert (
        ninetoothed.make,
        ninetoothed.jit,
        adapter.MAKE_MODULE.jit,
        adapter.NineToothedHandle.__call__,
    ) == replaced


def test_other_callers_reach_plain_ninetoothed_without_recursion(monkeypatch):
    calls = []
    monkeypatch.setattr(
        sys.modules["ninetoothed.make"], "aot", lambda *a, **k: calls.append(k)
    )

    def arrangement(x):
        return x.tile((4,))

    def application(x):
        pass

    ninetoothed.make(arrangement, application, (ninetoothed.Tensor(1),), caller="cuda")

    assert [call["caller"] for call in calls] == ["cuda"]


def test_kernels_made_before_activation_dispatch_per_call(cache_dir):
    report = run_downstream(
        """
        import json, torch
        import ninetoothed, ninetoothed_ascend
        from ninetoothed_ascend.jit import ninetoothed_adapter as adapter
        from downstream_ops import kernels

        ninetoothed_ascend.disable()
        # Plain NineToothed needs a GPU's properties; lend it the stand-in's.
        with adapter.driver_reporting(adapter.device_properties()):
            plain = ninetoothed.make(*kernels.premake("sub", 1))
        x, y = torch.arange(8.0), torch.ones(8)

        def call():
            out = torch.zeros(8)
            try:
                plain(x, y, out)
            except Exception as error:
                return type(error).__name__
            return out.tolist()

        before = call()
        ninetoothed_ascend.activate()
        active = call()
        ninetoothed_ascend.disable()
        after = call()
        print(json.dumps({"type": type(plain).__name__, "before": before,
                          "active": active, "after": after}))
        """,
        cache_dir,
    )

    assert report["type"] == "_Handle"
    assert report["active"] == [float(v - 1) for v in range(8)]
    assert isinstance(report["before"], str)  # no GPU: plain NineToothed fails
    assert report["after"] == report["before"]


def test_make_returns_a_handle_in_process():
    def arrangement(x, y, BLOCK_SIZE=ninetoothed.block_size()):
        return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,))

    def application(x, y):
        y = x + 1  # noqa: F841

    kernel = ninetoothed.make(
        arrangement, application, (ninetoothed.Tensor(1), ninetoothed.Tensor(1))
    )

    assert isinstance(kernel, Handle)


def test_disabled_gives_plain_ninetoothed_for_a_block():
    with ninetoothed_ascend.disabled():
        assert not activation.is_active()
        assert ninetoothed.make is adapter.PLAIN_MAKE

        with ninetoothed_ascend.disabled():
            pass

        assert not activation.is_active()

    assert activation.is_active()
    assert ninetoothed.make is ninetoothed_ascend.make
