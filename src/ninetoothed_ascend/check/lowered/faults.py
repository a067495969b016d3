"""A fault of a lowered kernel, named: which operation, which tensor, how far outside it, which program.

:file:`runtime.c`'s handler reports the faulting address, the instruction,
whether the access wrote (x86-64's page-fault error code) and the program.
The tensor comes from the address: the region whose data is nearest to it
(a region lies between guards of :data:`~.execution.GUARD_BYTES`, so an
access up to that far outside a tensor lands in its own guard). The
operation comes from the instruction: the shared object's debug information
(``llvm-symbolizer``) gives the line of the lowered module
(:attr:`~.lowering.Lowered.snapshot`) whose operation it was compiled from;
the memref it reads or writes is traced through view operations
(``memref.reinterpret_cast``, ``memref.subview``, ...) back to a kernel
parameter.
"""

import re
import signal
import struct
import subprocess

#: The child's exit status after a reported fault (:file:`runtime.c`).
FAULT_EXIT = 86

_REPORT = struct.Struct("<8q")

_VIEWS = {
    "memref.reinterpret_cast",
    "memref.subview",
    "memref.cast",
    "memref.collapse_shape",
    "memref.expand_shape",
    "memref.memory_space_cast",
    "memref.transpose",
    "memref.view",
}

# A loop-carried value (``iter_args(%a = %init)``) traced like a view of its initial value.
_CARRIED = "iter_args"

_DEFINITION = re.compile(
    r"^\s*(?P<results>%[\w$.-]+(?::\d+)?(?:\s*,\s*%[\w$.-]+)*)\s*=\s*(?P<op>[\w.]+)\s*(?P<rest>.*)$"
)
_OPERATION = re.compile(r"^\s*(?P<op>[a-z_]+\.[\w.]+)\s*(?P<rest>.*)$")
_VALUE = re.compile(r"%[\w$.-]+")
_LOCATION = re.compile(r"\s*loc\(.*\)\s*$")


class Fault(RuntimeError):
    """A lowered kernel accessed memory outside every tensor (or divided by zero, or hit another fatal signal).

    :param message: ``str``, one line naming the kernel, the operation, the tensor and the program.
    :param kernel: ``str``, the kernel's name.
    :param signal_name: ``str`` (``"SIGSEGV"``, ``"SIGFPE"``, ...).
    :param access: ``"read"``, ``"write"`` or ``None`` (unknown).
    :param tensor: ``str``, the label of the nearest tensor, or ``None``.
    :param outside: ``int`` bytes from the tensor: negative before its first
        byte, positive past its last, ``None`` where no tensor is named.
    :param operation: ``str``, the operation's line of the lowered module, or ``None``.
    :param line: ``int`` line of :attr:`~.lowering.Lowered.snapshot`, or ``None``.
    :param program: ``tuple`` of 3 ``int``, the program id.
    :param placement: ``str``, one of :data:`~.execution.PLACEMENTS`.
    :param summary: ``str``, the message without the kernel and the placement.

    :attr:`others` holds the faults of the other placements (:func:`combine`).
    """

    def __init__(
        self,
        message,
        *,
        kernel,
        signal_name,
        access,
        tensor,
        outside,
        operation,
        line,
        program,
        placement,
        summary=None,
    ):
        super().__init__(message)
        self.summary = summary or message
        self.others = ()
        self.kernel = kernel
        self.signal_name = signal_name
        self.access = access
        self.tensor = tensor
        self.outside = outside
        self.operation = operation
        self.line = line
        self.program = program
        self.placement = placement


