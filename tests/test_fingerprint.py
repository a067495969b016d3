"""The cache key tells apart kernels whose generated code differs (issue 14, item 2).

Two kernels with one key share one cache entry: the second would run the
first one's code, in the same process or in any process sharing the cache
(xdist workers). Each test builds two definitions that NineToothed turns
into different code and asserts different keys.
"""

import functools
import sys
import textwrap
import types

from ninetoothed_ascend.jit.fingerprint import definition_digest


def _module(name, source):
    module = types.ModuleType(name)
    exec(textwrap.dedent(source), module.__dict__)

    return module


def _application(helpers):
    """The same application source, reading ``helpers.scale`` through a module global bound to ``helpers``."""

    namespace = {"helpers": helpers}
    exec(
        textwrap.dedent(
            """
            def application(input, output):
                output = helpers.scale(input)  # noqa: F841
            """
        ),
        namespace,
    )

    return namespace["application"]


def test_a_function_read_through_a_module_global_is_in_the_key():
    """NineToothed inlines ``helpers.scale``; two versions of it are two kernels (two processes, or a reloaded module)."""

    twice = _module("helpers", "def scale(x):\n    return x * 2\n")
    thrice = _module("helpers", "def scale(x):\n    return x * 3\n")

    assert definition_digest(_application(twice)) != definition_digest(
        _application(thrice)
    )


def test_a_constant_read_through_a_module_global_is_in_the_key():
    small = _module("sizes", "BLOCK = 32\n")
    large = _module("sizes", "BLOCK = 64\n")

    def arrangement_for(sizes):
        namespace = {"sizes": sizes}
        exec("def arrangement(x):\n    return x.tile((sizes.BLOCK,))\n", namespace)

        return namespace["arrangement"]

    assert definition_digest(arrangement_for(small)) != definition_digest(
        arrangement_for(large)
    )


def test_a_module_global_holding_itself_terminates():
    module = _module("loop", "def scale(x):\n    return x\n")
    module.loop = module

    namespace = {"loop": module}
    exec("def application(x):\n    return loop.loop.scale(x)\n", namespace)

    assert definition_digest(namespace["application"])


def test_objects_with_default_reprs_are_told_apart_by_their_attributes():
    """An object whose ``repr`` holds an address used to be hashed as an empty text."""

    class Config:
        def __init__(self, block):
            self.block = block

    def arrangement(x, config):
        return x.tile((config.block,))

    assert definition_digest(
        functools.partial(arrangement, config=Config(32))
    ) != definition_digest(functools.partial(arrangement, config=Config(64)))
    assert definition_digest(
        functools.partial(arrangement, config=Config(32))
    ) == definition_digest(functools.partial(arrangement, config=Config(32)))


def test_objects_without_attributes_or_a_stable_repr_never_share_a_key():
    """Nothing describes them: each gets a key of its own rather than one shared with any other."""

    class Opaque:
        __slots__ = ()

    first, second = Opaque(), Opaque()

    assert definition_digest(first) != definition_digest(second)
    assert definition_digest(first) == definition_digest(first)


def test_installed_packages_are_still_described_by_name():
    """Their behaviour is covered by their versions in the environment."""

    import ninetoothed.language as ntl

    namespace = {"ntl": ntl}
    exec("def application(x):\n    return ntl.sqrt(x)\n", namespace)

    assert definition_digest(namespace["application"])
    assert "ninetoothed.language" in sys.modules
