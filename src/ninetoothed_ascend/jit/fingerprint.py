"""Cache keys: a stable digest of everything that decides a kernel's generated code.

The key is computed *before* any code generation, from the kernel's inputs:
the arrangement and application (source, defaults, closures, and every global
they or the functions they call refer to), the tensors and their options, the
``make``/``jit`` options, the device properties NineToothed reads, NineToothed's
naming counters, and the versions of NineToothed, Triton (or triton-ascend),
Python and this package's own source. Change any of these and the key changes.
"""

import enum
import functools
import hashlib
import inspect
import linecache
import os
import types
import uuid

import ninetoothed
import triton

from ninetoothed_ascend.compiler.syntax import structure
from ninetoothed_ascend.compiler.target import Target
from ninetoothed_ascend.jit.environment import environment
from ninetoothed_ascend.jit.ninetoothed_adapter import symbol_expression, tensor_history

#: Objects nothing describes (no attributes, a ``repr`` with an address),
#: each with a token of its own: held, so that their ``id`` is not reused.
_OPAQUE = {}

#: Packages whose objects are described by name only: their behaviour is
#: covered by the versions in :func:`environment`.
_VERSIONED_PACKAGES = ("ninetoothed", "triton", "torch", "numpy", "sympy", "builtins")


def kernel_key(*parts):
    """Return the sha256 hex digest identifying a kernel.

    :param parts: objects to describe (functions, tensors, options, ...).
    :return: ``str``, 64 hexadecimal digits.
    """

    return environment_key(definition_digest(*parts))


def definition_digest(*parts, memos=None):
    """Return the sha256 hex digest of the kernel's definition alone, without :func:`environment`.

    A manifest (``ninetoothed-ascend record``) stores this digest, so that
    ``warm`` can compute the key of the same kernel in another environment.

    :param parts: as :func:`kernel_key`.
    :param memos: :class:`Memos` that keeps the functions' source texts
        between processes (:func:`function_source`), or ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    description = repr(_Describer(memos).describe(parts))

    return hashlib.sha256(description.encode("utf-8")).hexdigest()


def environment_key(digest, memos=None):
    """Return the cache key of a kernel whose :func:`definition_digest` is ``digest``, in this environment.

    :param digest: ``str``, from :func:`definition_digest`.
    :param memos: :class:`Memos` that may hold :func:`environment`'s parts
        from an earlier process, or ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    # The NPU variant is generated for one target (SoC, triton-ascend
    # version), which the environment may configure; the other variants
    # depend on no more than environment() holds.
    description = repr((environment(memos), Target.from_environment("npu"), digest))

    return hashlib.sha256(description.encode("utf-8")).hexdigest()


def environment_digest(memos=None):
    """Return the sha256 hex digest of what :func:`environment_key` adds to a definition digest: :func:`environment` and the NPU target.

    A cache entry records it, so that ``clear --stale`` can tell which
    entries no installation reaches any more.

    :param memos: as :func:`environment_key`.
    :return: ``str``, 64 hexadecimal digits.
    """

    description = repr((environment(memos), Target.from_environment("npu")))

    return hashlib.sha256(description.encode("utf-8")).hexdigest()


