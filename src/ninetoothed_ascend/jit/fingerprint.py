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
import importlib.metadata
import inspect
import json
import linecache
import os
import pathlib
import sys
import types
import uuid

import ninetoothed
import torch
import triton

from ninetoothed_ascend import host
from ninetoothed_ascend.compiler.syntax import structure
from ninetoothed_ascend.compiler.target import Target
from ninetoothed_ascend.jit import ninetoothed_adapter
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


def installation():
    """Return what tells installations of this package apart: the Python prefix and where its sources are (``str``).

    An installation moves from one :func:`environment_digest` to the next
    when the package is edited or upgraded; two virtual environments, or two
    checkouts of the package, are two installations.
    """

    return f"{sys.prefix}{os.pathsep}{_PACKAGE_ROOT}"


class Memos:
    """What this module derives from files, read from a cache, and kept to be stored in it by :meth:`store`.

    The caller stores them when the kernel was found in the cache: a
    ``make`` that generates its kernel pays no writes for them (each is a
    file, about 0.2 ms, measured with ``Cache.remember`` here), and the next
    process, which finds it, stores them for those after it.

    :param cache: :class:`~ninetoothed_ascend.cache.Cache`.
    """

    def __init__(self, cache):
        self.cache = cache
        self._kept = {}

    def read(self, kind, stamp):
        """Return the text stored for ``kind`` under ``stamp`` (``Cache.memo``), or ``None``."""

        return self.cache.memo(kind, stamp)

    def keep(self, kind, stamp, text):
        """Keep ``text`` for ``kind`` under ``stamp`` until :meth:`store`."""

        self._kept[(kind, stamp)] = text

    def store(self):
        """Store what was kept (``Cache.remember``; a file that cannot be written is skipped)."""

        for (kind, stamp), text in self._kept.items():
            self.cache.remember(kind, stamp, text)

        self._kept.clear()


#: :func:`device_properties` in this process: device stamp -> properties.
_device_properties = {}


def device_properties(memos=None):
    """Return the device properties NineToothed's generator sees for the current device, remembered per CUDA device.

    The values are those of
    :func:`~ninetoothed_ascend.jit.ninetoothed_adapter.device_properties`
    (Triton's driver). On a CUDA device they are also kept in ``memos``,
    under a stamp of the device as torch describes it (name, compute
    capability, UUID, memory) and the Triton version, and read from there
    by later processes: a query of Triton's driver costs several times
    torch's description of the device, which is read once per process
    (measured on an H100 with ``bench/device_properties.py`` as of commit
    9910840). Without a CUDA device
    (a CPU machine, an Ascend host) the driver is asked once per process.

    :param memos: :class:`Memos` of the cache, or ``None``.
    :return: ``dict`` with the keys of
        :data:`~ninetoothed_ascend.jit.ninetoothed_adapter.DEFAULT_DEVICE_PROPERTIES`
        and ``int`` values.
    """

    stamp = _cuda_device_stamp()

    if stamp is None:
        return ninetoothed_adapter.device_properties()

    properties = _device_properties.get(stamp)

    if properties is None:
        stored = memos.read("device", stamp) if memos is not None else None
        properties = _stored_json(
            stored, ninetoothed_adapter.DEFAULT_DEVICE_PROPERTIES, int
        )

        if properties is None:
            properties = ninetoothed_adapter.device_properties()

            if memos is not None:
                memos.keep("device", stamp, json.dumps(properties))

        _device_properties[stamp] = properties

    return dict(properties)


def _cuda_device_stamp():
    # ``None`` without a CUDA device. torch keeps each device's properties
    # after the first request, so this is cheap after it.
    if not torch.cuda.is_available():
        return None

    device = torch.cuda.get_device_properties(torch.cuda.current_device())
    identity = (
        triton.__version__,
        device.name,
        device.major,
        device.minor,
        str(getattr(device, "uuid", "")),
        device.total_memory,
    )

    return hashlib.sha256(repr(identity).encode("utf-8")).hexdigest()


