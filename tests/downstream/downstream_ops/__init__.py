"""Twenty element-wise operators built on plain NineToothed (a test fixture)."""

from downstream_ops.ops import OPS, REFERENCES, run

__all__ = ["OPS", "REFERENCES", "run"]