class _Describer:
    """Turns objects into nested tuples of strings whose ``repr`` is stable across processes."""

    def __init__(self, memos=None):
        self._memos = memos
        self._functions_in_progress = set()
        self._objects_in_progress = set()

    def describe(self, obj):
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
            return (type(obj).__name__, repr(obj))

        if isinstance(obj, (tuple, list)):
            return (type(obj).__name__, tuple(self.describe(item) for item in obj))

        if isinstance(obj, dict):
            items = (
                (self.describe(key), self.describe(value)) for key, value in obj.items()
            )

            return ("dict", tuple(sorted(items, key=repr)))

        if isinstance(obj, (set, frozenset)):
            return (
                "set",
                tuple(sorted((self.describe(item) for item in obj), key=repr)),
            )

        if isinstance(obj, ninetoothed.Tensor):
            return self._describe_tensor(obj)

        if isinstance(obj, ninetoothed.Symbol):
            return self._describe_symbol(obj)

        if isinstance(obj, types.ModuleType):
            return self._describe_module(obj, ())

        if isinstance(obj, enum.Enum):
            return ("enum", type(obj).__qualname__, obj.name)

        if isinstance(obj, triton.runtime.JITFunction):
            return ("triton.jit", self._describe_function(obj.fn))

        if isinstance(obj, functools.partial):
            return (
                "partial",
                self.describe(obj.func),
                self.describe(obj.args),
                self.describe(obj.keywords),
            )

        if isinstance(obj, types.MethodType):
            return ("method", self.describe(obj.__func__), self.describe(obj.__self__))

        if isinstance(obj, types.FunctionType):
            return self._describe_function(obj)

        if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
            return ("named", getattr(obj, "__module__", ""), obj.__qualname__)

        return self._describe_object(obj)

    def _describe_object(self, obj):
        kind = ("object", type(obj).__module__, type(obj).__qualname__)
        attributes = getattr(obj, "__dict__", None)

        if attributes:
            if id(obj) in self._objects_in_progress:
                return ("recursive", *kind)

            self._objects_in_progress.add(id(obj))

            try:
                return (*kind, self.describe(dict(attributes)))
            finally:
                self._objects_in_progress.discard(id(obj))

        text = repr(obj)

        # A default ``repr`` holds a memory address that differs in every
        # process; an object with nothing else to describe it by could be
        # anything, so it shares its key with no other object.
        if " at 0x" in text:
            held, token = _OPAQUE.setdefault(id(obj), (obj, uuid.uuid4().hex))

            return ("opaque", *kind, token)

        return (*kind, text)

    def _describe_module(self, module, names):
        """A module by name, with the attributes among ``names`` that a function reads through it.

        NineToothed inlines what an application reaches through a module
        global (``helpers.scale(x)``), so those attributes decide the
        generated code as much as the function's own globals do. Installed
        packages are described by name: their versions are in the key.
        """

        if module.__name__.split(".")[0] in _VERSIONED_PACKAGES or not names:
            return ("module", module.__name__)

        if id(module) in self._objects_in_progress:
            return ("recursive module", module.__name__)

        self._objects_in_progress.add(id(module))

        try:
            attributes = tuple(
                (
                    name,
                    self._describe_module(value, names)
                    if isinstance(value, types.ModuleType)
                    else self.describe(value),
                )
                for name in sorted(names)
                if hasattr(module, name)
                for value in (getattr(module, name),)
            )
        finally:
            self._objects_in_progress.discard(id(module))

        return ("module", module.__name__, attributes)

    def _describe_tensor(self, tensor):
        source = None if tensor.source is tensor else self.describe(tensor.source)
        history = tuple(
            (func.__qualname__, self.describe(args), self.describe(kwargs))
            for func, args, kwargs in tensor_history(tensor)
        )

        return (
            "tensor",
            tensor.name,
            self.describe(tuple(tensor.shape)),
            self.describe(tensor.dtype),
            self.describe(tuple(tensor.target_dims)),
            tensor.jagged_dim,
            self.describe(tensor.other),
            self.describe(tensor.constexpr),
            self.describe(tensor.value),
            source,
            history,
        )

    def _describe_symbol(self, symbol):
        # The expression's fields rather than its text, which ast.unparse
        # writes from nothing else, and formatting costs more.
        options = tuple(
            (name, self.describe(getattr(symbol, name, None)))
            for name in ("lower_bound", "upper_bound", "power_of_two")
        )

        return ("symbol", repr(structure(symbol_expression(symbol))), options)

    def _describe_function(self, func):
        module = getattr(func, "__module__", None) or ""

        if module.split(".")[0] in _VERSIONED_PACKAGES:
            return ("function", module, func.__qualname__)

        if func in self._functions_in_progress:
            return ("recursive", module, func.__qualname__)

        self._functions_in_progress.add(func)

        try:
            source = function_source(func, self._memos)
        except (OSError, TypeError):
            source = _describe_code(func.__code__)

        closure = tuple(
            self.describe(cell.cell_contents) for cell in func.__closure__ or ()
        )
        names = _global_names(func.__code__)
        # A module global's attributes read by the function are among its
        # names too (``co_names`` holds attribute names as well).
        referenced = tuple(
            (
                name,
                self._describe_module(value, names)
                if isinstance(value := func.__globals__[name], types.ModuleType)
                else self.describe(value),
            )
            for name in sorted(names)
            if name in func.__globals__
        )

        self._functions_in_progress.discard(func)

        return (
            "function",
            module,
            func.__qualname__,
            source,
            self.describe(func.__defaults__),
            self.describe(func.__kwdefaults__),
            closure,
            referenced,
        )