def decode(
    report,
    messages,
    lowered,
    starts,
    sizes,
    labels,
    *,
    parameters,
    kernel_name,
    placement,
    guard,
    symbolizer=None,
):
    """Turn the handler's report into a :class:`Fault`.

    :param report: ``bytes`` the handler wrote (empty if it could not).
    :param messages: ``list`` of the child's JSON lines (``dict``).
    :param lowered: :class:`~.lowering.Lowered`.
    :param starts: ``list`` of ``int``, the offset of each region's data in its pages.
    :param sizes: ``list`` of ``int``, bytes of each region's data.
    :param labels: ``list`` of ``str``, each region's label.
    :param parameters: ``dict`` MLIR parameter name (``"%arg2"``) -> the label of its argument.
    :param kernel_name: ``str``.
    :param placement: ``str``, the placement that ran.
    :param guard: ``int`` bytes of guard around each region: an address
        farther from every tensor is named as outside all of them.
    :param symbolizer: ``pathlib.Path`` of ``llvm-symbolizer``, or ``None`` to find it.
    :return: :class:`Fault`.
    """

    if len(report) < _REPORT.size:
        return Fault(
            f"kernel {kernel_name}: the lowered kernel faulted, and its report was lost",
            kernel=kernel_name,
            signal_name=None,
            access=None,
            tensor=None,
            outside=None,
            operation=None,
            line=None,
            program=None,
            placement=placement,
        )

    signo, _code, address, instruction, write, *program = _REPORT.unpack(
        report[: _REPORT.size]
    )
    program = tuple(program)
    base = next((message["base"] for message in messages if "base" in message), None)
    bases = next((message["bases"] for message in messages if "bases" in message), None)
    access = {1: "write", 0: "read"}.get(write)
    signal_name = _signal_name(signo)
    line, operation, traced = None, None, {}

    if base is not None:
        line = _line(lowered, instruction - base, symbolizer)

    if line is not None:
        operation, traced = operation_at(lowered.snapshot, line)

    tensor, outside, nearest = None, None, None

    if bases is not None and signal_name in ("SIGSEGV", "SIGBUS"):
        nearest = _nearest(address, bases, starts, sizes, labels)

        if nearest is not None and abs(nearest[1]) <= guard:
            tensor, outside = nearest

    parameter = _pick(traced, access) if traced else None
    kind = access or (parameter[1] if parameter is not None else None) or "access"

    if tensor is not None:
        what = (
            f"{kind} {_bytes(-outside)} before the first byte of {tensor}"
            if outside < 0
            else f"{kind} {_bytes(outside)} past the last byte of {tensor}"
        )
    elif signal_name == "SIGFPE":
        what = "arithmetic fault (integer division by zero or overflow)"
    elif nearest is not None:
        what = (
            f"{kind} outside every tensor, {_bytes(abs(nearest[1]))} from {nearest[0]}"
        )
    else:
        what = f"{kind} at an address outside every tensor"

    if parameter is not None and parameters.get(parameter[0]) not in (None, tensor):
        what += f" (the operation's memref is {parameters[parameter[0]]})"

    operation = _LOCATION.sub("", operation).strip() if operation else None
    where = (
        f"line {line} of the lowered module {lowered.snapshot}: {operation[:200]}"
        if operation
        else "an instruction outside the kernel's own code"
    )
    summary = f"{what}, program {program}, at {where}"
    message = (
        f"kernel {kernel_name}: {signal_name} in the lowered kernel "
        f"({placement}-fenced placement): {summary}"
    )

    return Fault(
        message,
        kernel=kernel_name,
        signal_name=signal_name,
        access=access,
        tensor=tensor,
        outside=outside,
        operation=operation,
        line=line,
        program=program,
        placement=placement,
        summary=summary,
    )


def _bytes(count):
    return f"{count} byte{'' if count == 1 else 's'}"


def _signal_name(signo):
    try:
        return signal.Signals(signo).name
    except ValueError:
        return f"signal {signo}"


def _nearest(address, bases, starts, sizes, labels):
    best = None

    for base, start, size, label in zip(bases, starts, sizes, labels):
        first, end = base + start, base + start + size

        if address < first:
            outside = address - first
        elif address >= end:
            outside = address - end + 1
        else:
            outside = 0

        if best is None or abs(outside) < abs(best[1]):
            best = (label, outside)

    return best


def _line(lowered, offset, symbolizer):
    if symbolizer is None:
        from ninetoothed_ascend.check.lowered import tools

        try:
            symbolizer = tools.find().llvm_symbolizer
        except tools.ToolsMissing:
            return None

    completed = subprocess.run(
        [str(symbolizer), f"--obj={lowered.library}", hex(offset)],
        capture_output=True,
        text=True,
        check=False,
    )
    match = re.search(r":(\d+):\d+\s*$", completed.stdout, re.MULTILINE)

    return int(match[1]) if match and int(match[1]) > 0 else None


