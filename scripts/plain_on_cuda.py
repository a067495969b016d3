"""What plain NineToothed computes on a CUDA GPU for the bad inputs that tests/jit/test_bad_inputs.py refuses or pins.

Plain NineToothed: ``ninetoothed.make``, without this package imported (run
it without ``NINETOOTHED_ASCEND=1``). Each case runs in a process of its own,
so that a CUDA error (an illegal address) ends that case only. Prints one JSON
object per case: the result as a list, or the error as ``"Type: message"``
(its first line), or the signal that ended the process.

    python scripts/plain_on_cuda.py > plain_on_cuda.json

The test that depends on it: ``test_bool_add_is_what_plain_ninetoothed_computes``
(plain's bool ``+`` is addition modulo 2, which
``test_plain_ninetoothed_adds_bool_tiles_modulo_2`` shows in the TTIR
without a GPU).
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile

#: Kernels made by plain ``ninetoothed.make``, as the tests make theirs.
KERNELS = """
import ninetoothed
import numpy
import torch
from ninetoothed import Tensor


def add_arrangement(x, y, z, BLOCK_SIZE=ninetoothed.block_size()):
    return x.tile((BLOCK_SIZE,)), y.tile((BLOCK_SIZE,)), z.tile((BLOCK_SIZE,))


def add_2d_arrangement(
    x, y, z, BLOCK_M=ninetoothed.block_size(), BLOCK_N=ninetoothed.block_size()
):
    return (
        x.tile((BLOCK_M, BLOCK_N)),
        y.tile((BLOCK_M, BLOCK_N)),
        z.tile((BLOCK_M, BLOCK_N)),
    )


def flat_arrangement(*tensors, BLOCK_SIZE=ninetoothed.block_size()):
    return tuple(tensor.flatten().tile((BLOCK_SIZE,)) for tensor in tensors)


def add_application(x, y, z):
    z = x + y  # noqa: F841


add = ninetoothed.make(add_arrangement, add_application, (Tensor(1), Tensor(1), Tensor(1)))
add_2d = ninetoothed.make(add_2d_arrangement, add_application, (Tensor(2), Tensor(2), Tensor(2)))
flat_add = ninetoothed.make(flat_arrangement, add_application, (Tensor(2), Tensor(2), Tensor(2)))
cuda = torch.device("cuda")
"""

#: Case name -> code that sets ``result`` (run after KERNELS).
CASES = {
    "bool add": """
x = torch.tensor([True, True, False, False], device=cuda)
y = torch.tensor([True, False, True, False], device=cuda)
z = torch.zeros(4, dtype=torch.bool, device=cuda)
add(x, y, z)
result = {"plain": z.tolist(), "torch": (x + y).tolist()}
""",
    "2-D add, y of shape (1, 4)": """
x = torch.ones(3, 4, device=cuda)
y = torch.arange(1.0, 5.0, device=cuda).view(1, 4)
z = torch.full((3, 4), -1.0, device=cuda)
add_2d(x, y, z)
result = {"plain": z.tolist(), "torch": (x + y).tolist()}
""",
    "2-D add, y of shape (3, 1)": """
x = torch.ones(3, 4, device=cuda)
y = torch.arange(1.0, 4.0, device=cuda).view(3, 1)
z = torch.full((3, 4), -1.0, device=cuda)
add_2d(x, y, z)
result = {"plain": z.tolist(), "torch": (x + y).tolist()}
""",
    "meta tensor read as an operand": """
x = torch.ones(4, device=cuda)
z = torch.zeros(4, device=cuda)
add(x, torch.empty(4, device="meta"), z)
torch.cuda.synchronize()
result = {"plain": z.tolist()}
""",
    "element offsets at 2**31": """
x = torch.ones(2**31 + 1, dtype=torch.int8, device=cuda)[:: 2**31]
x[1] = 5
z = torch.zeros(2, dtype=torch.int8, device=cuda)
add(x, x, z)
torch.cuda.synchronize()
result = {"plain": z.tolist(), "torch": (x + x).tolist()}
""",
    "flattened, z of another element count": """
x, y = torch.ones(4, 5, device=cuda), torch.ones(4, 5, device=cuda)
z = torch.zeros(5, 6, device=cuda)
flat_add(x, y, z)
result = {"plain": z.tolist()}
""",
    "complex64": """
x = torch.ones(4, dtype=torch.complex64, device=cuda)
add(x, x, torch.empty_like(x))
result = {"plain": "launched"}
""",
    "numpy array": """
x = torch.ones(4, device=cuda)
add(x, numpy.ones(4, dtype=numpy.float32), torch.empty_like(x))
result = {"plain": "launched"}
""",
}

#: Runs one case: NineToothed reads the arrangement's source with ``inspect``,
#: so the kernels are imported from a file (``plain_kernels.py`` in the
#: directory ``sys.argv[1]``), not executed from a string.
RUNNER = """
import json, sys
sys.path.insert(0, sys.argv[1])
from plain_kernels import *
try:
    exec(sys.argv[2])
except Exception as error:
    text = str(error).strip().splitlines()
    result = {"error": f"{type(error).__name__}: {text[0] if text else ''}"}
print(json.dumps(result))
"""


def main():
    environment = {
        name: value
        for name, value in os.environ.items()
        if name != "NINETOOTHED_ASCEND"
    }

    directory = tempfile.mkdtemp()
    pathlib.Path(directory, "plain_kernels.py").write_text(KERNELS)

    for name, code in CASES.items():
        process = subprocess.run(
            [sys.executable, "-c", RUNNER, directory, code],
            capture_output=True,
            text=True,
            env=environment,
            check=False,
        )

        if process.returncode == 0 and process.stdout.strip():
            outcome = json.loads(process.stdout.strip().splitlines()[-1])
        else:
            tail = process.stderr.strip().splitlines()
            outcome = {
                "exit": process.returncode,
                "stderr": tail[-1] if tail else "",
            }

        print(json.dumps({"case": name} | outcome))


if __name__ == "__main__":
    main()
