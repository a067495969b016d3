"""The programs that lower a ``ttadapter`` output to native code on the CPU, and where they come from.

* ``bishengir-opt``: BiShengIR's ``mlir-opt`` (PyPI ``ascendnpu-ir`` 1.2.0,
  LLVM 19.1.7), which parses every dialect triton-ascend's Linalg holds
  (``hivm``, ``annotation`` attributes) and runs the upstream bufferization
  and lowering passes;
* ``mlir-translate`` and ``llc`` of LLVM 19, the LLVM ``bishengir-opt`` is
  built on (Debian 12: ``apt-get install mlir-19-tools llvm-19``; tools under
  ``/usr/lib/llvm-19/bin``); ``llvm-symbolizer`` of the same package maps a
  faulting instruction back to its MLIR operation;
* ``cc``, the system's C compiler driver, links the shared objects and
  compiles the fault handler (:file:`runtime.c`).
"""

import dataclasses
import functools
import pathlib
import shutil
import subprocess

from ninetoothed_ascend.check import bishengir

#: Where Debian's LLVM 19 packages put their programs.
LLVM_19_BIN = pathlib.Path("/usr/lib/llvm-19/bin")

#: The Debian packages that provide the LLVM 19 programs.
APT_PACKAGES = ("mlir-19-tools", "llvm-19")

INSTALL_HINT = (
    f"install LLVM 19's MLIR tools (Debian/Ubuntu: apt-get install {' '.join(APT_PACKAGES)}) "
    "and ascendnpu-ir (pip install 'ninetoothed-ascend[bishengir]')"
)


class ToolsMissing(RuntimeError):
    """A program the lowered check needs is not installed; the message names it and says how to install it."""


@dataclasses.dataclass(frozen=True)
class Tools:
    """Paths of the programs (each a ``pathlib.Path``)."""

    bishengir_opt: pathlib.Path
    mlir_translate: pathlib.Path
    llc: pathlib.Path
    llvm_symbolizer: pathlib.Path
    cc: pathlib.Path

    def versions(self):
        """``dict`` field name -> the first line of the program's ``--version`` output that holds a digit (``str``); part of every cache key."""

        return _versions(self)


def find():
    """Find the programs.

    :return: :class:`Tools`.
    :raises ToolsMissing: one is missing (the message names each missing
        program and how to install it).
    """

    found, missing = {}, []

    try:
        compile_path = bishengir.compiler_path()
    except bishengir.BiShengIRNotInstalled:
        missing.append("bishengir-opt")
    else:
        found["bishengir_opt"] = compile_path.with_name("bishengir-opt")

    for field, name in (
        ("mlir_translate", "mlir-translate"),
        ("llc", "llc"),
        ("llvm_symbolizer", "llvm-symbolizer"),
    ):
        path = LLVM_19_BIN / name

        if not path.is_file():
            named = shutil.which(f"{name}-19")
            path = pathlib.Path(named) if named else None

        if path is None:
            missing.append(f"{name} (LLVM 19)")
        else:
            found[field] = path

    cc = shutil.which("cc")

    if cc is None:
        missing.append("cc")
    else:
        found["cc"] = pathlib.Path(cc)

    if missing:
        raise ToolsMissing(
            f"lowered check skipped: {', '.join(missing)} not found; {INSTALL_HINT}"
        )

    return Tools(**found)


def missing():
    """``None`` when every program is installed, else the one line that says what to install (``str``)."""

    try:
        find()
    except ToolsMissing as error:
        return str(error)

    return None


def _versions(tools):
    return _cached_versions(tuple(sorted(dataclasses.asdict(tools).items())))


@functools.cache
def _cached_versions(items):
    versions = {}

    for name, path in items:
        output = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, check=False
        )
        lines = (output.stdout + output.stderr).splitlines()
        versions[name] = next(
            (line.strip() for line in lines if any(map(str.isdigit, line))), ""
        )

    return versions
