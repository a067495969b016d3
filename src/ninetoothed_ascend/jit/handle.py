"""The kernel handle: per-call dispatch to the variant for the tensors' device.

A handle is made from a cache entry that holds NineToothed's source (the CUDA
variant) and the facts about its launch function read when it was generated
(:attr:`~ninetoothed_ascend.cache.Entry.launch`): it runs no pass itself, and
neither it nor a launch reads any source. A variant the entry lacks (``make``
builds the one of the device the process most likely calls with) is built
at its first use (a call with tensors of its device type, :meth:`Handle.source`,
:meth:`Handle.variant`, ...) by :mod:`~ninetoothed_ascend.jit.variants`, or
all at once by :meth:`Handle.build` (``warm``), and added to the entry.
"""

import contextlib
import dataclasses
import functools
import linecache
import sys
import types
import warnings

import torch

from ninetoothed_ascend.cache import Variant, shared_tuning
from ninetoothed_ascend.compiler import emulation, pipelines
from ninetoothed_ascend.compiler.launch import Requirements, read_launch_facts
from ninetoothed_ascend.jit import arguments
from ninetoothed_ascend.jit.ninetoothed_adapter import GeneratedSource
from ninetoothed_ascend.jit.variants import VARIANTS, build_variant, emulated_variant


class VariantUnavailableError(RuntimeError):
    """A kernel's variant cannot be built, imported or chosen.

    The message names the kernel, the variant, the cause and what to do.
    """


class MixedDevicesError(ValueError):
    """One call passed tensors on different device types (``meta`` tensors, placeholders, excepted)."""


