"""triton-ascend's Linalg (the ``ttadapter`` output) lowered to a shared object for the CPU.

The kernel's ``func.func`` is kept as triton-ascend wrote it. Its parameters
are those of the launch (triton-ascend 3.2.0, ``triton/backends/ascend/driver.py``,
the packed ``args`` of ``_launch``): the sync-block lock and the workspace
(``memref<?xi8>``), each non-constant kernel argument (a pointer becomes a
1-D ``memref`` addressed from its base with ``memref.reinterpret_cast``), then
six ``i32``: the grid (``num_programs`` of axes 0, 1, 2) and the program id
(``program_id`` of axes 0, 1, 2). A driver function is appended that calls
the kernel once per program of the grid, axis 0 fastest; a persistent loop
inside the kernel (one program doing several tiles) runs as written.

Before lowering, the functions the Linalg only declares get CPU bodies
(:mod:`.library`), and operations with no meaning for one program on a CPU
are dropped (``annotation.mark``, ``gpu.barrier``). Lowering, with
``bishengir-opt`` (its LLVM is 19.1.7):

1. ``--snapshot-op-locations``: each operation's location becomes its line in
   a copy of the module kept beside the shared object, so that a faulting
   instruction maps back to the operation (:mod:`.faults`);
2. ``--convert-elementwise-to-linalg --eliminate-empty-tensors
   --empty-tensor-to-alloc-tensor --one-shot-bufferize`` (across function
   boundaries, for the library functions on tensors)
   ``--buffer-deallocation-pipeline --convert-bufferization-to-memref``:
   tensors become buffers, freed where they die (a persistent loop would
   otherwise allocate every tile anew);
3. each ``memref.copy`` is written as ``linalg.copy`` (text), so that it
   lowers to loops whose loads and stores carry the copy's location instead
   of a call into MLIR's C runner library;
4. ``--convert-linalg-to-loops`` and the upstream conversions to the LLVM
   dialect (``triton-ascend``'s own ``linalg_to_llir`` list of its CPU
   target, without ``--convert-linalg-to-affine-loops``, which refuses a loop
   bound defined inside an ``scf.for``; with ``--convert-math-to-funcs`` and
   ``--convert-math-to-libm`` for the math operations LLVM has no
   intrinsic for), then ``--ensure-debug-info-scope-on-llvm-func``;

then ``mlir-translate --mlir-to-llvmir``, ``llc -O2 -filetype=obj
-relocation-model=pic`` (for the default target's generic CPU, not the build machine's)
and ``cc -shared``. Each shared object is cached by
the sha256 of everything it is made from (:func:`lower`).
"""

import dataclasses
import hashlib
import json
import os
import pathlib
import re
import subprocess
import tempfile
import time

from ninetoothed_ascend import cache as cache_module
from ninetoothed_ascend.check.lowered import library as library_module
from ninetoothed_ascend.check.lowered import tools as tools_module

#: Bump when the driver, the passes or the files kept change.
FORMAT = 1

#: The C-interface name of the driver (``llvm.emit_c_interface``).
ENTRY = "_mlir_ciface_ninetoothed_lowered_launch"

#: Number of trailing ``i32`` parameters triton-ascend appends: grid, then program id.
PROGRAM_PARAMETERS = 6

#: Number of leading parameters triton-ascend prepends: sync-block lock, workspace.
LEADING_PARAMETERS = 2

_BUFFERIZE = (
    "--convert-elementwise-to-linalg",
    "--eliminate-empty-tensors",
    "--empty-tensor-to-alloc-tensor",
    "--one-shot-bufferize=allow-return-allocs-from-loops=true bufferize-function-boundaries=true "
    "function-boundary-type-conversion=identity-layout-map",
    "--buffer-deallocation-pipeline",
    "--convert-bufferization-to-memref",
)

_TO_LLVM = (
    "--convert-linalg-to-loops",
    "--convert-math-to-funcs",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--convert-cf-to-llvm",
    "--convert-arith-to-llvm",
    "--convert-math-to-llvm",
    "--convert-math-to-libm",
    "--convert-complex-to-llvm",
    "--convert-vector-to-llvm",
    "--convert-index-to-llvm",
    "--memref-expand",
    "--expand-strided-metadata",
    "--finalize-memref-to-llvm",
    "--convert-func-to-llvm",
    "--lower-affine",
    "--convert-arith-to-llvm",
    "--reconcile-unrealized-casts",
    "--ensure-debug-info-scope-on-llvm-func",
)