#: :func:`environment`'s result in this process, once computed.
_environment = None


def environment(memos=None):
    """Describe the toolchain that generated code depends on.

    Computed once per process. Its installed versions and the digest of
    this package's sources are most of a process's first cache hit
    (``bench/warm_make.py --clock cpu``); with ``memos``,
    they are read from what an earlier process stored under
    :func:`environment_stamp`, which changes with any file they are read
    from.

    :param memos: :class:`Memos` to read and keep the installed versions and
        :func:`package_digest` in, or ``None`` to compute them.
    :return: ``tuple`` of ``(name, version)`` pairs: Python, ninetoothed,
        the distribution that owns ``import triton`` (``triton-ascend``
        where its files are the ones imported,
        :func:`~ninetoothed_ascend.host.triton_package_is_ascend`, else
        ``triton``) and its version, and a digest of this package's
        source files (which covers the pass pipeline).
    """

    global _environment

    if _environment is None:
        _environment = _describe_environment(memos)

    return _environment


def _describe_environment(memos):
    # One walk of the package's sources serves the stamp and, on a miss,
    # the digest.
    files = _source_files(_PACKAGE_ROOT)
    stamp = _stamp(_PACKAGE_ROOT, files) if memos is not None else None
    stored = (
        _stored_json(
            memos.read("environment", stamp),
            ("ninetoothed", "triton", "package"),
            str,
            optional=("ninetoothed",),
        )
        if stamp
        else None
    )

    if stored is None:
        stored = {
            # ``None`` where the listing beside the package does not tell:
            # then importlib.metadata, which reads every ``sys.path`` entry,
            # is asked in each process (the stamp covers only the listing).
            "ninetoothed": _listed_version(ninetoothed, "ninetoothed"),
            "triton": (
                host.TRITON_ASCEND if host.triton_package_is_ascend() else "triton"
            ),
            "package": _package_digest(files),
        }

        if memos is not None:
            memos.keep("environment", stamp, json.dumps(stored))

    listed = stored["ninetoothed"]

    return (
        # What ``platform.python_version()`` reads from ``sys.version``
        # (its first word), without the regular expression Python 3.12 and
        # 3.13 compile at its first call.
        ("python", sys.version.split()[0]),
        (
            "ninetoothed",
            listed if listed else _installed_version(ninetoothed, "ninetoothed"),
        ),
        (stored["triton"], triton.__version__),
        ("ninetoothed-ascend", stored["package"]),
    )


def _stored_json(text, keys, value_type, optional=()):
    # A memo's JSON object with exactly ``keys``, each a ``value_type`` (or
    # null, for the ``optional`` ones), or None where the text is not that.
    try:
        stored = json.loads(text) if text is not None else None
    except ValueError:
        return None

    if (
        isinstance(stored, dict)
        and set(stored) == set(keys)
        and all(
            type(value) is value_type or (value is None and key in optional)
            for key, value in stored.items()
        )
    ):
        return stored

    return None


def _installed_version(package, distribution):
    """The version of ``distribution``, whose import package is ``package``: :func:`_listed_version`, else importlib.metadata's."""

    return _listed_version(package, distribution) or importlib.metadata.version(
        distribution
    )


def _listed_version(package, distribution):
    # The version in the name of the metadata directory an installer writes
    # beside the package (``ninetoothed-0.26.0.dist-info``): one directory
    # listing, where importlib.metadata's first lookup in a process scans
    # every sys.path entry and parses the metadata file (with triton's
    # distribution decided from its files, the environment of a cold
    # ``make`` went from 2.3-2.9 to 1.5 ms: docs/benchmarks.md, "Session
    # 14"). ``None`` where the listing does not tell (an editable install,
    # two such directories).
    prefix = distribution.replace("-", "_") + "-"
    suffix = ".dist-info"

    try:
        names = os.listdir(_metadata_directory(package))
    except OSError:
        names = ()

    found = [
        name[len(prefix) : -len(suffix)]
        for name in names
        if name.startswith(prefix) and name.endswith(suffix)
    ]

    return found[0] if len(found) == 1 else None


