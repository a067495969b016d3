"""Shared by the tests: loading examples and running code in fresh processes."""

import ast
import json
import os
import subprocess
import sys
import textwrap

from conftest import EXAMPLES

from ninetoothed_ascend import examples


def rewrite(pass_class, source):
    """Run one pass on ``source``; return the new source and the number of rewrites."""

    tree = ast.parse(textwrap.dedent(source))
    count = pass_class().run(tree)

    return ast.unparse(tree), count


def load_example(name):
    return examples.load_module(EXAMPLES / f"{name}.py")


def run_python(code, cache_dir, **extra_env):
    """Run ``code`` in a new interpreter with ``cache_dir`` as the cache; return its last stdout line as JSON."""

    env = os.environ | {"NINETOOTHED_ASCEND_CACHE_DIR": str(cache_dir)} | extra_env
    completed = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )

    assert completed.returncode == 0, completed.stderr

    return json.loads(completed.stdout.strip().splitlines()[-1])
