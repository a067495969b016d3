"""Transparent import: every NineToothed kernel becomes a dual-variant kernel.

This is the one place where ninetoothed-ascend replaces parts of NineToothed
while the program runs. :func:`activate` (run by ``import ninetoothed_ascend``,
or at interpreter start when ``NINETOOTHED_ASCEND=1``) replaces, and
:func:`disable` restores, exactly these four names:

=====================================  ==========================================
replaced                               why
=====================================  ==========================================
``ninetoothed.make``                   kernels made after activation, the way
                                       operator libraries call it
                                       (``ninetoothed.make(...)``)
``ninetoothed.jit``                    the same for ``@ninetoothed.jit``
``jit`` in module ``ninetoothed.make``  what NineToothed's own ``make`` calls, so
                                       that a ``make`` bound by
                                       ``from ninetoothed import make`` before
                                       activation makes dual-variant kernels too
``_Handle.__call__`` of NineToothed    kernels made by plain NineToothed before
                                       activation: each dispatches per call; CUDA
                                       tensors still run NineToothed's own launch
=====================================  ==========================================

Activation is idempotent and process-wide; nothing is replaced on disk.
Kernels made while active stay ninetoothed-ascend handles after
:func:`disable`; kernels made by plain NineToothed before activation get their
plain behaviour back.

Limit: a ``jit`` bound by ``from ninetoothed import jit`` before activation is
NineToothed's own; the kernels it makes are handled by the ``_Handle`` row.
"""

import contextlib
import os
import threading

from ninetoothed_ascend.jit import from_generated
from ninetoothed_ascend.jit import jit as dual_jit
from ninetoothed_ascend.jit import make as dual_make
from ninetoothed_ascend.jit import ninetoothed_adapter as adapter

#: The environment variable that activates at interpreter start (see
#: ``ninetoothed_ascend.pth``); any value but empty or ``0`` activates.
ENVIRONMENT_VARIABLE = "NINETOOTHED_ASCEND"

_lock = threading.RLock()
_saved = None


def activate():
    """Make every kernel built by ``ninetoothed.make`` or ``ninetoothed.jit`` a dual-variant kernel.

    Idempotent. Reversed by :func:`disable`.
    """

    global _saved

    import ninetoothed

    with _lock:
        if _saved is not None:
            return

        handle_class = adapter.NineToothedHandle
        _saved = (
            ninetoothed.make,
            ninetoothed.jit,
            adapter.MAKE_MODULE.jit,
            handle_class.__dict__["__call__"],
        )
        ninetoothed.make = dual_make
        ninetoothed.jit = dual_jit
        adapter.MAKE_MODULE.jit = dual_jit
        handle_class.__call__ = _call_dual


def disable():
    """Restore plain NineToothed: undo :func:`activate`. Idempotent."""

    global _saved

    import ninetoothed

    with _lock:
        if _saved is None:
            return

        (
            ninetoothed.make,
            ninetoothed.jit,
            adapter.MAKE_MODULE.jit,
            adapter.NineToothedHandle.__call__,
        ) = _saved
        _saved = None


@contextlib.contextmanager
def disabled():
    """Plain NineToothed inside the ``with`` block, the previous state after it.

    For comparisons with plain NineToothed (tests, benchmarks). Process-wide,
    like :func:`disable`: other threads see plain NineToothed meanwhile.
    """

    with _lock:
        was_active = is_active()
        disable()

        try:
            yield
        finally:
            if was_active:
                activate()


def is_active():
    """Return whether :func:`activate` is in effect (``bool``)."""

    return _saved is not None


def requested_by_environment(environ=os.environ):
    """Return whether ``$NINETOOTHED_ASCEND`` asks for activation (set, not empty, not ``0``)."""

    return environ.get(ENVIRONMENT_VARIABLE, "") not in ("", "0")


def _call_dual(self, *args, **kwargs):
    # ``self`` is a NineToothed handle made before activation.
    handle = self.__dict__.get("_ninetoothed_ascend_handle")

    if handle is None:
        handle = _dual_handle_of(self)

    return handle(*args, **kwargs)


def _dual_handle_of(plain):
    # The CUDA variant is NineToothed's source; its launch is already imported.
    handle = from_generated(
        adapter.handle_source(plain),
        {"generated": adapter.handle_path(plain)},
        cuda_launch=adapter.handle_launch(plain),
    )
    plain._ninetoothed_ascend_handle = handle

    return handle
