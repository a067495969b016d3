"""The NPU variant's passes, one Ascend constraint each (the pipeline: :data:`ninetoothed_ascend.compiler.pipelines.NPU`); the Unified Buffer's under :mod:`.ub`."""
