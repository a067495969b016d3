"""BiShengIR: the ``ttadapter`` output (Linalg MLIR text) through ``bishengir-compile``, up to the external ``hivmc`` step.

``bishengir-compile`` is the compiler triton-ascend's ``npubin`` stage calls.
The PyPI package ``ascendnpu-ir`` (1.2.0; the ``bishengir`` extra of this
package) ships it in ``ascendnpuir/bin``; it runs the whole BiShengIR pipeline
(HFusion, HIVM, memory planning of the Unified Buffer) on an x86 CPU without
CANN and stops only at the final external ``hivmc`` step, which needs CANN.
Reaching that step is the highest level of checking this project has; nothing
here runs on an NPU. Facts and messages: docs/ascend.md, "BiShengIR without an NPU".

Version skew: ascendnpu-ir 1.2.0 is newer than the BiShengIR of the CANN
releases triton-ascend 3.2.0 was built against; record :func:`version` beside
every claim made with it.
"""

import dataclasses
import importlib.util
import json
import pathlib
import re
import subprocess
import tempfile
import time

from ninetoothed_ascend import host

#: The SoC compiled for when none is named (Atlas A2, 192 KB of UB).
DEFAULT_ARCH = "Ascend910B1"

#: Atlas A2 / A3 SoCs: ``bishengir-compile`` (ascendnpu-ir 1.2.0, ``--help``).
A2_A3_ARCHS = (
    "Ascend910B1",
    "Ascend910B2",
    "Ascend910B3",
    "Ascend910B4",
    "Ascend910B4-1",
    "Ascend910B2C",
    "Ascend910_9362",
    "Ascend910_9372",
    "Ascend910_9381",
    "Ascend910_9382",
    "Ascend910_9391",
    "Ascend910_9392",
)

#: Ascend 950 (A5) SoCs: ``bishengir-compile-a5`` (ascendnpu-ir 1.2.0, ``--help``).
A5_ARCHS = (
    "Ascend910_950z",
    "Ascend910_9579",
    "Ascend910_957b",
    "Ascend910_957d",
    "Ascend910_9581",
    "Ascend910_9589",
    "Ascend910_958a",
    "Ascend910_958b",
    "Ascend910_9599",
)

#: How to get the compiler where it is missing.
INSTALL_HINT = (
    "install ascendnpu-ir (pip install 'ninetoothed-ascend[bishengir]') "
    "to run the BiShengIR stage"
)

# The flags triton-ascend 3.2.0 passes with its default options
# (``linalg_to_bin_enable_npu_compile_A2_A3`` in triton/backends/ascend/compiler.py:
# the ``bishengir-compile`` of ascendnpu-ir 1.2.0 has no ``reg-based`` option, so
# ``--enable-hivm-compile=true``; TRITON_DISABLE_LINE_INFO defaults to true, so
# no ``--enable-debug-info``), after those of the launch's options.
_A2_A3_FLAGS = (
    "--enable-hfusion-compile=true",
    "--enable-hivm-compile=true",
    "--enable-triton-kernel-compile=true",
)
# ``linalg_to_bin_enable_npu_compile_910_95`` of the same file: the same
# flags without ``--enable-hivm-compile``.
_A5_FLAGS = (
    "--enable-hfusion-compile=true",
    "--enable-triton-kernel-compile=true",
)

#: The launch options (fields of triton-ascend 3.2.0's ``NPUOptions``) that
#: its A2/A3 ``npubin`` stage passes to ``bishengir-compile``, each as
#: ``FLAG=value`` where the option is not ``None``: option -> flag, in the
#: order of ``linalg_to_bin_enable_npu_compile_A2_A3``.
A2_A3_OPTION_FLAGS = {
    "multibuffer": "--enable-auto-multi-buffer",
    "enable_auto_bind_sub_block": "--enable-auto-bind-sub-block",
    "enable_hivm_auto_cv_balance": "--enable-hivm-auto-cv-balance",
    "sync_solver": "--enable-hivm-graph-sync-solver",
    "unit_flag": "--enable-hivm-unit-flag-sync",
    "inject_barrier_all": "--enable-hivm-inject-barrier-all-sync",
    "inject_block_all": "--enable-hivm-inject-block-all-sync",
}
#: The same for A5 (``linalg_to_bin_enable_npu_compile_910_95``), which
#: passes no ``sync_solver`` and no ``inject_block_all``.
A5_OPTION_FLAGS = {
    name: flag
    for name, flag in A2_A3_OPTION_FLAGS.items()
    if name not in ("sync_solver", "inject_block_all")
}
#: ``NPUOptions``' defaults of those options (triton-ascend 3.2.0): what a
#: launch that states none of them compiles with.
DEFAULT_OPTIONS = {"multibuffer": True, "enable_auto_bind_sub_block": True}


