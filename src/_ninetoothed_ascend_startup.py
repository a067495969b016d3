"""Interpreter-start hook for ``NINETOOTHED_ASCEND=1`` (see ``ninetoothed_ascend.pth``).

The wheel installs ``ninetoothed_ascend.pth`` at the root of site-packages;
Python's ``site`` module runs its one line at every interpreter start. The line
reads one environment variable and returns unless ``NINETOOTHED_ASCEND`` is
set (not empty, not ``0``); only then is this module imported, and it imports
nothing heavy either: :func:`install` puts a finder on ``sys.meta_path`` that
waits for the program's own ``import ninetoothed`` and, right after
NineToothed's package has run, imports ``ninetoothed_ascend``, which activates
the transparent import (:mod:`ninetoothed_ascend.activation`). A program that
never imports NineToothed never loads torch or Triton on our account.

This module lives outside the ``ninetoothed_ascend`` package because importing
anything inside it runs the package's ``__init__`` (torch, Triton, NineToothed).
"""

import sys


class _ActivateAfterNineToothed:
    """A ``sys.meta_path`` finder that only watches for ``ninetoothed``."""

    def find_spec(self, name, path=None, target=None):
        if name != "ninetoothed":
            return None

        # One shot: whatever happens next, stop watching.
        sys.meta_path.remove(self)

        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(name, path, target) if find_spec else None

            if spec is not None:
                break
        else:
            return None

        loader = spec.loader
        exec_module = loader.exec_module

        def exec_module_then_activate(module):
            exec_module(module)
            import ninetoothed_ascend  # noqa: F401  (activates)

        # Only this loader instance, which loads only this module.
        loader.exec_module = exec_module_then_activate

        return spec


def install():
    """Activate ninetoothed-ascend when the program imports NineToothed (now, if it already has)."""

    if "ninetoothed" in sys.modules:
        import ninetoothed_ascend  # noqa: F401

        return

    if not any(isinstance(f, _ActivateAfterNineToothed) for f in sys.meta_path):
        sys.meta_path.insert(0, _ActivateAfterNineToothed())
