"""The toolchain a compiled kernel depends on beyond what Triton's own cache key holds.

triton-ascend 3.2.0 keys its cache on ``triton_key()`` (the hash of
Triton's ``.py`` files and ``libtriton.so``) and ``AscendBackend.hash()``,
which returns only the target (its source:
``triton/backends/ascend/compiler.py``, "TODO fetch compiler version").
The binaries are made by tools outside both: ``triton-adapter-opt`` (shipped
in the wheel, but not hashed), ``bishengir-compile`` and CANN's ``hivmc``.
A machine with another of these would load a binary it did not build, so a
key shared between machines adds :class:`Toolchain`.
"""

import dataclasses
import functools
import hashlib
import os
import shutil
import subprocess
import warnings

#: Seconds a tool's ``--version`` may take.
VERSION_TIMEOUT = 10.0

#: Files in ``$ASCEND_HOME_PATH`` where CANN's packages write their versions.
CANN_VERSION_FILES = ("version.cfg", "compiler/version.info", "runtime/version.info")


@dataclasses.dataclass(frozen=True)
class Toolchain:
    """The tools and target a Triton binary was built with; ``None`` where one is absent.

    :param bishengir_compile: ``str`` or ``None``, the ``--version`` output
        of the ``bishengir-compile`` that triton-ascend runs (or the sha256
        of the executable where ``--version`` fails).
    :param hivmc: ``str`` or ``None``, likewise for CANN's ``hivmc``, which
        ``bishengir-compile`` runs from ``$PATH``.
    :param cann: ``str`` or ``None``, the contents of the version files of
        ``$ASCEND_HOME_PATH`` (:data:`CANN_VERSION_FILES`).
    :param triton_adapter_opt: ``str`` or ``None``, the sha256 of the
        ``triton-adapter-opt`` in the installed Triton's ``backends/ascend``
        (its ``--version`` names LLVM only).
    :param device: ``str`` or ``None``, the target of Triton's active driver
        (on an NPU host its ``arch`` is the SoC name); ``None`` where no
        driver is active (a CPU machine).
    :param target: ``str``, the sha256 of the plugin's
        :class:`~ninetoothed_ascend.compiler.target.Target` for the NPU
        variant (the SoC and the Triton versions the variants are made for),
        or the one-line error that made it unavailable.
    """

    bishengir_compile: str | None
    hivmc: str | None
    cann: str | None
    triton_adapter_opt: str | None
    device: str | None
    target: str

    def digest(self):
        """``str``, the sha256 (hex) of every field: equal toolchains, equal digests."""

        return hashlib.sha256(repr(dataclasses.astuple(self)).encode()).hexdigest()

    @classmethod
    def from_environment(cls):
        """Find the toolchain as triton-ascend finds it, here and now (runs each tool's ``--version`` once).

        ``bishengir-compile`` on ``$PATH``, else ``npuc`` in
        ``$TRITON_NPU_COMPILER_PATH`` (triton-ascend 3.2.0,
        ``backends/ascend/utils.py``, ``_get_npucompiler_path``);
        ``triton-adapter-opt`` next to the Ascend backend
        (``_get_triton_adapter_opt_path``); ``hivmc`` on ``$PATH`` (where
        ``bishengir-compile`` looks: "Cannot find hivmc under $PATH").
        """

        compiler = shutil.which("bishengir-compile")

        if compiler is None and os.environ.get("TRITON_NPU_COMPILER_PATH"):
            compiler = os.path.join(os.environ["TRITON_NPU_COMPILER_PATH"], "npuc")

        return cls(
            bishengir_compile=tool_version(compiler),
            hivmc=tool_version(shutil.which("hivmc")),
            cann=cann_version(os.environ.get("ASCEND_HOME_PATH")),
            triton_adapter_opt=file_digest(_adapter_opt_path()),
            device=_device(),
            target=_target_digest(),
        )


@functools.cache
def current():
    """The :class:`Toolchain` of this process, found once (tools do not change under a running process)."""

    return Toolchain.from_environment()


def tool_version(path):
    """Return what ``path --version`` prints (``str``), its sha256 if that fails, or ``None`` where ``path`` is ``None`` or no file.

    :param path: ``str`` or ``None``, an executable.
    """

    if path is None or not os.path.isfile(path):
        return None

    try:
        completed = subprocess.run(
            [path, "--version"],
            capture_output=True,
            timeout=VERSION_TIMEOUT,
            check=False,
        )
        text = (completed.stdout + completed.stderr).decode("utf-8", "replace").strip()

        if completed.returncode == 0 and text:
            return text
    except (OSError, subprocess.SubprocessError):
        pass

    return f"sha256:{file_digest(path)}"


def cann_version(home):
    """Return the contents of CANN's version files under ``home`` (``str``), or ``None`` where there are none.

    :param home: ``str`` or ``None``, ``$ASCEND_HOME_PATH``.
    """

    if not home:
        return None

    found = []

    for name in CANN_VERSION_FILES:
        try:
            with open(
                os.path.join(home, name), encoding="utf-8", errors="replace"
            ) as file:
                found.append(f"{name}:\n{file.read(1 << 16).strip()}")
        except OSError:
            continue

    return "\n".join(found) or None


def file_digest(path):
    """Return the sha256 (hex) of the file ``path``, or ``None`` where it cannot be read.

    :param path: ``str`` or ``None``.
    """

    if path is None:
        return None

    try:
        with open(path, "rb") as file:
            return hashlib.file_digest(file, "sha256").hexdigest()
    except OSError:
        return None


def _adapter_opt_path():
    try:
        import triton
    except ImportError:
        return None

    return os.path.join(
        os.path.dirname(triton.__file__), "backends", "ascend", "triton-adapter-opt"
    )


def _device():
    try:
        from triton.runtime import driver

        # triton-ascend's driver warns on a machine without CANN before it
        # fails: that is the answer "no device", not news.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")

            return repr(driver.active.get_current_target())
    except Exception:  # noqa: BLE001
        # No active driver (a CPU machine): the binaries here are not for a device.
        return None


def _target_digest():
    from ninetoothed_ascend.compiler.target import Target

    try:
        target = Target.from_environment("npu")
    except ValueError as error:
        return f"unavailable: {error}"

    return hashlib.sha256(repr(target).encode()).hexdigest()


__all__ = [
    "CANN_VERSION_FILES",
    "VERSION_TIMEOUT",
    "Toolchain",
    "cann_version",
    "current",
    "file_digest",
    "tool_version",
]