def option_flags(options, arch=DEFAULT_ARCH):
    """The ``bishengir-compile`` flags triton-ascend 3.2.0 derives from a launch's options.

    :param options: ``dict`` option name -> value, the keywords of a launch
        that are not kernel parameters (``sync_solver=False``, ``num_warps``,
        ...); those :data:`A2_A3_OPTION_FLAGS` (or :data:`A5_OPTION_FLAGS`)
        does not name are ignored, as the ``npubin`` stage ignores them.
    :param arch: ``str``, the SoC.
    :return: ``list`` of ``str``, ``FLAG=value`` for each option that is not
        ``None``, :data:`DEFAULT_OPTIONS` filling those the launch omits.
    """

    table = A5_OPTION_FLAGS if arch in A5_ARCHS else A2_A3_OPTION_FLAGS
    chosen = DEFAULT_OPTIONS | dict(options)

    return [
        f"{flag}={chosen[name]}"
        for name, flag in table.items()
        if chosen.get(name) is not None
    ]


_REACHED_HIVMC = "External hivmc run fails"
_UB_OVERFLOW = re.compile(
    r"ub overflow, requires (\d+) bits while (\d+) bits available"
)
# Printed for every look-up of the external compiler; not the kernel's problem.
_NOISE = re.compile(
    r"Cannot find hivmc(-a5)? under \$PATH|Failed to run `hivmc --version`|"
    r"Failed to detect hivmc version|Ub overflow detected|Due to Ub overflow|"
    r"Failed to run BiSheng(IR|HIR) pipeline"
)
_MESSAGE_LIMIT = 4000

#: How many times a compile runs while it crashes. ascendnpu-ir 1.2.0's
#: ``bishengir-compile`` crashes now and then on an input it compiles on
#: the next run (an LLVM stack dump, no diagnostic): ntops' corpus at level 3
#: (``scripts/ntops-corpus.sh``, 1,517 configs, 2 compiles at once) crashed
#: on 3 configs of addmm and sdpa in one run, on 1 of addmv in another and
#: on none in a third, each config reaching ``hivmc`` when compiled again;
#: every config of the corpus (2,122) on 4, each reaching ``hivmc`` when run
#: again.
CRASH_RUNS = 3

_SOURCE = "kernel.ttadapter.mlir"

# LLVM's crash report: "Stack dump:" and its frames, "#12 0x00007f... name".
_CRASH = re.compile(r"^Stack dump:|^(\[ERROR\] )?\s*#\d+ 0x[0-9a-f]+ ", re.M)


class BiShengIRNotInstalled(RuntimeError):
    """``bishengir-compile`` is not installed (the ``ascendnpu-ir`` package is missing); the message says how to install it."""