# Operations that carry no meaning for one program run alone on a CPU:
# BiShengIR's hints (``annotation.mark``) and the barrier between the
# threads of a program (``gpu.barrier``, from ``tl.debug_barrier``; a program
# here is one thread, its stores done before its next load). Neither has a
# result or a lowering to the LLVM dialect.
_HINTS = re.compile(r"^\s*(?:annotation\.mark|gpu\.barrier)\b.*\n", re.MULTILINE)

_COPY = re.compile(
    r"^(?P<indent>\s*)memref\.copy (?P<source>%[\w.$-]+), (?P<target>%[\w.$-]+) : "
    r"(?P<source_type>.+?) to (?P<target_type>memref<.+?>)(?P<rest>(?: loc\(.*\))?)$",
    re.MULTILINE,
)


class LoweringError(RuntimeError):
    """A step of the lowering failed.

    :param step: ``str``, the program or step (``"bishengir-opt"``, ``"llc"``, ...).
    :param detail: ``str``, its message.
    """

    def __init__(self, step, detail):
        super().__init__(f"[{step}] {detail}")
        self.step = step
        self.detail = detail


@dataclasses.dataclass(frozen=True)
class Signature:
    """The kernel function of a ``ttadapter`` output.

    :param name: ``str``, the MLIR function name (the Triton kernel's name).
    :param types: ``tuple`` of ``str``, the MLIR type of every parameter, in order.
    """

    name: str
    types: tuple

    @property
    def arguments(self):
        """The types of the kernel's own arguments (``tuple`` of ``str``): those between the two leading memrefs and the six program parameters."""

        return self.types[LEADING_PARAMETERS:-PROGRAM_PARAMETERS]


@dataclasses.dataclass(frozen=True)
class Lowered:
    """A kernel lowered to a shared object.

    :param signature: :class:`Signature`.
    :param library: ``pathlib.Path`` of the shared object; its driver is
        :data:`ENTRY` (``void(memref descriptor *..., scalars..., int32 gx,
        int32 gy, int32 gz)``).
    :param snapshot: ``pathlib.Path`` of the module text whose line numbers
        the shared object's debug information names.
    :param seconds: ``dict`` step -> seconds; empty when it came from the cache.
    :param cached: ``bool``, whether it came from the cache.
    """

    signature: Signature
    library: pathlib.Path
    snapshot: pathlib.Path
    seconds: dict
    cached: bool


def parse_signature(linalg):
    """Find the kernel function of a ``ttadapter`` output (the ``func.func`` with ``global_kernel``).

    :param linalg: ``str``, MLIR text.
    :return: :class:`Signature`.
    :raises LoweringError: no such function, or its parameters do not have
        the layout triton-ascend 3.2.0 gives them.
    """

    for match in re.finditer(r"func\.func @([\w$.]+)\(", linalg):
        start = match.end()
        end = _closing(linalg, start - 1)
        # The printer puts a function's attributes on the line of its parameters.
        if "global_kernel" not in linalg[end : linalg.find("\n", end)]:
            continue

        types = tuple(
            _parameter_type(parameter)
            for parameter in _split_top_level(linalg[start:end])
            if parameter.strip()
        )

        if (
            len(types) < LEADING_PARAMETERS + PROGRAM_PARAMETERS
            or types[:LEADING_PARAMETERS] != ("memref<?xi8>",) * LEADING_PARAMETERS
            or types[-PROGRAM_PARAMETERS:] != ("i32",) * PROGRAM_PARAMETERS
        ):
            raise LoweringError(
                "signature",
                f"kernel {match.group(1)} has parameters {types}; expected two "
                "memref<?xi8>, the kernel's arguments and six i32 (grid, program id)",
            )

        return Signature(match.group(1), types)

    raise LoweringError("signature", "no func.func with global_kernel in the Linalg")


def driver(signature):
    """The MLIR of the driver: loops over the grid and calls the kernel per program.

    :param signature: :class:`Signature`.
    :return: ``str``, two ``func.func`` (the program recorder of
        :file:`runtime.c`, declared, and the driver).
    """

    passed = signature.types[:-PROGRAM_PARAMETERS]
    parameters = ", ".join(f"%a{index}: {kind}" for index, kind in enumerate(passed))
    arguments = ", ".join(f"%a{index}" for index in range(len(passed)))
    call_types = ", ".join(signature.types)

    return f"""
  func.func private @ntl_program(i32, i32, i32)
  func.func @ninetoothed_lowered_launch({parameters}, %gx: i32, %gy: i32, %gz: i32) attributes {{llvm.emit_c_interface}} {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %nx = arith.index_cast %gx : i32 to index
    %ny = arith.index_cast %gy : i32 to index
    %nz = arith.index_cast %gz : i32 to index
    scf.for %z = %c0 to %nz step %c1 {{
      scf.for %y = %c0 to %ny step %c1 {{
        scf.for %x = %c0 to %nx step %c1 {{
          %x32 = arith.index_cast %x : index to i32
          %y32 = arith.index_cast %y : index to i32
          %z32 = arith.index_cast %z : index to i32
          func.call @ntl_program(%x32, %y32, %z32) : (i32, i32, i32) -> ()
          func.call @{signature.name}({arguments}, %gx, %gy, %gz, %x32, %y32, %z32) : ({call_types}) -> ()
        }}
      }}
    }}
    return
  }}
"""


