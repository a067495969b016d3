"""The Python environment of an Ascend host: which ``triton`` is installed, and what to install beside it.

triton-ascend installs the top-level ``triton`` package under the distribution
name ``triton-ascend``. NineToothed requires the distribution ``triton``, so a
plain ``pip install ninetoothed-ascend`` on an Ascend host installs CUDA Triton
over triton-ascend's files (docs/ascend.md, "Packages"). The recipe that
avoids it installs NineToothed and this package with ``--no-deps`` and their
other requirements by name: :func:`requirements_beside_triton_ascend` lists
them from the installed metadata, so the recipe follows the packages' own
requirements. :func:`diagnose` is what ``ninetoothed-ascend doctor`` reports.
"""

import dataclasses
import functools
import importlib.metadata
import importlib.util
import pathlib
import re
import sys

#: The distribution that owns ``import triton`` on an Ascend host.
TRITON_ASCEND = "triton-ascend"

#: CUDA Triton's distribution, which NineToothed requires by name.
CUDA_TRITON = "triton"

#: The command that puts triton-ascend back where CUDA Triton replaced it.
REPAIR_TRITON = (
    f"pip uninstall -y {CUDA_TRITON} {TRITON_ASCEND} && "
    f"pip install {TRITON_ASCEND}=={{version}}"
)

#: Where ``bishengir-compile`` comes from without CANN (the BiShengIR check).
ASCENDNPU_IR = "ascendnpu-ir"


@dataclasses.dataclass(frozen=True)
class Finding:
    """One line of the diagnosis.

    :param name: ``str``, what was looked at.
    :param detail: ``str``, what was found.
    :param fix: ``str`` or ``None``, the command or step that repairs it.
    :param fatal: ``bool``, whether this environment cannot work as it is.
    """

    name: str
    detail: str
    fix: str | None = None
    fatal: bool = False


def version(distribution):
    """Return an installed distribution's version, or ``None``.

    :param distribution: ``str``, a distribution name (``"triton-ascend"``).
    """

    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def triton_package_is_ascend():
    """Whether the ``triton`` package that ``import triton`` finds is triton-ascend's.

    Decided by the files on disk (``triton/backends/ascend``), without
    importing ``triton``: triton-ascend's import needs torch, and a replaced
    installation may not import at all.

    :return: ``bool``, or ``None`` when no ``triton`` package is installed.
    """

    backends = triton_backends_directory()

    if backends is None:
        return None

    return (backends / "ascend").is_dir()


def triton_backends_directory():
    """The ``backends`` directory of the ``triton`` package that ``import triton`` finds, found without importing it.

    :return: ``pathlib.Path``, or ``None`` when no ``triton`` package is installed.
    """

    spec = importlib.util.find_spec("triton")

    if spec is None or spec.origin is None:
        return None

    return pathlib.Path(spec.origin).parent / "backends"


def likely_call_device_type():
    """The device type the tensors of this process's kernel calls most likely have.

    ``make`` builds that device's variant beside NineToothed's source, under
    the same lock and in the same cache write, instead of at the first call,
    so a kernel pays one lock and one cache write (its cost:
    docs/benchmarks.md, "Cost of make"). Where the guess is wrong, the first
    call builds its variant as before.

    :return: ``"npu"`` where ``torch_npu`` is imported (torch has no ``npu``
        device type without it, so a program that calls with NPU tensors has
        imported it), ``"cuda"`` where torch sees a CUDA device, ``"npu"``
        where ``torch_npu`` is installed (a library may make its kernels
        before its program imports ``torch_npu``), else ``"cpu"``: a name of
        ``ninetoothed_ascend.cache.VARIANT_NAMES``.
    """

    if "torch_npu" in sys.modules:
        return "npu"

    import torch

    if torch.cuda.is_available():
        return "cuda"

    return "npu" if _torch_npu_installed() else "cpu"


@functools.cache
def _torch_npu_installed():
    # Found on ``sys.path`` without importing it (its import needs CANN).
    return importlib.util.find_spec("torch_npu") is not None