@dataclasses.dataclass(frozen=True)
class BiShengIRResult:
    """One ``bishengir-compile`` run.

    :param outcome: ``"hivmc"`` (the pipeline ran to the external ``hivmc``
        step: success, as far as a machine without CANN can tell),
        ``"ub_overflow"`` (memory planning found the Unified Buffer too small),
        ``"error"`` (any other failure) or ``"timeout"``.
    :param ub_required_bytes: ``int`` bytes of UB the kernel needs, on a UB overflow; else ``None``.
    :param ub_available_bytes: ``int`` bytes of UB the SoC has, on a UB overflow; else ``None``.
    :param planned_ub_bytes: ``int`` bytes of UB in BiShengIR's plan (the end
        of its highest buffer, multi-buffer copies included), when asked for
        with ``memory_report``; else ``None``.
    :param seconds: ``float`` wall time of the compile.
    :param message: ``str``, the compiler's error lines (trimmed; empty on ``"hivmc"``).
    :param arch: ``str``, the SoC compiled for.
    :param crashes: ``int``, runs of the compile that decided the outcome
        that crashed, each run again (:data:`CRASH_RUNS`); all of them where
        it is :data:`CRASH_RUNS`, and the result is the last crash's error.
    :param report_error: ``str``, empty unless a memory report was asked
        for and the run with ``--enable-memory-display`` failed; then its
        error (first line), the outcome is that of the launch's own command
        (:func:`compile_linalg`) and ``planned_ub_bytes`` is ``None``.
    """

    outcome: str
    ub_required_bytes: int | None
    ub_available_bytes: int | None
    planned_ub_bytes: int | None
    seconds: float
    message: str
    arch: str
    crashes: int = 0
    report_error: str = ""


def version():
    """The installed ``ascendnpu-ir`` version (``str``), or ``None`` when it is not installed."""

    return host.version(host.ASCENDNPU_IR)


def missing():
    """``None`` when ``bishengir-compile`` is installed, else the one line that says how to install it (``str``)."""

    try:
        compiler_path()
    except BiShengIRNotInstalled as error:
        return str(error)

    return None


def compiler_path(arch=DEFAULT_ARCH):
    """The ``bishengir-compile`` (or, for an A5 ``arch``, ``bishengir-compile-a5``) binary of the installed ``ascendnpu-ir``.

    Found through the package (``importlib``), not ``PATH``.

    :param arch: ``str``, one of :data:`A2_A3_ARCHS` or :data:`A5_ARCHS`.
    :return: ``pathlib.Path``.
    :raises ValueError: ``arch`` is not a SoC BiShengIR knows.
    :raises BiShengIRNotInstalled: ``ascendnpu-ir`` is not installed, or lacks the binary.
    """

    if arch in A2_A3_ARCHS:
        name = "bishengir-compile"
    elif arch in A5_ARCHS:
        name = "bishengir-compile-a5"
    else:
        raise ValueError(
            f"BiShengIR knows no SoC {arch!r}; choose one of "
            f"{', '.join(A2_A3_ARCHS + A5_ARCHS)}"
        )

    spec = importlib.util.find_spec("ascendnpuir")

    if spec is None or not spec.submodule_search_locations:
        raise BiShengIRNotInstalled(f"BiShengIR skipped: {INSTALL_HINT}")

    for location in spec.submodule_search_locations:
        path = pathlib.Path(location) / "bin" / name

        if path.is_file():
            return path

    raise BiShengIRNotInstalled(
        f"BiShengIR skipped: the installed ascendnpu-ir has no {name}; {INSTALL_HINT}"
    )