def rewrite_copies(text):
    """Write each ``memref.copy`` of bufferized MLIR text as the equivalent ``linalg.copy``.

    :param text: ``str``, MLIR in the custom assembly format (with or
        without trailing ``loc(...)``).
    :return: ``str``.
    """

    return _COPY.sub(
        lambda match: (
            f"{match['indent']}linalg.copy ins({match['source']} : {match['source_type']}) "
            f"outs({match['target']} : {match['target_type']}){match['rest']}"
        ),
        text,
    )


def lower(linalg, directory, tools=None, *, timeout=None):
    """Lower a ``ttadapter`` output to a shared object, or find it in ``directory``.

    The cache key is the sha256 of :data:`FORMAT`, the Linalg text, the
    passes and the programs' versions. A cached shared object is used only
    if its directory and files pass :func:`ninetoothed_ascend.cache.trust_problem`
    and its bytes hash to what its record says.

    :param linalg: ``str``, the ``ttadapter`` output of one kernel.
    :param directory: ``pathlib.Path`` of the cache directory (created if missing).
    :param tools: :class:`~.tools.Tools`, or ``None`` to find them.
    :param timeout: ``float`` seconds per program run, or ``None``.
    :return: :class:`Lowered`.
    :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.
    :raises LoweringError: a step failed (its program and message).
    """

    tools = tools or tools_module.find()
    signature = parse_signature(linalg)
    key = hashlib.sha256(
        json.dumps(
            [FORMAT, linalg, _BUFFERIZE, _TO_LLVM, tools.versions()], sort_keys=True
        ).encode()
    ).hexdigest()
    directory = pathlib.Path(directory)
    library = directory / f"{key}.so"
    snapshot = directory / f"{key}.mlir"
    record = directory / f"{key}.json"
    found = _cached(directory, library, snapshot, record)

    if found:
        return Lowered(signature, library, snapshot, {}, True)

    seconds = {}

    with tempfile.TemporaryDirectory(prefix="ninetoothed-lowered-") as temporary:
        temporary = pathlib.Path(temporary)
        source = temporary / "kernel.mlir"
        source.write_text(_with_driver(_defined(_HINTS.sub("", linalg)), signature))
        taken = temporary / "snapshot.mlir"
        bufferized = temporary / "bufferized.mlir"
        _run(
            "bishengir-opt",
            [
                tools.bishengir_opt,
                source,
                f"--snapshot-op-locations=filename={taken}",
                *_BUFFERIZE,
                "--mlir-print-debuginfo",
                "-o",
                bufferized,
            ],
            seconds,
            "bufferize",
            timeout,
        )
        looped = temporary / "copies.mlir"
        looped.write_text(rewrite_copies(_HINTS.sub("", bufferized.read_text())))
        dialect = temporary / "llvm.mlir"
        _run(
            "bishengir-opt",
            [
                tools.bishengir_opt,
                looped,
                *_TO_LLVM,
                "--mlir-print-debuginfo",
                "-o",
                dialect,
            ],
            seconds,
            "to-llvm",
            timeout,
        )
        ir = temporary / "kernel.ll"
        _run(
            "mlir-translate",
            [tools.mlir_translate, "--mlir-to-llvmir", dialect, "-o", ir],
            seconds,
            "translate",
            timeout,
        )
        obj = temporary / "kernel.o"
        _run(
            "llc",
            [tools.llc, "-O2", "-filetype=obj", "-relocation-model=pic", ir, "-o", obj],
            seconds,
            "llc",
            timeout,
        )
        shared = temporary / "kernel.so"
        _run(
            "cc",
            [tools.cc, "-shared", obj, "-o", shared, "-lm"],
            seconds,
            "link",
            timeout,
        )
        _store(
            directory, library, snapshot, record, shared.read_bytes(), taken.read_text()
        )

    return Lowered(signature, library, snapshot, seconds, False)


