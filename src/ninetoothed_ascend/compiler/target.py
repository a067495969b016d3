"""The target a variant is generated for: the Ascend SoC and the Triton toolchain, frozen.

:meth:`Target.from_environment` is the one place that reads them from the
environment; every pass receives the :class:`Target` (``Pass.target``) and
the cache key hashes it, so no pass depends on anything it was not given.
"""

import dataclasses
import functools
import os
import re

import triton

from ninetoothed_ascend import host

#: triton-ascend's libdevice package up to 3.2 (3.2.0:
#: ``triton.language.extra.ascend.libdevice``, measured, docs/ascend.md,
#: "libdevice").
LIBDEVICE_UP_TO_3_2 = "triton.language.extra.ascend"

#: triton-ascend's libdevice package after 3.2 (its source tree's main branch,
#: Triton 3.5 frontend, moved it to ``extra.cann``; FlagGems' Ascend backend,
#: ``src/flag_gems/runtime/backend/_ascend/__init__.py``, picks ``ascend``
#: for ``triton.__version__ <= 3.2.0`` and ``cann`` otherwise).
LIBDEVICE_AFTER_3_2 = "triton.language.extra.cann"

#: Autotune keys triton-ascend 3.2's tiling autotuner can bind: one per axis
#: name out of 12 (x, y, z, w, v, t, rx ... rt), "Number of parameters
#: exceeds the number of available axes" past them (docs/ascend.md,
#: "Autotuning on Ascend").
AUTOTUNE_KEYS_UP_TO_3_2 = 12

#: Autotune keys after 3.2: ``triton.autotune`` returns an ``AutoTilingTuner``
#: for every kernel, whose ``_init_axis_params`` raises the same error for a
#: list key longer than its 6 axis names (x, y, z, w, v, t; reduction axes
#: are the same names prefixed with ``r``): triton-ascend main,
#: ``third_party/ascend/backend/runtime/autotuner.py`` and ``utils.py``.
AUTOTUNE_KEYS_AFTER_3_2 = 6

#: The release a version string starts with: ``MAJOR.MINOR``.
_RELEASE = re.compile(r"(\d+)\.(\d+)")


@dataclasses.dataclass(frozen=True)
class Soc:
    """The Ascend SoC that the NPU variant is generated for.

    :param name: ``str``, the SoC name triton-ascend targets.
    :param ub_bytes: ``int``, Unified Buffer bytes per core (192 KB on A2:
        triton-ascend migration guide, docs/ascend.md, "Unified Buffer").
    :param num_aicore: ``int``, AI (cube) cores: the persistent grid of
        kernels with ``tl.dot`` (24 on an Atlas A2 (910B), docs/ascend.md,
        "Grid and cores").
    :param num_vectorcore: ``int``, vector cores: the persistent grid of
        vector-only kernels (two per AI core on A2: triton-ascend 3.2.0's
        ``NPUUtils.get_device_properties`` returns ``num_aicore * 2``).
    :param max_core_dim: ``int``, the largest grid triton-ascend launches
        ("coreDim=N can't be greater than UINT16_MAX").
    :param multibuffer: ``bool``, whether loads in loops are double-buffered
        (``NPUOptions.multibuffer``, true on A2).
    """

    name: str = "Ascend910B1"
    ub_bytes: int = 192 * 1024
    num_aicore: int = 24
    num_vectorcore: int = 48
    max_core_dim: int = 65535
    multibuffer: bool = True


def soc():
    """The :class:`Soc` to generate for: A2 defaults, overridden by the environment.

    * ``NINETOOTHED_ASCEND_UB_BYTES``: UB bytes; else ``ASCEND_UB_CAPACITY_BITS``
      (bits, the variable Liger-Kernel's Ascend UB manager reads);
    * ``NINETOOTHED_ASCEND_NUM_AICORE``, ``NINETOOTHED_ASCEND_NUM_VECTORCORE``.

    The result is part of the cache key (a different SoC generates a
    different NPU variant).

    :raises ValueError: a variable is not a positive integer.
    """

    fields = {}
    ub_bytes = _positive_int("NINETOOTHED_ASCEND_UB_BYTES")

    if ub_bytes is None:
        bits = _positive_int("ASCEND_UB_CAPACITY_BITS")
        ub_bytes = bits // 8 if bits is not None else None

    if ub_bytes is not None:
        fields["ub_bytes"] = ub_bytes

    for field, variable in (
        ("num_aicore", "NINETOOTHED_ASCEND_NUM_AICORE"),
        ("num_vectorcore", "NINETOOTHED_ASCEND_NUM_VECTORCORE"),
    ):
        value = _positive_int(variable)

        if value is not None:
            fields[field] = value

    return Soc(**fields)


