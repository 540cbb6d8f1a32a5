"""The package schema: what `Package.load` accepts, checked before anything is run.

A package is a directory people copy between machines, so loading one is parsing untrusted
input. This module reads it in an order that never allocates more than the checks allow:

1. each file is opened without following symbolic links, must be a regular file and is read
   only up to its size limit (`FILE_LIMITS`);
2. ``metadata.json`` is parsed and every field checked for type and range (target, tile
   count, step kinds, kernel symbols known to the ABI registry with their scalar counts, row
   addresses inside tile memory, host tensor shapes bounded by the device);
3. ``program.npz`` (opened with ``allow_pickle=False``) must hold exactly the members the
   metadata implies; an unknown member is an error and is never read. Each member's ``.npy``
   header (dtype, shape) is checked against the metadata before its data is read, and the
   total of the arrays is bounded (`MAX_ARRAY_BYTES`);
4. the array values are checked: row lengths, row ids in [-1, rows), kernel tiles and host
   shard tiles inside the package and unique, kernel pointers and shard bytes inside tile
   memory (kernel footprints from the registry), shard origins inside the tensor.

Every violation is one `PackageError` whose message starts with the file and the field,
``pkg/metadata.json: steps[3].row_address: ...``. Word values need no range check: the row
words must be stored as uint32.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from device.kernels import KERNELS, KernelAbi
from device.layouts import FP8_SCALE_RANGE, ORDERS, check_order, shard_bytes
from device.package import (
    FORMAT_VERSION,
    ExchangeStep,
    HostTensor,
    KernelStep,
    LoopStep,
    Package,
    PackageError,
    Step,
)
from device.target import IPU21, WORD_BYTES, Precision, Target

METADATA, ARCHIVE, ASSEMBLY, SOURCE = "metadata.json", "program.npz", "program.s", "source.mlir"
# Byte limits per file: generous for a 1472-tile program, far below what would hurt a host.
FILE_LIMITS = {METADATA: 64 << 20, ARCHIVE: 1 << 30, ASSEMBLY: 256 << 20, SOURCE: 16 << 20}
MAX_ARRAY_BYTES = 2 << 30  # all arrays of program.npz, uncompressed
MAX_STEPS = 1 << 20
MAX_ROWS = 1 << 20
MAX_TENSORS = 1 << 12
MAX_RANK = 8
MAX_TEXT = 4096  # names, provenance, the pipeline spelling
NPY_HEADER_LIMIT = 1 << 16
# Kernel scalars are 32-bit fields of the worker's vertex state (device/kernels.py): signed
# or unsigned, they must fit in one word.
SCALAR_RANGE = (-(1 << 31), (1 << 32) - 1)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]*")
TOP_LEVEL_KEYS = ("format_version", "target", "tiles", "function", "row_count", "pipeline",
                  "steps", "inputs", "outputs", "metadata")
STEP_KEYS = {"exchange": ("kind", "row_address", "provenance"),
             "kernel": ("kind", "symbol", "scalars", "provenance"),
             "loop": ("kind", "count", "length", "provenance")}
MAX_LOOP_COUNT = 1 << 20
MAX_EXECUTED_STEPS = 1 << 24  # steps a run executes, loops unrolled: bounds a run's time
TENSOR_KEYS = ("name", "shape", "precision", "order", "padded", "scale")
PROFILING = ("off", "cycles")
TARGETS = {IPU21.name: IPU21}


# ---- reading files ---------------------------------------------------------------------------


def read_file(directory: Path, name: str, required: bool = True) -> bytes | None:
    """The bytes of one package file: no symbolic link, a regular file, within its limit.
    O_NONBLOCK keeps a FIFO planted in the directory from blocking the open."""
    path = directory / name
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if required:
            raise PackageError(f"{path}: missing; a package directory holds {METADATA}, "
                               f"{ARCHIVE} and, optionally, {ASSEMBLY} and {SOURCE}") from None
        return None
    except OSError as error:
        if error.errno == errno.ELOOP or path.is_symlink():
            raise PackageError(f"{path}: is a symbolic link; package files are read only "
                               "as regular files") from None
        raise PackageError(f"{path}: cannot be read: {error.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, FIFO or device
        os.close(fd)
        raise PackageError(f"{path}: is not a regular file")
    with os.fdopen(fd, "rb") as handle:
        limit = FILE_LIMITS[name]
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise PackageError(f"{path}: larger than the {limit} bytes a package allows for it")
    return data


def read_text(directory: Path, name: str, required: bool = True) -> str | None:
    data = read_file(directory, name, required)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise PackageError(f"{directory / name}: is not UTF-8 text ({error})") from None


def reject_constant(name: str) -> Any:
    raise ValueError(f"'{name}' is not a JSON number")


def parse_metadata(directory: Path) -> dict:
    text = read_text(directory, METADATA)
    assert text is not None
    try:
        meta = json.loads(text, parse_constant=reject_constant)
    except RecursionError:
        raise PackageError(f"{directory / METADATA}: nested too deeply to be package "
                           "metadata") from None
    except ValueError as error:  # JSONDecodeError, NaN/Infinity, integers of 4300+ digits
        raise PackageError(f"{directory / METADATA}: is not valid JSON: {error}") from None
    return meta


# ---- typed access to metadata fields ---------------------------------------------------------


@dataclass(frozen=True)
class Fields:
    """Checks JSON values; every error names the file and the field's path."""

    file: str

    def error(self, where: str, problem: str) -> PackageError:
        return PackageError(f"{self.file}: {where}: {problem}")

    def record(self, value: object, where: str, keys: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.error(where, f"expected an object, got {kind_of(value)}")
        if missing := [k for k in keys if k not in value]:
            raise self.error(where, f"missing key '{missing[0]}'")
        if unknown := [k for k in value if k not in keys]:
            raise self.error(where, f"unknown key '{unknown[0]}'")
        return value

    def integer(self, value: object, where: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(where, f"expected an integer, got {kind_of(value)}")
        if not low <= value <= high:
            raise self.error(where, f"{value} is outside [{low}, {high}]")
        return value

    def text(self, value: object, where: str, choices: tuple[str, ...] | None = None) -> str:
        if not isinstance(value, str):
            raise self.error(where, f"expected a string, got {kind_of(value)}")
        if len(value) > MAX_TEXT:
            raise self.error(where, f"a string of {len(value)} characters (at most {MAX_TEXT})")
        if choices is not None and value not in choices:
            raise self.error(where, f"'{value}' is not one of {', '.join(choices)}")
        return value

    def name(self, value: object, where: str) -> str:
        text = self.text(value, where)
        if not NAME.fullmatch(text):
            raise self.error(where, f"'{text}' is not a name (letters, digits, _ . $ -)")
        return text

    def items(self, value: object, where: str, limit: int) -> list:
        if not isinstance(value, list):
            raise self.error(where, f"expected a list, got {kind_of(value)}")
        if len(value) > limit:
            raise self.error(where, f"{len(value)} entries (at most {limit})")
        return value

    def integers(self, value: object, where: str, low: int, high: int, limit: int) -> list[int]:
        return [self.integer(v, f"{where}[{i}]", low, high)
                for i, v in enumerate(self.items(value, where, limit))]


def kind_of(value: object) -> str:
    """`the number 1.5`, `a string`, `a list`: what a JSON value is, for messages."""
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"the number {json.dumps(value)[:40]}"
    names: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


# ---- metadata --------------------------------------------------------------------------------


@dataclass
class TensorSpec:
    role: str
    index: int
    name: str
    shape: tuple[int, ...]
    precision: str
    order: str
    padded: tuple[int, ...]
    scale: int

    @property
    def label(self) -> str:
        return f"{self.role}[{self.index}]"


@dataclass
class Metadata:
    target: Target
    tiles: int
    function: str
    row_count: int
    pipeline: str
    steps: list[dict]
    tensors: list[TensorSpec]
    extra: dict
    loop_counts: list[tuple[int, ...]]  # per step: the counts of its enclosing loops


def check_version(fields: Fields, meta: object) -> None:
    version = meta.get("format_version") if isinstance(meta, dict) else None
    if version != FORMAT_VERSION or isinstance(version, bool):
        raise fields.error(
            "format_version", f"the package has format {json.dumps(version)}, this ipu-stack "
            f"reads format {FORMAT_VERSION}; rebuild it (ipu-run FILE.mlir --package DIR)")


def check_metadata(fields: Fields, meta: object) -> Metadata:
    check_version(fields, meta)
    meta = fields.record(meta, "the top level", TOP_LEVEL_KEYS)
    target = TARGETS[fields.text(meta["target"], "target", tuple(TARGETS))]
    tiles = fields.integer(meta["tiles"], "tiles", 1, target.tiles)
    function = fields.name(meta["function"], "function")
    row_count = fields.integer(meta["row_count"], "row_count", 0, MAX_ROWS)
    pipeline = fields.text(meta["pipeline"], "pipeline")
    steps = [check_step(fields, s, f"steps[{i}]", target)
             for i, s in enumerate(fields.items(meta["steps"], "steps", MAX_STEPS))]
    tensors = []
    for role in ("inputs", "outputs"):
        records = fields.items(meta[role], role, MAX_TENSORS)
        tensors += [check_tensor(fields, t, role, j, target) for j, t in enumerate(records)]
        names = [t.name for t in tensors if t.role == role]
        if duplicates := sorted({n for n in names if names.count(n) > 1}):
            raise fields.error(role, f"the name '{duplicates[0]}' is used twice")
    extra = check_extra(fields, meta["metadata"], tiles, row_count)
    return Metadata(target, tiles, function, row_count, pipeline, steps, tensors, extra,
                    check_loops(fields, steps))


def check_loops(fields: Fields, steps: list[dict]) -> list[tuple[int, ...]]:
    """Each loop's body (the `length` entries after it) lies inside its enclosing loop's body,
    and the unrolled program is bounded; returns each step's enclosing loop counts."""
    counts: list[tuple[int, ...]] = []
    open_loops: list[tuple[int, int]] = []  # (index past the body, count)
    executed = [0]  # steps one iteration of each open body runs; [0]: the whole program

    def close() -> None:
        _, count = open_loops.pop()
        body = executed.pop()
        executed[-1] += count * body

    for index, step in enumerate(steps):
        while open_loops and open_loops[-1][0] <= index:
            close()
        counts.append(tuple(count for _, count in open_loops))
        if step["kind"] != "loop":
            executed[-1] += 1
            continue
        end, limit = index + 1 + step["length"], open_loops[-1][0] if open_loops else len(steps)
        if end > limit:
            raise fields.error(f"steps[{index}].length", f"a body of {step['length']} steps "
                                                         f"ends past its enclosing body (step {limit})")
        open_loops.append((end, step["count"]))
        executed.append(0)
    while open_loops:
        close()
    if executed[0] > MAX_EXECUTED_STEPS:
        raise fields.error("steps", f"the loops run {executed[0]} steps (at most "
                                    f"{MAX_EXECUTED_STEPS})")
    return counts


def check_step(fields: Fields, step: object, where: str, target: Target) -> dict:
    if not isinstance(step, dict):
        raise fields.error(where, f"expected an object, got {kind_of(step)}")
    kind = fields.text(step.get("kind"), f"{where}.kind", tuple(STEP_KEYS))
    step = fields.record(step, where, STEP_KEYS[kind])
    fields.text(step["provenance"], f"{where}.provenance")
    if kind == "loop":
        fields.integer(step["count"], f"{where}.count", 1, MAX_LOOP_COUNT)
        fields.integer(step["length"], f"{where}.length", 0, MAX_STEPS)
        return step
    if kind == "exchange":
        start, end = target.code_region
        address = fields.integer(step["row_address"], f"{where}.row_address", start, end - 1)
        if address % WORD_BYTES:
            raise fields.error(f"{where}.row_address", f"{address:#x} is not word aligned")
        return step
    symbol = fields.text(step["symbol"], f"{where}.symbol")
    if symbol not in KERNELS:
        raise fields.error(f"{where}.symbol", f"unknown kernel '{symbol}'; the ABI registry "
                           f"(device/kernels.py) knows {', '.join(sorted(KERNELS))}")
    abi = KERNELS[symbol]
    scalars = fields.integers(step["scalars"], f"{where}.scalars", *SCALAR_RANGE, limit=64)
    if not abi.accepts_scalar_count(len(scalars)):
        raise fields.error(f"{where}.scalars", f"{len(scalars)} scalar(s) for {abi.signature()}")
    return step


def check_tensor(fields: Fields, record: object, role: str, index: int,
                 target: Target) -> TensorSpec:
    where = f"{role}[{index}]"
    record = fields.record(record, where, TENSOR_KEYS)
    name = fields.name(record["name"], f"{where}.name")
    precision = fields.text(record["precision"], f"{where}.precision", tuple(Precision))
    order = fields.text(record["order"], f"{where}.order", ORDERS)
    scale = fields.integer(record["scale"], f"{where}.scale", FP8_SCALE_RANGE.start,
                           FP8_SCALE_RANGE.stop - 1)
    # No extent can exceed what the whole device stores (checked per shard count later).
    extent = target.tiles * target.sram_bytes
    shape = tuple(fields.integers(record["shape"], f"{where}.shape", 1, extent, MAX_RANK))
    padded = tuple(fields.integers(record["padded"], f"{where}.padded", 1, extent, MAX_RANK))
    if not shape or len(padded) != len(shape):
        raise fields.error(f"{where}.padded", f"shape {list(shape)} and padded shard "
                           f"{list(padded)} need the same rank >= 1")
    if shard_bytes(padded, precision) > target.sram_bytes:
        raise fields.error(f"{where}.padded", f"a {list(padded)} {precision} shard is larger "
                           f"than tile memory ({target.sram_bytes} bytes)")
    if scale and precision != Precision.F8F143:
        raise fields.error(f"{where}.scale", f"{scale} on a {precision} tensor; only "
                           f"{Precision.F8F143} tensors are scaled")
    try:
        check_order(order, padded, precision)
    except ValueError as error:
        raise fields.error(f"{where}.order", str(error)) from None
    return TensorSpec(role, index, name, shape, precision, order, padded, scale)


def check_extra(fields: Fields, extra: object, tiles: int, row_count: int) -> dict:
    """The free-form `metadata` object: the keys tools read are checked, others kept."""
    if not isinstance(extra, dict):
        raise fields.error("metadata", f"expected an object, got {kind_of(extra)}")
    if "row_symbols" in extra:
        symbols = fields.items(extra["row_symbols"], "metadata.row_symbols", row_count)
        for i, symbol in enumerate(symbols):
            fields.text(symbol, f"metadata.row_symbols[{i}]")
    if "tiles_used" in extra:
        fields.integer(extra["tiles_used"], "metadata.tiles_used", 0, tiles)
    if "profiling" in extra:
        fields.text(extra["profiling"], "metadata.profiling", PROFILING)
    return extra


# ---- the archive -----------------------------------------------------------------------------


@dataclass
class Member:
    """One expected array: its dtype and a check of its shape (given the header's shape)."""

    dtype: np.dtype
    shape: Callable[[tuple[int, ...]], str | None]  # None when the shape is right, else why


def exact(expected: tuple[int, ...]) -> Callable[[tuple[int, ...]], str | None]:
    def check(shape: tuple[int, ...]) -> str | None:
        return None if shape == expected else f"expected shape {expected}"
    return check


def shards(tiles: int, columns: int | None = None) -> Callable[[tuple[int, ...]], str | None]:
    """A per-shard (or per-tile-call) array: 1 .. tiles rows, and `columns` if given."""
    def check(shape: tuple[int, ...]) -> str | None:
        rank = 1 if columns is None else 2
        if len(shape) != rank or not 1 <= shape[0] <= tiles:
            return f"expected {rank} axes and 1 to {tiles} entries on the first"
        if columns is not None and shape[1] != columns:
            return f"expected {columns} columns"
        return None
    return check


I32, I64, U32 = np.dtype("<i4"), np.dtype("<i8"), np.dtype("<u4")


def expected_members(meta: Metadata) -> dict[str, Member]:
    members = {"row_lengths": Member(I64, exact((meta.row_count,)))}
    for i, (step, loops) in enumerate(zip(meta.steps, meta.loop_counts, strict=True)):
        if step["kind"] == "exchange":
            members[f"step{i}_row_id"] = Member(I32, exact((meta.tiles,)))
        elif step["kind"] == "kernel":
            members[f"step{i}_tiles"] = Member(I32, shards(meta.tiles))
            pointers = len(KERNELS[step["symbol"]].pointers)
            members[f"step{i}_pointers"] = Member(I64, shards(meta.tiles, pointers))
            if loops:
                members[f"step{i}_pointer_strides"] = Member(I64, exact((len(loops), pointers)))
    for t in meta.tensors:
        members[f"{t.role}{t.index}_tiles"] = Member(I32, shards(meta.tiles))
        members[f"{t.role}{t.index}_addresses"] = Member(I64, shards(meta.tiles))
        members[f"{t.role}{t.index}_origins"] = Member(I64, shards(meta.tiles, len(t.shape)))
    return members


@dataclass
class Archive:
    """program.npz, read member by member after its header is checked."""

    path: Path
    npz: Any  # numpy's NpzFile
    budget: int
    arrays: dict[str, np.ndarray] = field(default_factory=dict)

    def error(self, member: str, problem: str) -> PackageError:
        return PackageError(f"{self.path}: member '{member}': {problem}")

    def check_members(self, expected: set[str]) -> None:
        names = list(self.npz.zip.namelist())
        if len(set(names)) != len(names):
            raise PackageError(f"{self.path}: a member name appears twice in the archive")
        for info in self.npz.zip.infolist():
            key = info.filename.removesuffix(".npy")
            if key not in expected or not info.filename.endswith(".npy"):
                raise self.error(info.filename, "not a member of a package with this metadata "
                                                "(not loaded)")
            if info.flag_bits & 0x1:  # zipfile would ask for a password (a RuntimeError)
                raise self.error(info.filename, "is marked encrypted; package members are not")
        present = {n.removesuffix(".npy") for n in names}
        if missing := sorted(expected - present, key=natural_order):
            raise self.error(missing[0], "missing")

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        with self.npz.zip.open(f"{name}.npy") as handle:
            version = np.lib.format.read_magic(handle)
            if version == (1, 0):
                shape, _, dtype = np.lib.format.read_array_header_1_0(
                    handle, max_header_size=NPY_HEADER_LIMIT)
            elif version == (2, 0):
                shape, _, dtype = np.lib.format.read_array_header_2_0(
                    handle, max_header_size=NPY_HEADER_LIMIT)
            else:
                raise self.error(name, f".npy format version {version} is not read")
        return shape, dtype

    def load(self, name: str, member: Member) -> np.ndarray:
        try:
            shape, dtype = self.header(name)
            if dtype != member.dtype:
                raise self.error(name, f"dtype {dtype}, expected {member.dtype}")
            if (problem := member.shape(shape)) is not None:
                raise self.error(name, f"shape {shape}: {problem}")
            nbytes = math.prod(shape) * dtype.itemsize
            if nbytes > self.budget:
                raise PackageError(f"{self.path}: the arrays exceed {MAX_ARRAY_BYTES} bytes")
            self.budget -= nbytes
            array = self.npz[name]
        except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
                NotImplementedError) as error:
            if isinstance(error, PackageError):
                raise
            raise self.error(name, f"cannot be read: {error}") from None
        self.arrays[name] = array
        return array


def natural_order(name: str) -> tuple:
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name))