def _metadata_directory(package):
    # Where an installer puts the metadata of the distribution that holds
    # ``package``: the directory holding the package's directory.
    return os.path.dirname(os.path.dirname(os.path.abspath(package.__file__)))


def environment_stamp(root=None):
    """Return a sha256 hex digest of what :func:`environment` reads from the disk, from file metadata alone.

    It covers the files :func:`package_digest` hashes (each one's relative
    path, inode, size, and modification and change times in nanoseconds: a
    file's change time moves with every write, also when its modification
    time is set back), the directories whose listings say NineToothed's
    version and the distribution of ``import triton`` (the directory holding
    the ``ninetoothed`` package, where installing or removing a distribution
    adds or removes its metadata directory; ``triton/backends``, which holds
    ``ascend`` in triton-ascend's files: :func:`_listed_directories`), with
    their paths, the Python version and ``root``. Not the other ``sys.path``
    entries: the memo of a program that writes files in its own directory
    (``sys.path[0]``) was never read again while they were stamped.

    :param root: ``pathlib.Path`` of the package directory; this package's
        when ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    root = _PACKAGE_ROOT if root is None else root

    return _stamp(root, _source_files(root))


def _listed_directories():
    """The directories whose listings :func:`environment` reads: ``tuple`` of ``str``."""

    return (
        _metadata_directory(ninetoothed),
        str(host.triton_backends_directory()),
    )


def _stamp(root, files):
    entries = []

    for directory in _listed_directories():
        try:
            entries.append((directory, os.stat(directory).st_mtime_ns))
        except OSError:
            entries.append((directory, None))

    described = tuple(
        (parts, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        for parts, _, info in files
    )
    description = repr((sys.version, str(root), tuple(entries), described))

    return hashlib.sha256(description.encode("utf-8")).hexdigest()


_PACKAGE_ROOT = pathlib.Path(__file__).resolve().parent.parent


@functools.cache
def package_digest(root=None):
    """Return the sha256 of this package's Python sources, in path order.

    Each ``*.py`` file under the package directory, as ``pathlib``'s
    ``rglob`` finds them (symbolic links to directories not followed) outside
    ``__pycache__`` directories, and ``sorted`` orders them: its path
    relative to the directory, then its bytes.

    :param root: ``pathlib.Path`` of the package directory; this package's
        when ``None``.
    :return: ``str``, 64 hexadecimal digits.
    """

    return _package_digest(_source_files(_PACKAGE_ROOT if root is None else root))


def _package_digest(files):
    digest = hashlib.sha256()

    for parts, path, _ in files:
        digest.update("/".join(parts).encode())
        # os.read rather than a file object, which costs more per file.
        descriptor = os.open(path, os.O_RDONLY)

        try:
            while chunk := os.read(descriptor, 1 << 20):
                digest.update(chunk)
        finally:
            os.close(descriptor)

    return digest.hexdigest()


def _source_files(root):
    """``(relative parts, path, os.stat_result)`` of each ``*.py`` under ``root``, sorted as ``sorted(root.rglob("*.py"))`` sorts its paths.

    ``os.scandir`` instead of ``rglob``, which took a third of
    :func:`package_digest`'s time: it visits what ``rglob`` visits
    (directories that are not symbolic links) and, like it, any entry whose
    name ends with ``.py``, except in ``__pycache__`` directories: Python
    imports no source from them, and listing the bytecode an installed
    package keeps there is a large part of a process's first scan.
    """

    found = []

    def scan(directory, parts):
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name

                if name.endswith(".py"):
                    found.append(((*parts, name), entry.path, entry.stat()))

                if name != "__pycache__" and entry.is_dir() and not entry.is_symlink():
                    scan(entry.path, (*parts, name))

    scan(root, ())
    found.sort(key=lambda item: item[0])

    return found


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