def compile_linalg(
    linalg_text, arch=DEFAULT_ARCH, *, options=None, memory_report=False, timeout=None
):
    """Run ``bishengir-compile`` on a ``ttadapter`` output as triton-ascend 3.2.0's ``npubin`` stage does, in a temporary directory.

    The command is ``bishengir-compile kernel.ttadapter.mlir --target=<arch>
    --enable-auto-multi-buffer=True --enable-auto-bind-sub-block=True
    --enable-hfusion-compile=true --enable-hivm-compile=true
    --enable-triton-kernel-compile=true -o kernel``, the flags of
    ``linalg_to_bin_enable_npu_compile_A2_A3`` in triton-ascend 3.2.0's
    ``triton/backends/ascend/compiler.py`` with its default options, and
    those a launch's ``options`` add (:func:`option_flags`); for an
    A5 SoC, ``bishengir-compile-a5`` with the flags of
    ``linalg_to_bin_enable_npu_compile_910_95`` (no ``--enable-hivm-compile``).
    On an overflow BiShengIR itself retries without code motion and without
    multi-buffer before it gives up, as on an NPU host. A compile that
    crashes is run again, up to :data:`CRASH_RUNS` runs in all.

    With ``memory_report``, ``--enable-memory-display`` is added; where that
    run fails (a crash on every run, or any diagnosed error), the launch's
    own command, without it, is run and decides the outcome, the failure
    kept in ``report_error``. The option is a report, not what a launch
    runs, and it fails on its own: ntops' scaled_dot_product_attention
    launches (``scripts/ntops_corpus.py sweep REC --level 3 --modules
    scaled_dot_product_attention``, 72 configs, 2 compiles at once) crashed
    on 1, 0 and 2 configs in three sweeps; its 54 distinct Linalg texts, 10
    runs each, crashed in 4 of 540 runs with the option and in none of 540
    without it; one CI sweep got "'scf.for' op Failed to collect vector
    loop tiling info" on one config that reached ``hivmc`` in every other
    run (``bench/memory_display_failures.py`` measures the examples).

    A5: the ``bishengir-compile-a5`` of ascendnpu-ir 1.2.0 looks for
    ``hivmc-a5`` (CANN) before memory planning and fails without it, so no
    A5 compile reaches ``hivmc`` here; the result is ``"error"`` with a
    message that says so (measured 2026-11-23 on ``examples/elementwise/add.py``).

    :param linalg_text: ``str``, the ``ttadapter`` output (MLIR).
    :param arch: ``str``, the SoC (:data:`A2_A3_ARCHS`, :data:`A5_ARCHS`).
    :param options: ``dict`` of the launch's options (:func:`option_flags`),
        or ``None`` for a launch that states none.
    :param memory_report: ``bool``; add ``--enable-memory-display`` and read
        the UB plan it writes (``memory_info_*.json``) into
        ``planned_ub_bytes``. (``--enable-print-memory-allocated-size``,
        which triton-ascend passes under ``ENABLE_PRINT_UB_BITS``, is an
        unknown option to ascendnpu-ir 1.2.0.)
    :param timeout: ``float`` seconds, or ``None`` for no limit.
    :return: :class:`BiShengIRResult`.
    :raises ValueError: ``arch`` is not a SoC BiShengIR knows.
    :raises BiShengIRNotInstalled: ``ascendnpu-ir`` is not installed.
    """

    command = compile_command(_SOURCE, "kernel", arch, options=options)

    if not memory_report:
        return _compile_until_it_does_not_crash(command, linalg_text, arch, timeout)

    reporting = command[:-2] + ["--enable-memory-display"] + command[-2:]
    reported = _compile_until_it_does_not_crash(
        reporting, linalg_text, arch, timeout, memory_report=True
    )

    if reported.outcome != "error":
        return reported

    # The launch's own command decides: see REPORT_FAILURES.
    launched = _compile_until_it_does_not_crash(command, linalg_text, arch, timeout)

    return dataclasses.replace(
        launched, report_error=reported.message.partition("\n")[0]
    )


def _compile_until_it_does_not_crash(
    command, linalg_text, arch, timeout, memory_report=False
):
    for crashes in range(CRASH_RUNS):
        result, crashed = _compile_once(
            command, linalg_text, arch, memory_report, timeout
        )

        if not crashed:
            return dataclasses.replace(result, crashes=crashes)

    return dataclasses.replace(result, crashes=CRASH_RUNS)