#: ``id`` of a code object -> ``(code object, its file's lines in
#: ``linecache``, inspect.getsource's text)``; the code object is held, so
#: that its ``id`` is not reused.
_SOURCES = {}


def function_source(func, memos=None):
    """Return ``inspect.getsource(func)``, read once per function body and version of its file.

    ``inspect.getsource`` tokenizes the function's text: 1.7 ms of the 2.1 ms
    of a second ``make`` of flash attention in one process, most of the
    first ``make`` of a process that finds the kernel in the cache
    (bench/warm_make.py --clock cpu). Its text depends on the code object it
    finds (through ``__wrapped__``) and on its file's lines: those in
    ``linecache``, which it reloads when the file changed on disk
    (``linecache.checkcache``, as ``inspect`` does), else the file's
    contents. Kept in this process while the code object and its file's
    lines in ``linecache`` are the same, and with ``memos``, for a file not
    in ``linecache``, between processes under a stamp of the file's path, inode,
    size, modification and change times (ns) and the function's first line:
    so it is always what ``inspect.getsource`` would return, which is also
    what NineToothed generates from.

    :param func: a function.
    :param memos: :class:`Memos` or ``None``.
    :return: ``str``.
    :raises OSError: as ``inspect.getsource``, when the source cannot be found.
    :raises TypeError: as ``inspect.getsource``.
    """

    code = getattr(inspect.unwrap(func), "__code__", None)

    if code is None:
        return inspect.getsource(func)

    filename = code.co_filename
    linecache.checkcache(filename)
    lines = linecache.cache.get(filename)
    held = _SOURCES.get(id(code))

    if held is not None and held[0] is code and held[1] is lines is not None:
        return held[2]

    # Where ``inspect`` would read the file itself (not in ``linecache``,
    # or only lazily), or reads lines this function loaded from the file in
    # the state it still has, its text follows from the file's bytes.
    state = _file_state(filename) if memos is not None else None
    stamp = None

    loaded_here = _LOADED.get(filename)

    if state is not None and (
        lines is None
        or len(lines) == 1
        or loaded_here is not None
        and loaded_here[0] is lines
        and loaded_here[1] == state
    ):
        stamp = hashlib.sha256(
            repr((filename, state, code.co_firstlineno)).encode("utf-8")
        ).hexdigest()
        source = memos.read("function", stamp)

        if source is not None:
            return source

    source = inspect.getsource(func)
    loaded = linecache.cache.get(filename)
    _SOURCES[id(code)] = (code, loaded, source)

    if stamp is not None:
        memos.keep("function", stamp, source)

        if loaded is not lines:
            _LOADED[filename] = (loaded, state)

    return source


#: File name -> ``(its lines in linecache, its _file_state)`` when
#: :func:`function_source` had ``inspect`` load them, in that state.
_LOADED = {}


def _file_state(filename):
    # ``inspect.getsourcefile`` maps a bytecode file to its source; only a
    # source file is read as it is named. The change time moves with every
    # write, also when the modification time is set back.
    if not filename.endswith(".py"):
        return None

    try:
        info = os.stat(filename)
    except OSError:
        return None

    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _describe_code(code):
    """A code object without its source: bytecode, constants (``x * 2`` and ``x * 3`` differ only there) and names."""

    return (
        code.co_code.hex(),
        tuple(
            _describe_code(const) if isinstance(const, types.CodeType) else repr(const)
            for const in code.co_consts
        ),
        code.co_names,
        code.co_varnames,
    )


def _global_names(code):
    names = set(code.co_names)

    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)

    return names