def operation_at(snapshot, line):
    """The operation on ``line`` of a lowered module, and the kernel parameters its memref operands are views of.

    An operand is traced through view operations (:data:`_VIEWS`) and
    loop-carried values to a parameter of the enclosing function; a name is
    resolved to the definition its own region sees (sibling regions reuse
    names).

    :param snapshot: ``pathlib.Path`` of the module text (:attr:`~.lowering.Lowered.snapshot`).
    :param line: ``int``, 1-based.
    :return: ``(text, traced)``: the line (``str``, or ``None`` past the
        end), and ``dict`` parameter (``"%arg2"``) -> ``"read"``,
        ``"write"`` or ``None`` (unknown), the access the operation makes
        through it.
    """

    lines = snapshot.read_text().splitlines()

    if not 0 < line <= len(lines):
        return None, {}

    text = lines[line - 1]
    match = _DEFINITION.match(text) or _OPERATION.match(text)

    if match is None:
        return text, {}

    op, rest = match["op"], match["rest"]
    operands = _VALUE.findall(rest.split(" : ")[0] if " : " in rest else rest)
    traced = {}

    for position, operand in enumerate(operands):
        parameter = _trace(operand, lines, line - 1)

        if parameter is not None:
            traced[parameter] = _direction(op, rest, operand, position)

    return text, traced


def _trace(value, lines, index):
    # Follow ``value`` through view operations to a parameter of the
    # enclosing function (``%argN``); ``None`` if it comes from anything else.
    while True:
        found = _definition(lines, value, index)

        if found is None:
            return None

        index, definition = found

        if definition is None:
            return value

        op, rest = definition
        sources = _VALUE.findall(rest)

        if op not in _VIEWS and op != _CARRIED or not sources:
            return None

        value = sources[0]


def _definition(lines, value, index):
    # The definition of ``value`` visible from line ``index``: the nearest
    # earlier line at the same or an enclosing nesting depth (sibling regions
    # reuse names). ``(line, None)`` when it is a parameter of the enclosing
    # function, ``None`` when it is not found.
    limit = _indent(lines[index])

    for earlier in range(index - 1, -1, -1):
        text = lines[earlier]

        if not text.strip():
            continue

        indent = _indent(text)

        if indent > limit:
            continue

        limit = min(limit, indent)

        if "func.func @" in text:
            return (earlier, None) if f"{value}:" in text else None

        # A loop-carried memref (a pointer advanced per iteration) starts as its init value.
        carried = re.search(rf"iter_args\([^)]*?{re.escape(value)} = (%[\w$.-]+)", text)

        if carried:
            return earlier, (_CARRIED, carried[1])

        match = _DEFINITION.match(text)

        if match and value in _VALUE.findall(match["results"]):
            return earlier, (match["op"], match["rest"])

    return None


def _indent(text):
    return len(text) - len(text.lstrip())


def _direction(op, rest, operand, position):
    if op == "memref.load":
        return "read"

    if op == "memref.store":
        return "write" if position == 1 else None

    if op == "memref.copy":
        return "read" if position == 0 else "write"

    if op == "bufferization.materialize_in_destination":
        return "write" if " writable " in rest and position == 1 else None

    if op == "bufferization.to_tensor":
        return "read"

    if op.startswith("linalg."):
        outs = rest.find("outs(")

        if outs >= 0:
            return "write" if rest.find(operand, outs) >= 0 else "read"

    return None


def _pick(traced, access):
    if len(traced) == 1:
        return next(iter(traced.items()))

    for parameter, direction in traced.items():
        if direction == access:
            return parameter, direction

    return next(iter(traced.items()))


def combine(faults):
    """One :class:`Fault` for the faults of several placements: the first, its message extended by the others'.

    :param faults: non-empty ``list`` of :class:`Fault`.
    :return: :class:`Fault` (the first, with ``others`` set to the rest).
    """

    first, *others = faults
    first.others = tuple(others)

    if others:
        first.args = (
            first.args[0]
            + "".join(
                f"; {other.placement}-fenced placement: {other.summary}"
                for other in others
            ),
        )

    return first