class Handle:
    """A kernel with a CUDA, an NPU and a CPU variant.

    Calling the handle runs the variant for the device type of its tensor
    arguments: ``cuda`` tensors run the CUDA variant (NineToothed's own code),
    ``npu`` tensors the NPU variant (for triton-ascend), ``cpu`` tensors the
    CPU variant (Triton's interpreter). Variants are imported at their first
    use, and built then where the entry lacks them. The NPU and CPU
    variants' arguments are checked against what the arrangement requires
    (:mod:`ninetoothed_ascend.jit.arguments`, read from the entry).
    Arguments are those of NineToothed's launch function: the tensors in the
    order of the application's parameters, then any non-tensor parameters.

    :param kernel_name: ``str``.
    :param key: ``str``, the cache key (sha256 hex).
    :param entry: :class:`~ninetoothed_ascend.cache.Entry`, with the CUDA
        variant and any others already built.
    :param cache: :class:`~ninetoothed_ascend.cache.Cache` that variants
        built later are added to, or ``None`` to keep them in memory.
    :param launches: ``dict`` from device type to a launch function already
        imported for it (NineToothed's own for ``"cuda"``), or ``None``.
    """

    def __init__(self, kernel_name, key, entry, cache=None, launches=None):
        self.kernel_name = kernel_name
        self.key = key
        self._entry = entry
        self._cache = cache
        self._launches = {
            device_type: self._shared_tuning(launch, device_type)
            for device_type, launch in (launches or {}).items()
        }
        self._emulated_sources = {}
        self._emulated_launches = {}
        self._recovered = False
        self._requirements = self._read_requirements()

    def __call__(self, *args, **kwargs):
        device_type = None
        placeholders = False

        for arg in (*args, *kwargs.values()) if kwargs else args:
            # ``is_cuda`` and ``is_cpu`` cost a tenth of ``device.type``.
            if isinstance(arg, torch.Tensor):
                if arg.is_cuda:
                    arg_device_type = "cuda"
                elif arg.is_cpu:
                    arg_device_type = "cpu"
                elif arg.is_meta:
                    # A ``meta`` tensor has no data: libraries pass one as a
                    # placeholder for an optional input the kernel does not
                    # read, and plain NineToothed launches with it. It does
                    # not decide the variant.
                    placeholders = True
                    continue
                else:
                    arg_device_type = arg.device.type

                if arg_device_type is not device_type:
                    device_type = self._check_same_device_type(
                        device_type, arg_device_type
                    )

        if device_type is None and placeholders:
            raise VariantUnavailableError(
                f"kernel `{self.kernel_name}` got only meta tensors, which have no "
                "data and name no device type to run on; pass at least one tensor "
                "on cuda, npu or cpu."
            )

        launch = self._launches.get(device_type) or self.launch_for(device_type)

        return launch(*args, **kwargs) if kwargs else launch(*args)

    def _check_same_device_type(self, device_type, arg_device_type):
        if device_type is not None and arg_device_type != device_type:
            raise MixedDevicesError(
                f"kernel `{self.kernel_name}` got tensors on both {device_type} "
                f"and {arg_device_type}; move them to one device type."
            )

        return arg_device_type

    def launch_for(self, device_type):
        """Return what a call with tensors on ``device_type`` runs: a launch function with the handle's arguments.

        The variant for ``device_type`` (or the emulated NPU variant, see
        :meth:`emulated`), built and imported if needed, wrapped in the
        argument check where :func:`ninetoothed_ascend.jit.arguments.requested`
        asks for it; resolved once per handle.

        :param device_type: ``str`` or ``None`` (a call without tensors).
        :raises VariantUnavailableError: no variant serves ``device_type``,
            or it cannot be built or imported.
        """

        launch = self._launches.get(device_type)

        if launch is not None:
            return launch

        if device_type not in VARIANTS:
            raise VariantUnavailableError(
                f"kernel `{self.kernel_name}` has no variant for "
                f"{'calls without tensors' if device_type is None else f'device type {device_type!r}'}; "
                f"its variants serve {', '.join(VARIANTS)} tensors. "
                f"Use handle.variant(name) to run one explicitly."
            )

        try:
            launch = self._resolve(device_type)
        except VariantUnavailableError:
            raise
        except Exception as error:
            # The variant's module failed when executed, or lacks its launch
            # function, or the entry's requirements do not compile: a fault
            # of the cache entry, which is set aside and built again, once.
            if not self._recover(device_type, error):
                raise

            launch = self._resolve(device_type)

        self._launches[device_type] = launch

        return launch

    def _resolve(self, device_type):
        if device_type in pipelines.EMULATIONS and emulation.emulation_requested():
            launch, variant = self.emulated(device_type), "npu"
        else:
            launch, variant = self.variant(device_type), device_type

            if device_type == "cpu":
                # ``meta`` placeholders get storage after the argument check,
                # which refuses one the kernel reads.
                launch = _with_materialized_placeholders(launch)

        if arguments.requested(variant) and self.requirements is not None:
            launch = arguments.checked(
                launch, self.requirements, self.kernel_name, variant
            )

        return launch

    def _recover(self, device_type, error):
        """Quarantine the cache entry and build the variants of ``device_type``'s launch again from NineToothed's source, once per handle.

        :return: whether anything was built again (``False``: the fault is
            NineToothed's source itself, or it was built again already).
        """

        failed = (
            "npu"
            if device_type in pipelines.EMULATIONS and emulation.emulation_requested()
            else device_type
        )

        if self._recovered:
            return False

        self._recovered = True

        if self._cache is not None:
            self._cache.quarantine(self.key, f"{failed} variant: {error}")
        else:
            warnings.warn(
                f"ninetoothed-ascend: the {failed} variant of kernel "
                f"`{self.kernel_name}` failed ({error}); it is built again.",
                stacklevel=4,
            )

        if failed == "cuda":
            # Only the definition makes NineToothed's source again: the next
            # ``make`` finds no entry and generates it.
            return False

        cuda = self._entry.variants["cuda"]
        launch = self._entry.launch
        self._entry = dataclasses.replace(
            self._entry,
            variants={"cuda": Variant(cuda.source, cuda.rewrites, cuda.error)},
            launch=None
            if launch is None
            else {
                name: value for name, value in launch.items() if name != "requirements"
            },
        )
        self._requirements = self._read_requirements()
        self._emulated_sources.clear()
        self._emulated_launches.clear()
        self.build((failed,))

        return True

    def variant(self, name):
        """Return the launch function of variant ``name``, importing it if needed.

        :param name: ``"cuda"``, ``"npu"`` or ``"cpu"``.
        :return: the generated launch function; it takes the same arguments
            as the handle.
        :raises VariantUnavailableError: the variant could not be built (the
            message names the pass and what to do) or imported (for example
            the NPU variant without triton-ascend installed).
        :raises KeyError: ``name`` is not a variant.
        """

        return self._shared_tuning(getattr(self.module(name), self.launch_name), name)

    def _shared_tuning(self, launch, variant):
        # Autotuners record and reuse their choices (``shared_tuning``) only
        # where asked: a reused choice may differ from this process's own.
        if not shared_tuning.requested():
            return launch

        directory = None if self._cache is None else self._cache.directory

        return shared_tuning.share(launch, self.key, variant, directory)

    def emulated(self, device_type):
        """Return the launch function of the NPU variant emulated on ``device_type``.

        The NPU variant's source, unchanged but for its Ascend-only symbols
        (triton-ascend's libdevice, ``hf32``), which
        :func:`ninetoothed_ascend.compiler.pipelines.emulate` maps to portable ones
        with the same meaning, imported with the installed Triton; on the CPU
        it runs in Triton's interpreter. Derived at the first request and
        kept in memory. Calls with tensors on ``device_type`` dispatch here
        instead of to the ``cuda``/``cpu`` variant when
        ``$NINETOOTHED_ASCEND_EMULATE_NPU`` is ``1``.

        :param device_type: ``"cuda"`` or ``"cpu"``.
        :return: the launch function; it takes the same arguments as the handle.
        :raises VariantUnavailableError: the NPU variant was not built, or an
            emulation pass cannot map it (the message names the pass and what
            to do), or the result cannot be imported.
        :raises KeyError: ``device_type`` is not ``"cuda"`` or ``"cpu"``.
        """

        launch = self._emulated_launches.get(device_type)

        if launch is not None:
            return launch

        rewritten = self.emulated_source(device_type)

        try:
            module = import_variant(
                Variant(rewritten.source, rewritten.rewrites),
                f"npu_emulated_{device_type}",
            )
        except ImportError as error:
            raise VariantUnavailableError(
                f"the npu variant of kernel `{self.kernel_name}`, emulated on "
                f"{device_type}, cannot be imported here: {error}"
            ) from error

        launch = self._shared_tuning(
            getattr(module, self.launch_name), f"npu_emulated_{device_type}"
        )

        if device_type == "cpu":
            # It takes the handle's arguments, ``meta`` placeholders included.
            launch = _with_materialized_placeholders(launch)

        self._emulated_launches[device_type] = launch

        return launch

    def lowered(self, config=0, **options):
        """Return the NPU variant as triton-ascend lowers it, run on the CPU with every tensor fenced: a launch function with the handle's arguments.

        Each call compiles what a launch with its arguments compiles
        (``ttir`` and ``ttadapter`` of triton-ascend 3.2.0, the launch's
        specialization and the ``config``-th config its autotuner tries),
        lowers the Linalg to native code (cached under ``lowered/`` in the
        cache directory) and runs it over the whole grid on CPU tensors,
        each between guard pages in a child process; the results land in
        the tensors. Needs triton-ascend as ``triton``, ascendnpu-ir and
        LLVM 19's MLIR tools; no NPU. What it proves: docs/lowered.md.

        :param config: ``int``, which of the configs the autotuner would try.
        :param options: keyword arguments of
            :class:`~ninetoothed_ascend.check.lowered.launch.LoweredLaunch`
            (``directory``, ``timeout``, ``arch``).
        :return: :class:`~ninetoothed_ascend.check.lowered.launch.LoweredLaunch`;
            a call raises :class:`~ninetoothed_ascend.check.lowered.faults.Fault`
            for an access outside a tensor (it names the kernel, the
            operation and the tensor), never crashing the process.
        :raises ninetoothed_ascend.check.lowered.tools.ToolsMissing: a program is missing.
        """

        from ninetoothed_ascend.check.lowered.launch import LoweredLaunch

        return LoweredLaunch(self, config=config, **options)

    def emulated_source(self, device_type):
        """Return the NPU variant emulated on ``device_type``, without importing it.

        :param device_type: ``"cuda"`` or ``"cpu"``.
        :return: :class:`~ninetoothed_ascend.compiler.passes.Rewritten`: the
            emulated source and ``((pass name, number of rewrites), ...)`` for
            the emulation passes that fired (the interpreter pipeline's
            included on the CPU).
        :raises VariantUnavailableError: as :meth:`emulated`.
        :raises KeyError: as :meth:`emulated`.
        """

        rewritten = self._emulated_sources.get(device_type)

        if rewritten is not None:
            return rewritten

        npu_source = self._variant("npu").source

        try:
            rewritten = emulated_variant(npu_source, self.kernel_name, device_type)
        except ValueError as error:
            raise VariantUnavailableError(str(error)) from error

        self._emulated_sources[device_type] = rewritten

        return rewritten

    def module(self, name):
        """Return the imported module of variant ``name``; raises as :meth:`variant` does."""

        variant = self._variant(name)

        try:
            return import_variant(variant, name)
        except ImportError as error:
            raise VariantUnavailableError(
                f"the {name} variant of kernel `{self.kernel_name}` cannot be "
                f"imported here: {error}"
            ) from error

    @property
    def launch_name(self):
        """Name of the launch function in every variant's module (``str``)."""

        return self._entry.launch_name

    def source(self, name):
        """Return the generated source of variant ``name`` (``str``).

        :raises VariantUnavailableError: the variant could not be built.
        """

        return self._variant(name).source

    def rewrites(self, name):
        """Return ``((pass name, number of rewrites), ...)`` for variant ``name``, in pipeline order (building it if needed)."""

        return self._built(name).rewrites

    def path(self, name):
        """Return where variant ``name`` is cached (``pathlib.Path``), or ``None`` if it is held only in memory."""

        return self._variant(name).path

    @property
    def entry(self):
        """The :class:`~ninetoothed_ascend.cache.Entry` of this kernel: the variants built or read so far and the launch facts.

        A handle that ``make`` found in the cache holds what a cold ``make``
        builds (NineToothed's source and the likely device's variant) and
        reads another variant where it is first needed. Read the
        entry, do not change it; :meth:`build` adds every variant asked for.
        """

        return self._entry

    def build(self, names=VARIANTS, raise_store_errors=False, before_store=None):
        """Build the variants of ``names`` not built yet, and add them to the cache entry.

        A variant already stored is read, not built: first without the lock
        (a handle that ``make`` found in the cache holds only what a cold
        ``make`` builds), then under the kernel's lock, for variants another
        process added meanwhile. One whose stored source is refused (hash,
        trust) is built again from NineToothed's source. A variant whose
        pipeline fails is built as its error (raised when it is asked for).

        :param names: iterable of variant names (default: all).
        :param raise_store_errors: ``True`` to raise when the entry cannot be
            written; otherwise a warning says so and the variants stay in
            memory.
        :param before_store: ``None``, or called with the entry once every
            variant is built and before it is stored; what it raises
            propagates and nothing is stored.
        :return: ``tuple`` of the names built by this call.
        :raises OSError: with ``raise_store_errors``, the entry could not be written.
        :raises KeyError: a name is not a variant.
        """

        names = tuple(names)

        for name in names:
            _check_variant_name(name)

        variants = self._entry.variants
        cache = self._cache

        missing = tuple(name for name in names if name not in variants)

        # Stored but not read yet (``make`` reads what it would build): read
        # without the lock, since stored files are only ever replaced whole.
        if missing and cache is not None:
            self._take(
                cache.load(self.key, self._entry.definition, missing, quarantine=True)
            )

        if all(name in variants for name in names):
            return ()

        with (
            cache.locked(self.key, raise_store_errors)
            if cache is not None
            else contextlib.nullcontext(False)
        ) as held:
            # Whatever another process stored meanwhile; and every stored
            # variant, which the entry written below must keep.
            if held:
                self._take(
                    cache.load(
                        self.key,
                        self._entry.definition,
                        self._unread(),
                        quarantine=True,
                    )
                )

            built = self._build_missing(names)

            if built and before_store is not None:
                before_store(self._entry)

            if built and held:
                self._store(cache, built, raise_store_errors)

        return built

    def _unread(self):
        # The variants this handle holds no source or error of.
        return tuple(name for name in VARIANTS if name not in self._entry.variants)

    def _take(self, stored):
        # What a stored entry (or ``None``) holds that this handle does not.
        if stored is None:
            return

        for name, variant in stored.variants.items():
            self._entry.variants.setdefault(name, variant)

    def _store(self, cache, built, raise_errors):
        try:
            cache.store(self.key, self._entry)
        except OSError as error:
            if raise_errors:
                raise

            warnings.warn(
                f"ninetoothed-ascend: could not cache the {', '.join(built)} "
                f"variants of kernel `{self.kernel_name}` in {cache.directory} "
                f"({error}); they run from memory and will be built again in the "
                "next process.",
                stacklevel=4,
            )

    def _build_missing(self, names):
        variants = self._entry.variants
        generated = GeneratedSource(
            variants["cuda"].source,
            self._entry.kernel_name,
            self._entry.launch_name,
            (self._entry.launch or {}).get("max_num_configs"),
        )
        built = tuple(name for name in names if name not in variants)

        for name in built:
            variants[name] = build_variant(generated, name)

        return built

    @property
    def requirements(self):
        """What the launch function requires of its arguments: :class:`~ninetoothed_ascend.compiler.launch.Requirements`, or ``None`` where nothing is checked.

        The compiler's analysis, stored with the entry
        (:func:`~ninetoothed_ascend.compiler.launch.launch_facts`).
        """

        return self._requirements

    def _read_requirements(self):
        # An entry without them (set aside by ``_recover``, or made by hand)
        # has them analysed here, once, from NineToothed's source: never at
        # a launch.
        launch = self._entry.launch

        if launch is None:
            return None

        if "requirements" not in launch:
            launch["requirements"] = read_launch_facts(
                self._entry.variants["cuda"].source,
                self._entry.kernel_name,
                self._entry.launch_name,
            )["requirements"]

        fact = launch["requirements"]

        return Requirements.from_json(fact) if fact is not None else None

    def _built(self, name):
        _check_variant_name(name)

        if name not in self._entry.variants:
            self.build((name,))

        return self._entry.variants[name]

    def _variant(self, name):
        variant = self._built(name)

        if variant.source is None:
            raise VariantUnavailableError(variant.error)

        return variant

    def __repr__(self):
        return f"<ninetoothed_ascend.Handle {self.kernel_name} {self.key[:12]}>"