def diagnose():
    """Report the ``triton`` installation and the Ascend tools of this environment.

    :return: ``list`` of :class:`Finding`: the ``triton`` distributions
        (fatal where triton-ascend is installed but ``import triton`` finds
        another package, or both distributions are installed), BiShengIR
        (``ascendnpu-ir``) and ``torch_npu`` with its visible NPUs.
    """

    ascend = version(TRITON_ASCEND)
    cuda = version(CUDA_TRITON)
    is_ascend = triton_package_is_ascend()
    findings = []

    if ascend and (cuda or not is_ascend):
        problem = (
            f"{TRITON_ASCEND} {ascend} and {CUDA_TRITON} {cuda} are both installed: "
            "they write the same `triton` package, whose files are now a mix of both"
            if cuda
            else f"{TRITON_ASCEND} {ascend} is installed, but `import triton` "
            "does not find its files: another `triton` replaced them"
        )
        findings.append(
            Finding(
                "triton",
                f"{problem} (a plain `pip install ninetoothed` installs CUDA Triton)",
                fix=REPAIR_TRITON.format(version=ascend),
                fatal=True,
            )
        )
    elif ascend:
        findings.append(
            Finding(
                "triton", f"{TRITON_ASCEND} {ascend} (Ascend compile check available)"
            )
        )
    elif cuda:
        findings.append(
            Finding(
                "triton",
                f"{CUDA_TRITON} {cuda} (CUDA Triton; no Ascend compile check here)",
            )
        )
    else:
        findings.append(
            Finding(
                "triton",
                "not installed",
                fix=f"pip install {TRITON_ASCEND} (Ascend) or {CUDA_TRITON} (CUDA)",
                fatal=True,
            )
        )

    if ascend:
        bishengir = version(ASCENDNPU_IR)
        findings.append(
            Finding(
                "bishengir",
                f"{ASCENDNPU_IR} {bishengir}"
                if bishengir
                else f"{ASCENDNPU_IR} not installed: `check` stops before BiShengIR "
                "(CANN's own bishengir-compile is used at a launch)",
                fix=None
                if bishengir
                else "pip install 'ninetoothed-ascend[bishengir]'",
            )
        )

    findings.append(_torch_npu_finding())

    return findings


def _torch_npu_finding():
    npu_version = version("torch-npu") or version("torch_npu")

    if not npu_version:
        return Finding(
            "npu devices",
            "torch_npu not installed",
            fix="install torch_npu and CANN to run on an NPU",
        )

    try:
        import torch
        import torch_npu  # noqa: F401

        count = torch.npu.device_count()
    except Exception as error:  # torch_npu without CANN raises on import
        return Finding(
            "npu devices",
            f"torch_npu {npu_version}: unusable ({error})",
            fix="source CANN's set_env.sh (the toolkit's environment) first",
        )

    if count == 0:
        return Finding(
            "npu devices",
            f"torch_npu {npu_version}: no NPU visible",
            fix="check `npu-smi info` and ASCEND_RT_VISIBLE_DEVICES",
        )

    return Finding("npu devices", f"torch_npu {npu_version}: {count} devices")


def requirements_beside_triton_ascend(
    distributions=("ninetoothed-ascend", "ninetoothed"),
):
    """Return what must be installed by name beside triton-ascend.

    The unconditional requirements of ``distributions`` (their extras left
    out), less the distributions themselves and CUDA Triton.

    :param distributions: names of installed distributions.
    :return: ``list`` of requirement names (``str``), sorted, lower case.
    :raises importlib.metadata.PackageNotFoundError: a distribution is not installed.
    """

    skipped = {_normalize(name) for name in distributions} | {CUDA_TRITON}
    names = set()

    for distribution in distributions:
        for requirement in importlib.metadata.requires(distribution) or ():
            if "extra ==" in requirement:
                continue

            name = _normalize(re.match(r"[A-Za-z0-9._-]+", requirement).group())

            if name not in skipped:
                names.add(name)

    return sorted(names)


def _normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()