def open_archive(directory: Path) -> Archive:
    data = read_file(directory, ARCHIVE)
    assert data is not None
    path = directory / ARCHIVE
    try:
        npz = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        raise PackageError(f"{path}: is not a NumPy .npz archive: {error}") from None
    if not hasattr(npz, "zip"):  # a single .npy array, not an archive
        raise PackageError(f"{path}: is not a NumPy .npz archive")
    return Archive(path, npz, MAX_ARRAY_BYTES)


# ---- values ----------------------------------------------------------------------------------


def outside(values: np.ndarray, low: int, high: int) -> int | None:
    """Index of the first value outside [low, high], if any."""
    bad = np.flatnonzero((values < low) | (values > high))
    return int(bad[0]) if bad.size else None


def check_range(archive: Archive, name: str, values: np.ndarray, low: int, high: int,
                what: str, hexadecimal: bool = False) -> None:
    flat = values.reshape(-1)
    if (index := outside(flat, low, high)) is not None:
        shown = (lambda v: f"{v:#x}") if hexadecimal else str
        raise archive.error(name, f"{what} {shown(int(flat[index]))} (entry {index}) is "
                                  f"outside [{shown(low)}, {shown(high)}]")


def check_unique(archive: Archive, name: str, tiles: np.ndarray) -> None:
    values, counts = np.unique(tiles, return_counts=True)
    if (counts > 1).any():
        raise archive.error(name, f"tile {int(values[counts > 1][0])} is listed twice")


