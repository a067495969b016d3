"""Interpreted copies of ``triton.language``'s own ``triton.jit`` functions, for CPU variants."""

import ast
import functools
import types

import triton
import triton.language
import triton.runtime.interpreter

from ninetoothed_ascend.compiler.syntax import find

#: ``id`` of a ``triton.jit`` function -> ``(the function, its interpreted
#: copy)``. By ``id``, with the function held so that its ``id`` is not
#: reused: a ``JITFunction`` hashes by its ``cache_key``, which parses it and
#: its callees (0.9 ms of the first import of rms_norm's CPU variant, for
#: ``tl.sum``), and compares by identity, so that hash decided nothing.
_interpreted = {}


def interpreted(jit_function):
    """Return an interpreted copy of ``jit_function`` whose ``triton.jit`` callees are interpreted too.

    Used by the CPU variant at import (see :class:`InterpretLanguageFunctions`).
    ``tl.sort`` calls ``sort_impl``, ``tl.rand`` calls ``randint``, which
    calls ``philox``: the copy runs in a copy of the function's globals in
    which every ``triton.jit`` function is replaced by its interpreted copy,
    so nothing of Triton's own modules changes.

    Calling an ``InterpretedFunction`` patches the ``triton.language``
    modules in its function's globals for the interpreter and never restores
    them (``InterpretedFunction.__call__``, Triton 3.9); for
    ``triton.language.standard``'s functions that is ``triton.language.core``,
    whose builtins then stay patched, and no kernel compiles in the process
    afterwards (measured here,
    ``tests/runtime/test_interpreter.py::test_running_a_cpu_variant_leaves_triton_usable_for_compilation``).
    So the copy returned puts ``triton.language.core`` back as it found it
    when it returns.

    :param jit_function: ``triton.runtime.JITFunction``.
    :return: a function that calls the
        ``triton.runtime.interpreter.InterpretedFunction``.
    """

    copy = _interpreted_copy(jit_function)

    @functools.wraps(copy.fn)
    def call(*args, **kwargs):
        saved = dict(vars(triton.language.core))

        try:
            return copy(*args, **kwargs)
        finally:
            core = vars(triton.language.core)

            for name in [name for name in core if name not in saved]:
                delattr(triton.language.core, name)

            for name, value in saved.items():
                if core.get(name) is not value:
                    setattr(triton.language.core, name, value)

    return call


def _interpreted_copy(jit_function):
    held = _interpreted.get(id(jit_function))

    if held is not None and held[0] is jit_function:
        return held[1]

    function = jit_function.fn
    namespace = dict(function.__globals__)
    clone = types.FunctionType(
        function.__code__,
        namespace,
        function.__name__,
        function.__defaults__,
        function.__closure__,
    )
    clone.__kwdefaults__ = function.__kwdefaults__
    clone.__wrapped__ = function  # ``inspect.getsource`` finds the original text
    copy = triton.runtime.interpreter.InterpretedFunction(clone)
    _interpreted[id(jit_function)] = (jit_function, copy)

    # Only callees: a ``triton.jit`` function passed as a value (a reduction's
    # combine function) must stay the object the interpreter recognizes
    # (``tl.max`` reduces with NumPy only for the original
    # ``_elementwise_max``; a copy takes a generic path that builds
    # vocabulary-squared tiles). What it calls is read from the text Triton
    # kept when it decorated it (``JITFunction.src``, Triton 3.2 and 3.9),
    # not with ``inspect.getsource``, which tokenizes its module again.
    called = {
        node.func.id
        for node in find(ast.parse(jit_function.src), ast.Call)
        if isinstance(node.func, ast.Name)
    }

    for name, value in function.__globals__.items():
        if name in called and isinstance(value, triton.runtime.JITFunction):
            namespace[name] = _interpreted_copy(value)

    return copy
