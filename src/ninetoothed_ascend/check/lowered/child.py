"""The child process that runs a lowered kernel in fenced memory; standard library only.

Run as ``python -I -S child.py SPEC`` by :mod:`.execution`, which reads back what
it writes. ``SPEC`` is a JSON file (:func:`.execution.run`):

* ``runtime``, ``library``: shared objects (:file:`runtime.c`, the kernel);
* ``entry``: the driver's symbol;
* ``data``: a file holding every region, each a whole number of pages;
  ``report``: the file the fault handler writes to;
* ``guard``: bytes of inaccessible memory (``PROT_NONE``) before and after
  each region;
* ``regions``: ``[file offset, bytes]`` each;
* ``arguments``: the driver's arguments before the grid,
  ``["memref", region, byte offset, elements]`` or ``["scalar", mlir type, value]``;
* ``grid``: ``[x, y, z]``.

Each region of the file is mapped shared (``MAP_SHARED | MAP_FIXED``) into
one reservation of ``PROT_NONE`` memory, between guards, so the kernel reads
and writes the file's pages and every access outside a region faults. Before
each placement it prints ``placement N``; after loading the kernel,
``base 0x...`` (the library's load address); at the end, ``done``.
"""

import ctypes
import json
import mmap
import os
import sys

_PROT_NONE = 0
_MAP_FIXED = 0x10
_MAP_NORESERVE = 0x4000

_SCALARS = {
    "i1": ctypes.c_bool,
    "i8": ctypes.c_int8,
    "i16": ctypes.c_int16,
    "i32": ctypes.c_int32,
    "i64": ctypes.c_int64,
    "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


class _Descriptor(ctypes.Structure):
    # A rank-1 memref descriptor of MLIR's C interface.
    _fields_ = [
        ("allocated", ctypes.c_void_p),
        ("aligned", ctypes.c_void_p),
        ("offset", ctypes.c_int64),
        ("size", ctypes.c_int64),
        ("stride", ctypes.c_int64),
    ]


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def main(spec_path):
    with open(spec_path) as file:
        spec = json.load(file)

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    runtime = ctypes.CDLL(spec["runtime"], mode=ctypes.RTLD_GLOBAL)
    kernel = ctypes.CDLL(spec["library"])
    entry = getattr(kernel, spec["entry"])
    entry.restype = None
    info = _DlInfo()
    libc.dladdr(ctypes.cast(entry, ctypes.c_void_p), ctypes.byref(info))
    _say(base=info.dli_fbase)
    report = os.open(spec["report"], os.O_WRONLY | os.O_APPEND)

    if runtime.ntl_install(report) != 0:
        raise OSError(ctypes.get_errno(), "cannot install the fault handler")

    data = os.open(spec["data"], os.O_RDWR)
    bases = _map(libc, data, spec["regions"], mmap.PAGESIZE, spec["guard"])
    arguments = []

    for argument in spec["arguments"]:
        if argument[0] == "memref":
            _, region, offset, elements = argument
            address = bases[region] + offset
            descriptor = _Descriptor(address, address, 0, elements, 1)
            arguments.append(ctypes.byref(descriptor))
        else:
            _, kind, value = argument
            arguments.append(_SCALARS[kind](value))

    _say(bases=bases)
    entry(*arguments, *(ctypes.c_int32(value) for value in spec["grid"]))
    _say(done=True)


def _say(**message):
    print(json.dumps(message), flush=True)


def _map(libc, data, regions, page, guard):
    total = guard + sum(-(-size // page) * page + guard for _, size in regions)
    reserved = libc.mmap(
        None,
        total,
        _PROT_NONE,
        mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_NORESERVE,
        -1,
        0,
    )

    if reserved in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "cannot reserve the fenced memory")

    bases, position = [], reserved + guard

    for offset, size in regions:
        bases.append(position)
        length = -(-size // page) * page

        if length:
            mapped = libc.mmap(
                position,
                length,
                mmap.PROT_READ | mmap.PROT_WRITE,
                mmap.MAP_SHARED | _MAP_FIXED,
                data,
                offset,
            )

            if mapped != position:
                raise OSError(ctypes.get_errno(), "cannot map a region")

        position += length + guard

    return bases


if __name__ == "__main__":
    main(sys.argv[1])