def _compile_once(command, linalg_text, arch, memory_report, timeout):
    # -> (BiShengIRResult, whether the compiler crashed without reaching hivmc)
    with tempfile.TemporaryDirectory(prefix="bishengir-") as directory:
        directory = pathlib.Path(directory)
        (directory / _SOURCE).write_text(linalg_text)
        start = time.perf_counter()

        try:
            completed = subprocess.run(
                command,
                cwd=directory,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            message = f"bishengir-compile did not finish within {timeout} s"
            seconds = time.perf_counter() - start

            return BiShengIRResult(
                "timeout", None, None, None, seconds, message, arch
            ), False

        seconds = time.perf_counter() - start
        planned = planned_ub_bytes(directory) if memory_report else None

    # The compiler names the input by its absolute path; the path of a
    # temporary directory only makes messages differ from run to run.
    output = (completed.stdout + completed.stderr).replace(f"{directory}/", "")
    result = parse_output(output, arch=arch, seconds=seconds, planned_ub_bytes=planned)

    return result, result.outcome == "error" and bool(_CRASH.search(output))


def compile_command(source, output, arch=DEFAULT_ARCH, *, options=None):
    """The ``bishengir-compile`` command line triton-ascend 3.2.0's ``npubin`` stage runs (see :func:`compile_linalg`).

    :param source: ``str``, the ``ttadapter`` output's file.
    :param output: ``str``, the output's file name, without extension.
    :param arch: ``str``, the SoC (:data:`A2_A3_ARCHS`, :data:`A5_ARCHS`).
    :param options: ``dict`` of the launch's options (:func:`option_flags`),
        or ``None``.
    :return: ``list`` of ``str``, ending with ``-o output``.
    :raises ValueError: ``arch`` is not a SoC BiShengIR knows.
    :raises BiShengIRNotInstalled: ``ascendnpu-ir`` is not installed.
    """

    flags = _A5_FLAGS if arch in A5_ARCHS else _A2_A3_FLAGS

    return [
        str(compiler_path(arch)),
        source,
        f"--target={arch}",
        *option_flags(options or {}, arch),
        *flags,
        "-o",
        output,
    ]


def parse_output(output, *, arch=DEFAULT_ARCH, seconds=0.0, planned_ub_bytes=None):
    """Turn ``bishengir-compile``'s stdout and stderr into a :class:`BiShengIRResult`.

    Success up to ``hivmc`` reads ``error: External hivmc run fails,
    returning module before running external compiler``; an overflow reads
    ``ub overflow, requires N bits while M bits available`` (both from
    docs/ascend.md, measured with ascendnpu-ir 1.2.0).

    :param output: ``str``, the compiler's combined output.
    :param arch: ``str``, the SoC it compiled for.
    :param seconds: ``float`` wall time of the compile.
    :param planned_ub_bytes: ``int`` or ``None``, see :class:`BiShengIRResult`.
    :return: :class:`BiShengIRResult`.
    """

    overflow = _UB_OVERFLOW.search(output)
    message = _message(output)

    if overflow:
        required, available = (int(bits) // 8 for bits in overflow.groups())

        return BiShengIRResult(
            "ub_overflow", required, available, planned_ub_bytes, seconds, message, arch
        )

    if _REACHED_HIVMC in output:
        return BiShengIRResult("hivmc", None, None, planned_ub_bytes, seconds, "", arch)

    if "Cannot find hivmc-a5" in output:
        message = (
            f"bishengir-compile-a5 (ascendnpu-ir {version()}) needs hivmc-a5 from "
            f"CANN before it plans memory, so {arch} (A5) cannot be checked on "
            f"a machine without CANN. {message}"
        ).strip()

    return BiShengIRResult(
        "error", None, None, planned_ub_bytes, seconds, message or output.strip(), arch
    )


def _message(output):
    lines = [
        line.strip()
        for line in output.splitlines()
        if ("error" in line.lower())
        and not _NOISE.search(line)
        and _REACHED_HIVMC not in line
    ]
    text = "\n".join(lines)

    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + " [...]"


def planned_ub_bytes(directory):
    """The UB bytes of the plan that ``--enable-memory-display`` wrote into ``directory``.

    ascendnpu-ir 1.2.0 writes ``memory_info_aiv.json`` (vector core;
    ``_aic`` for the cube core) into the working directory: per buffer its
    ``extent`` in bits and one byte ``offset`` per multi-buffer copy
    (measured on ``examples/elementwise/add.py``: ``64x8xf32`` buffers,
    ``extent`` 16384, offsets ``[0, 4096]`` and ``[2048, 6144]``).

    :param directory: ``pathlib.Path``.
    :return: ``int``, the end of the highest UB buffer (0 where the plan has
        none), or ``None`` where there is no UB plan.
    """

    records = [
        record
        for report in sorted(directory.glob("memory_info_*.json"))
        for record in json.loads(report.read_text()).get("Record", ())
        if record.get("scope") == "ub"
    ]

    if not records:
        return None

    return max(
        (
            offset + buffer["extent"] // 8
            for record in records
            for buffer in record.get("memory_info_array", ())
            for offset in buffer.get("offset", ())
        ),
        default=0,
    )
