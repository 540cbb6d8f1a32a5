"""Reading `--input NAME=PATH.npy` and `--inputs FILE.npz` as untrusted files.

An input file is opened without blocking (a FIFO is refused, not waited on), must be a
regular file of at most `MAX_INPUT_FILE_BYTES` (`device/limits.py`; /dev/zero is refused,
not read until memory runs out), and each array's `.npy` header is read first (at most
`INPUT_HEADER_LIMIT` bytes) and checked against the argument it is for: a floating-point
dtype (or the argument's own storage dtype), never an object (pickled) array, and exactly the
argument's shape. Only then are its data read, exactly the bytes that shape needs: a header
claiming 10^12 elements, or an archive member whose directory entry claims 4 GiB, costs
nothing. An `.npz` archive's members are named in its directory, so an unknown or repeated
name is refused before any member is decompressed.
"""

from __future__ import annotations

import math
import os
import stat
import tokenize
import zipfile
import zlib
from collections.abc import Callable
from typing import IO

import numpy as np

from device.limits import INPUT_HEADER_LIMIT, MAX_INPUT_FILE_BYTES
from tools.usage import UsageError

Reader = Callable[[tuple[int, ...], np.dtype], np.ndarray]  # (shape, storage dtype) -> array


def open_input(path: str, label: str) -> IO[bytes]:
    """A regular file at `path`, opened for reading without blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise UsageError(f"{label}: cannot read '{path}': {error.strerror}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UsageError(f"{label}: cannot read '{path}': not a regular file (a directory, "
                         "FIFO or device is never read)")
    if info.st_size > MAX_INPUT_FILE_BYTES:
        os.close(fd)
        raise UsageError(f"{label}: '{path}' has {info.st_size} bytes (at most "
                         f"{MAX_INPUT_FILE_BYTES}: MAX_INPUT_FILE_BYTES, device/limits.py)")
    return os.fdopen(fd, "rb")


def read_npy(handle: IO[bytes], label: str, unreadable: str, shape: tuple[int, ...],
             storage: np.dtype) -> np.ndarray:
    """One array from an open .npy stream, its header checked before its data are read;
    `label` starts a message about the array, `unreadable` one about the file."""
    try:
        version = np.lib.format.read_magic(handle)
        if version not in ((1, 0), (2, 0), (3, 0)):
            raise ValueError(f".npy format version {version} is not read")
        read_header = {(1, 0): np.lib.format.read_array_header_1_0}.get(
            version, np.lib.format.read_array_header_2_0)
        claimed, fortran, dtype = read_header(handle, max_header_size=INPUT_HEADER_LIMIT)
    # numpy parses the header's Python literal with tokenize and ast: a malformed one raises
    # their errors (an unclosed bracket: TokenError), not only ValueError
    except (ValueError, SyntaxError, TypeError, RecursionError, tokenize.TokenError, OSError,
            EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise UsageError(f"{unreadable}: not a readable .npy array: {error}") from None
    if dtype.hasobject:
        raise UsageError(f"{unreadable}: holds Python objects (a pickled array), which are "
                         "never unpickled (allow_pickle=False)")
    if dtype.kind != "f" and dtype != storage:
        # integers, booleans and complex numbers would be cast silently (and lossily)
        raise UsageError(f"{label}: dtype {dtype} is not a floating-point type "
                         f"(the argument holds {storage})")
    if tuple(claimed) != tuple(shape):
        raise UsageError(f"{label}: shape {tuple(claimed)} does not match the argument's {tuple(shape)}")
    nbytes = math.prod(shape) * dtype.itemsize
    try:
        data = handle.read(nbytes)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise UsageError(f"{label}: cannot read its data: {error}") from None
    if len(data) != nbytes:
        raise UsageError(f"{label}: {len(data)} bytes of data where its header needs {nbytes}")
    array = np.frombuffer(data, dtype=dtype)
    return (array.reshape(shape[::-1]).transpose() if fortran else array.reshape(shape)).copy()


def npy_reader(path: str, label: str) -> Reader:
    """`--input NAME=PATH.npy`: read when the argument's shape is known."""
    def read(shape: tuple[int, ...], storage: np.dtype) -> np.ndarray:
        with open_input(path, label) as handle:
            if handle.read(4) == b"PK\x03\x04":  # an .npz: several arrays, which one is meant?
                raise UsageError(f"{label}: '{path}' is an .npz archive; give one array as .npy "
                                 "(np.save)")
            handle.seek(0)
            if not handle.read(1):
                raise UsageError(f"{label}: '{path}' is empty, not an .npy array")
            handle.seek(0)
            return read_npy(handle, label, f"{label}: cannot read '{path}'", shape, storage)
    return read


def archive_members(path: str) -> list[tuple[str, str, Reader]]:
    """`--inputs FILE.npz`: (argument name, label, reader) per member, from the archive's
    directory only (nothing decompressed yet)."""
    handle = open_input(path, "--inputs")
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as error:
        handle.close()
        if open_input(path, "--inputs").read(6) == b"\x93NUMPY":
            raise UsageError(f"--inputs: '{path}' is a single array, not an .npz archive of "
                             "named arrays (use --input NAME=PATH.npy)") from None
        raise UsageError(f"--inputs: cannot read '{path}': not an .npz archive ({error})") from None
    members: list[tuple[str, str, Reader]] = []
    for info in archive.infolist():
        name = info.filename.removesuffix(".npy")
        label = f"--inputs {path}: array '{name}'"
        if not info.filename.endswith(".npy") or info.flag_bits & 0x1:
            raise UsageError(f"{label}: not an .npy member (or encrypted)")

        def read(shape: tuple[int, ...], storage: np.dtype, info: zipfile.ZipInfo = info,
                 label: str = label) -> np.ndarray:
            limit = math.prod(shape) * 8 + INPUT_HEADER_LIMIT  # float64 at most, and a header
            if info.file_size > limit:
                raise UsageError(f"{label}: its {info.file_size} bytes exceed what an array of "
                                 f"shape {tuple(shape)} needs")
            try:
                with archive.open(info) as member:
                    return read_npy(member, label, f"--inputs: cannot read '{path}': array "
                                                   f"'{info.filename}'", shape, storage)
            except (zipfile.BadZipFile, NotImplementedError, RuntimeError, zlib.error,
                    OSError) as error:
                raise UsageError(f"{label}: cannot be read: {error}") from None
        members.append((name, label, read))
    return members