def _positive_int(variable):
    text = os.environ.get(variable)

    if text is None or text == "":
        return None

    try:
        value = int(text)
    except ValueError:
        value = 0

    if value <= 0:
        raise ValueError(f"{variable}={text!r} is not a positive integer")

    return value


@dataclasses.dataclass(frozen=True)
class Target:
    """What one variant is generated for.

    :param variant: ``str``, the variant (``"npu"``, ``"cpu"``).
    :param soc: :class:`Soc`, the Ascend SoC (its name, UB bytes, AI and
        vector core counts); only the NPU pipeline reads it.
    :param triton_version: ``str`` or ``None``, ``triton.__version__`` of the
        Triton the variants are made with (``"3.2.0"`` for triton-ascend
        3.2.0, ``"3.9.0"`` for CUDA Triton 3.9).
    :param triton_ascend_version: ``str`` or ``None``, the installed
        triton-ascend's version when it is the ``triton`` that ``import
        triton`` finds, else ``None`` (a CUDA or CPU machine generating the
        NPU variant for the tests, the emulation and the compile check).
    :raises ValueError: ``triton_ascend_version`` does not start with
        ``MAJOR.MINOR``.
    """

    variant: str
    soc: Soc = Soc()
    triton_version: str | None = None
    triton_ascend_version: str | None = None

    def __post_init__(self):
        if self.triton_ascend_version is not None and not _RELEASE.match(
            self.triton_ascend_version
        ):
            raise ValueError(
                f"triton-ascend version {self.triton_ascend_version!r} is not "
                "MAJOR.MINOR[...]; reinstall triton-ascend"
            )

    @classmethod
    def from_environment(cls, variant):
        """The target of ``variant`` here: :func:`soc` and the installed Triton.

        :param variant: ``str``, as :attr:`variant`.
        :raises ValueError: a SoC variable is not a positive integer (:func:`soc`).
        """

        return cls(variant, soc(), *_toolchain())

    @property
    def num_cubecore(self):
        """``int``, cube cores: one per AI core on A2, whose AI cores pair one cube unit with two vector units (docs/ascend.md)."""

        return self.soc.num_aicore

    @property
    def autotune_key_limit(self):
        """``int``, the most names an autotune ``key`` list may hold on this triton-ascend.

        :data:`AUTOTUNE_KEYS_UP_TO_3_2` up to triton-ascend 3.2, and where no
        triton-ascend is installed (3.2.0 is the one release on the package
        registry, docs/ascend.md, "Packages");
        :data:`AUTOTUNE_KEYS_AFTER_3_2` after it.
        """

        if self._after_3_2():
            return AUTOTUNE_KEYS_AFTER_3_2

        return AUTOTUNE_KEYS_UP_TO_3_2

    @property
    def libdevice_modules(self):
        """``tuple`` of ``str``: the packages the NPU variant imports triton-ascend's ``libdevice`` from, first found wins.

        The one of this triton-ascend (:data:`LIBDEVICE_UP_TO_3_2` or
        :data:`LIBDEVICE_AFTER_3_2`); both, newest first, where no
        triton-ascend is installed, so that the variant finds whichever the
        machine that imports it has.
        """

        if self.triton_ascend_version is None:
            return (LIBDEVICE_AFTER_3_2, LIBDEVICE_UP_TO_3_2)

        if self._after_3_2():
            return (LIBDEVICE_AFTER_3_2,)

        return (LIBDEVICE_UP_TO_3_2,)

    def _after_3_2(self):
        if self.triton_ascend_version is None:
            return False

        major, minor = _RELEASE.match(self.triton_ascend_version).groups()

        return (int(major), int(minor)) > (3, 2)


@functools.cache
def _toolchain():
    # Installed packages do not change under a running process.
    ascend = (
        host.version(host.TRITON_ASCEND) if host.triton_package_is_ascend() else None
    )

    return triton.__version__, ascend