def load_rows(archive: Archive, meta: Metadata) -> list[np.ndarray]:
    lengths = archive.load("row_lengths", Member(I64, exact((meta.row_count,))))
    start, end = meta.target.code_region
    check_range(archive, "row_lengths", lengths, 1, (end - start) // WORD_BYTES, "row length")
    words = archive.load("row_words", Member(U32, exact((int(lengths.sum()),))))
    return list(np.split(words, np.cumsum(lengths)[:-1])) if meta.row_count else []


def build_step(archive: Archive, meta: Metadata, rows: list[np.ndarray], members: dict,
               index: int) -> Step:
    step = meta.steps[index]
    target = meta.target
    if step["kind"] == "loop":
        return LoopStep(step["count"], [], step["provenance"])
    if step["kind"] == "exchange":
        name = f"step{index}_row_id"
        row_id = archive.load(name, members[name])
        check_range(archive, name, row_id, -1, meta.row_count - 1, "row id")
        used = np.unique(row_id[row_id >= 0])
        longest = max((len(rows[int(r)]) for r in used), default=0)
        if step["row_address"] + longest * WORD_BYTES > target.code_region[1]:
            raise PackageError(
                f"{archive.path.parent / METADATA}: steps[{index}].row_address: a row of "
                f"{longest} words at {step['row_address']:#x} ends past the code region "
                f"[{target.code_region[0]:#x}, {target.code_region[1]:#x})")
        return ExchangeStep(step["row_address"], row_id, step["provenance"])
    tiles_name, pointers_name = f"step{index}_tiles", f"step{index}_pointers"
    tiles = archive.load(tiles_name, members[tiles_name])
    check_range(archive, tiles_name, tiles, 0, meta.tiles - 1, "tile")
    check_unique(archive, tiles_name, tiles)
    pointers = archive.load(pointers_name, members[pointers_name])
    if pointers.shape[0] != tiles.shape[0]:
        raise archive.error(pointers_name, f"{pointers.shape[0]} rows for {tiles.shape[0]} tiles")
    abi = KERNELS[step["symbol"]]
    strides = load_strides(archive, members, index, meta.loop_counts[index], target)
    for extreme in pointer_extremes(pointers, strides, meta.loop_counts[index]):
        check_pointers(archive, pointers_name, extreme, abi, step["scalars"], target)
    return KernelStep(step["symbol"], tiles, pointers, tuple(step["scalars"]),
                      step["provenance"], strides)


def load_strides(archive: Archive, members: dict, index: int, loops: tuple[int, ...],
                 target: Target) -> np.ndarray | None:
    if not loops:
        return None
    name = f"step{index}_pointer_strides"
    strides = archive.load(name, members[name])
    span = target.memory_end - target.memory_base
    check_range(archive, name, strides, -span, span, "pointer stride")
    return strides


def pointer_extremes(pointers: np.ndarray, strides: np.ndarray | None,
                     loops: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """The lowest and highest pointers over every iteration of the enclosing loops (they
    advance linearly, so the first and last iterations bound them)."""
    if strides is None:
        return (pointers,)
    travel = strides * (np.asarray(loops, dtype=np.int64)[:, None] - 1)
    return (pointers + np.minimum(travel, 0).sum(axis=0), pointers + np.maximum(travel, 0).sum(axis=0))


def nested(flat: list[Step], meta: Metadata) -> list[Step]:
    """The program from its pre-order entries: each loop takes the `length` entries after
    it as its body (`check_loops` has checked that they nest)."""
    program: list[Step] = []
    bodies: list[tuple[int, list[Step]]] = [(len(flat), program)]
    for index, step in enumerate(flat):
        while bodies[-1][0] <= index:
            bodies.pop()
        bodies[-1][1].append(step)
        if isinstance(step, LoopStep):
            bodies.append((index + 1 + meta.steps[index]["length"], step.body))
    return program


def check_pointers(archive: Archive, name: str, pointers: np.ndarray, abi: KernelAbi,
                   scalars: list[int], target: Target) -> None:
    """Every pointer inside tile memory, with the bytes the kernel reads or writes there."""
    try:  # a malformed descriptor or a negative count gives no footprint
        footprint = abi.footprint_of(scalars) or {}
    except ValueError as error:
        raise archive.error(name, f"the scalars of {abi.symbol} give no footprint: {error}") from None
    for column, operand in enumerate(abi.pointers):
        nbytes = max(footprint.get(operand, 0), 0)
        check_range(archive, name, pointers[:, column], target.memory_base,
                    target.memory_end - nbytes, f"pointer '{operand}' (+{nbytes} bytes)", hexadecimal=True)


def check_shard_grid(archive: Archive, name: str, origins: np.ndarray, spec: TensorSpec) -> None:
    """Shards are the cells of a grid of padded rectangles, and every cell has one: an origin
    off the grid or a cell without a shard would leave elements unwritten or unread."""
    padded = np.asarray(spec.padded, dtype=np.int64)
    off_grid = np.flatnonzero((origins % padded).any(axis=1))
    if off_grid.size:
        raise archive.error(name, f"shard {int(off_grid[0])} starts at "
                                  f"{origins[off_grid[0]].tolist()}, not a multiple of the "
                                  f"padded shard {list(spec.padded)}")
    cells = -(-np.asarray(spec.shape, dtype=np.int64) // padded)
    covered = np.unique(origins // padded, axis=0).shape[0]
    if covered != math.prod(cells.tolist()):
        raise archive.error(name, f"the shards cover {covered} of the {math.prod(cells.tolist())} "
                                  f"cells of a {list(spec.shape)} tensor in {list(spec.padded)} "
                                  "shards")


def build_tensor(archive: Archive, meta: Metadata, members: dict, spec: TensorSpec) -> HostTensor:
    target = meta.target
    prefix = f"{spec.role}{spec.index}"
    tiles = archive.load(f"{prefix}_tiles", members[f"{prefix}_tiles"])
    check_range(archive, f"{prefix}_tiles", tiles, 0, meta.tiles - 1, "tile")
    check_unique(archive, f"{prefix}_tiles", tiles)
    count = tiles.shape[0]
    if math.prod(spec.shape) > count * math.prod(spec.padded):
        raise PackageError(
            f"{archive.path.parent / METADATA}: {spec.label}.shape: {list(spec.shape)} has "
            f"more elements than its {count} shard(s) of {list(spec.padded)} hold")
    addresses = archive.load(f"{prefix}_addresses", members[f"{prefix}_addresses"])
    origins = archive.load(f"{prefix}_origins", members[f"{prefix}_origins"])
    for name, array in ((f"{prefix}_addresses", addresses), (f"{prefix}_origins", origins)):
        if array.shape[0] != count:
            raise archive.error(name, f"{array.shape[0]} rows for {count} shards")
    nbytes = shard_bytes(spec.padded, spec.precision)
    check_range(archive, f"{prefix}_addresses", addresses, target.memory_base,
                target.memory_end - nbytes, f"shard address (+{nbytes} bytes)", hexadecimal=True)
    for axis, extent in enumerate(spec.shape):
        check_range(archive, f"{prefix}_origins", origins[:, axis], 0, extent - 1,
                    f"axis {axis} origin")
    check_shard_grid(archive, f"{prefix}_origins", origins, spec)
    return HostTensor(spec.name, spec.shape, spec.precision, spec.order, spec.padded, tiles,
                      addresses, origins, spec.scale)


# ---- the whole package -----------------------------------------------------------------------


def load_package(directory: str | Path) -> Package:
    directory = Path(directory)
    if not directory.is_dir():
        raise PackageError(f"{directory}: is not a package directory")
    meta = check_metadata(Fields(str(directory / METADATA)), parse_metadata(directory))
    archive = open_archive(directory)
    members = expected_members(meta)
    archive.check_members(set(members) | {"row_words"})
    with archive.npz:
        rows = load_rows(archive, meta)
        steps = nested([build_step(archive, meta, rows, members, i)
                        for i in range(len(meta.steps))], meta)
        tensors = [build_tensor(archive, meta, members, spec) for spec in meta.tensors]
    assembly = read_text(directory, ASSEMBLY, required=False) or ""
    source = read_text(directory, SOURCE, required=False) or ""
    return Package(
        meta.target.name, meta.tiles, rows, steps,
        [t for t, s in zip(tensors, meta.tensors, strict=True) if s.role == "inputs"],
        [t for t, s in zip(tensors, meta.tensors, strict=True) if s.role == "outputs"],
        meta.function, assembly, meta.extra, source=source, pipeline=meta.pipeline,
    )