def _with_materialized_placeholders(launch):
    @functools.wraps(launch)
    def materialized(*args, **kwargs):
        args, kwargs = _materialize_placeholders(args, kwargs)

        return launch(*args, **kwargs)

    return materialized


def _check_variant_name(name):
    if name not in VARIANTS:
        raise KeyError(
            f"{name!r} is not a variant; choose one of {', '.join(VARIANTS)}"
        )


def _materialize_placeholders(args, kwargs):
    # Triton's interpreter copies the storage of every tensor argument to the
    # host before a launch ("Cannot copy out of meta tensor; no data!",
    # Triton 3.9 runtime/interpreter.py ``_init_args_hst``); a CPU tensor of
    # one element, expanded to the placeholder's shape, has storage and the
    # same sizes.
    def materialize(arg):
        if isinstance(arg, torch.Tensor) and arg.is_meta:
            return torch.empty((), dtype=arg.dtype).expand(arg.shape)

        return arg

    return (
        tuple(map(materialize, args)),
        {name: materialize(arg) for name, arg in kwargs.items()},
    )


def import_variant(variant, variant_name):
    """Import ``variant``'s source as a module named by its digest (imported once per process).

    Triton reads kernel source through ``inspect``, so the verified text is
    served through ``linecache`` under the module's file name.

    :param variant: :class:`~ninetoothed_ascend.cache.Variant` with a ``source``.
    :param variant_name: ``str``, part of the module name (``"npu"``,
        ``"npu_emulated_cuda"``, ...).
    :return: the module.
    :raises Exception: whatever executing the source raises (``ImportError``
        for a missing module, ``SyntaxError``, ...); nothing is left in
        ``sys.modules`` then.
    """

    module_name = f"ninetoothed_ascend.variants.{variant_name}_{variant.digest}"
    module = sys.modules.get(module_name)

    if module is not None:
        return module

    source = variant.source
    filename = str(variant.path) if variant.path is not None else f"<{module_name}>"

    # Triton reads kernel source through ``inspect``, which reads ``linecache``:
    # serving it the verified text keeps what runs equal to what was checked.
    linecache.cache[filename] = (
        len(source),
        None,
        source.splitlines(keepends=True),
        filename,
    )

    module = types.ModuleType(module_name)
    module.__file__ = filename
    sys.modules[module_name] = module

    try:
        exec(compile(source, filename, "exec"), module.__dict__)
    except BaseException:
        del sys.modules[module_name]
        raise

    return module