def runtime_library(directory, tools=None, *, timeout=None):
    """The fault handler and program recorder (:file:`runtime.c`) compiled to a shared object, or found in ``directory``.

    :param directory: ``pathlib.Path`` of the cache directory.
    :param tools: :class:`~.tools.Tools`, or ``None`` to find them.
    :return: ``pathlib.Path``.
    :raises LoweringError: the C compiler failed.
    """

    tools = tools or tools_module.find()
    source = (pathlib.Path(__file__).parent / "runtime.c").read_text()
    key = hashlib.sha256(
        json.dumps([FORMAT, source, tools.versions()["cc"]]).encode()
    ).hexdigest()
    directory = pathlib.Path(directory)
    library = directory / f"runtime-{key}.so"
    record = directory / f"runtime-{key}.json"

    if _cached(directory, library, None, record):
        return library

    with tempfile.TemporaryDirectory(prefix="ninetoothed-lowered-") as temporary:
        temporary = pathlib.Path(temporary)
        (temporary / "runtime.c").write_text(source)
        _run(
            "cc",
            [
                tools.cc,
                "-O2",
                "-fPIC",
                "-shared",
                temporary / "runtime.c",
                "-o",
                temporary / "runtime.so",
            ],
            {},
            "cc",
            timeout,
        )
        _store(
            directory,
            library,
            None,
            record,
            (temporary / "runtime.so").read_bytes(),
            None,
        )

    return library


def _defined(linalg):
    try:
        return library_module.define(linalg)
    except library_module.NoCpuBody as error:
        raise LoweringError("library", str(error)) from error


def _with_driver(linalg, signature):
    end = linalg.rstrip().rfind("}")

    if end < 0:
        raise LoweringError("signature", "the Linalg has no module")

    return linalg[:end] + driver(signature) + linalg[end:]


def _run(step, command, seconds, label, timeout):
    start = time.perf_counter()

    try:
        completed = subprocess.run(
            [str(part) for part in command],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise LoweringError(step, f"timed out after {timeout} s") from error

    seconds[label] = time.perf_counter() - start

    if completed.returncode != 0:
        message = (completed.stderr or completed.stdout).strip()
        raise LoweringError(
            step, f"exited with {completed.returncode}: {message[:4000]}"
        )


def _digest(data):
    return hashlib.sha256(data).hexdigest()


def _cached(directory, library, snapshot, record):
    paths = [path for path in (library, snapshot, record) if path is not None]

    if not all(path.is_file() for path in paths):
        return False

    if any(
        cache_module.trust_problem(path) is not None for path in (directory, *paths)
    ):
        return False

    try:
        stored = json.loads(record.read_text())
    except ValueError:
        return False

    if stored.get("library") != _digest(library.read_bytes()):
        return False

    return snapshot is None or stored.get("snapshot") == _digest(snapshot.read_bytes())


def _store(directory, library, snapshot, record, data, snapshot_text):
    cache_module.make_directory(directory)
    cache_module.write_atomically(library, data, durable=False)
    os.chmod(library, 0o700)
    entry = {"library": _digest(data)}

    if snapshot is not None:
        encoded = snapshot_text.encode()
        cache_module.write_atomically(snapshot, encoded, durable=False)
        entry["snapshot"] = _digest(encoded)

    cache_module.write_atomically(record, json.dumps(entry).encode(), durable=False)


def _closing(text, opening):
    # The index of the bracket that closes ``text[opening]``.
    pairs = {"(": ")", "<": ">", "[": "]", "{": "}"}
    stack = []

    for index in range(opening, len(text)):
        character = text[index]

        if character == ">" and text[index - 1] == "-":
            continue

        if character in pairs:
            stack.append(pairs[character])
        elif stack and character == stack[-1]:
            stack.pop()

            if not stack:
                return index

    raise LoweringError("signature", "unbalanced brackets in the kernel's signature")


def _split_top_level(text):
    parts, depth, start = [], 0, 0

    for index, character in enumerate(text):
        if character in "(<[{":
            depth += 1
        elif character in ")>]}" and not (character == ">" and text[index - 1] == "-"):
            depth -= 1
        elif character == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1

    parts.append(text[start:])

    return parts


def _parameter_type(parameter):
    # ``%arg2: memref<?xf32> {tt.divisibility = 16 : i32}`` -> ``memref<?xf32>``
    _, _, rest = parameter.partition(":")
    rest = rest.strip()
    attributes = rest.find(" {")

    return (rest[:attributes] if attributes >= 0 else rest).strip()
