"""MapLibdevice: what no portable function can compute is refused by name."""

import pytest
from libdevice_helpers import INTRINSICS, npu_call

from ninetoothed_ascend.compiler import pipelines
from ninetoothed_ascend.compiler.passes import (
    PipelineError,
    run_pipeline,
)


@pytest.mark.parametrize("name", INTRINSICS)
def test_ascend_intrinsics_are_refused_by_name(name):
    with pytest.raises(PipelineError, match=f"libdevice.{name}`.*no portable"):
        run_pipeline(npu_call(name, 2), pipelines.EMULATIONS["cpu"])


def test_unknown_libdevice_function_is_refused_by_name():
    with pytest.raises(PipelineError, match="`.*libdevice.sinpi` is not a function"):
        run_pipeline(npu_call("sinpi", 1), pipelines.EMULATIONS["cuda"])


def test_libdevice_function_used_as_a_value_is_refused():
    source = npu_call("tanh").replace("return ld.tanh(x)", "return ld.tanh")

    with pytest.raises(PipelineError, match="used other than by calling it"):
        run_pipeline(source, pipelines.EMULATIONS["cuda"])
