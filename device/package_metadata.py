"""The package's files and its ``metadata.json``: steps 1 and 2 of the package schema
(`device/package_schema.py` checks the archive and its arrays, and loads the package).

1. each file is opened without following symbolic links, must be a regular file and is read
   only up to its size limit (`FILE_LIMITS`);
2. ``metadata.json`` is parsed and every field checked for type and range (target, tile
   count, step kinds, kernel symbols known to the ABI registry with their scalar counts, row
   addresses inside tile memory, host tensor shapes bounded by the device).

Every violation is one `PackageError` whose message starts with the file and the field,
``pkg/metadata.json: steps[3].row_address: ...``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device.kernels import KERNELS
from device.layouts import FP8_SCALE_RANGE, ORDERS, check_order, shard_bytes
from device.limits import (  # the limits, documented in docs/internals.md
    ARCHIVE,
    ASSEMBLY,
    FILE_LIMITS,
    MAX_LOOP_COUNT,
    MAX_LOOP_DEPTH,
    MAX_RANK,
    MAX_ROWS,
    MAX_STEPS,
    MAX_TENSORS,
    MAX_TEXT,
    METADATA,
    SOURCE,
)
from device.package_parts import FORMAT_VERSION, PackageError
from device.target import IPU21, WORD_BYTES, Precision, Target

# Scalars of one kernel call: its named scalars, then (descriptor kernels) a descriptor of
# 4 * rank + 6 words per pointer and (view kernels) an index view of 3 * rank + 1 words; at
# MAX_RANK, attention's are the most (179). test_package_schema checks the bound covers them.
MAX_SCALARS = 256
# Kernel scalars are 32-bit fields of the worker's vertex state (device/kernels.py): signed
# or unsigned, they must fit in one word.
SCALAR_RANGE = (-(1 << 31), (1 << 32) - 1)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.$-]*")
TOP_LEVEL_KEYS = ("format_version", "target", "tiles", "function", "row_count", "pipeline",
                  "steps", "inputs", "outputs", "metadata")
STEP_KEYS = {"exchange": ("kind", "row_address", "provenance"),
             "kernel": ("kind", "symbol", "scalars", "provenance"),
             "loop": ("kind", "count", "length", "provenance")}
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
    and at most `MAX_LOOP_DEPTH` loops are open at once; returns each step's enclosing loop
    counts. What the unrolled program costs is `check_model_time`'s (device/package_schema.py)."""
    counts: list[tuple[int, ...]] = []
    open_loops: list[tuple[int, int]] = []  # (index past the body, count)
    for index, step in enumerate(steps):
        while open_loops and open_loops[-1][0] <= index:
            open_loops.pop()
        counts.append(tuple(count for _, count in open_loops))
        if step["kind"] != "loop":
            continue
        end, limit = index + 1 + step["length"], open_loops[-1][0] if open_loops else len(steps)
        if end > limit:
            raise fields.error(f"steps[{index}].length", f"a body of {step['length']} steps "
                                                         f"ends past its enclosing body (step {limit})")
        if len(open_loops) == MAX_LOOP_DEPTH:
            raise fields.error(f"steps[{index}]", f"a loop nested {MAX_LOOP_DEPTH + 1} deep (at "
                                                  f"most {MAX_LOOP_DEPTH}: MAX_LOOP_DEPTH, "
                                                  "device/limits.py)")
        open_loops.append((end, step["count"]))
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
        start, end = target.row_memory
        address = fields.integer(step["row_address"], f"{where}.row_address", start, end - 1)
        if address % WORD_BYTES:
            raise fields.error(f"{where}.row_address", f"{address:#x} is not word aligned")
        return step
    symbol = fields.text(step["symbol"], f"{where}.symbol")
    if symbol not in KERNELS:
        raise fields.error(f"{where}.symbol", f"unknown kernel '{symbol}'; the ABI registry "
                           f"(device/kernels.py) knows {', '.join(sorted(KERNELS))}")
    abi = KERNELS[symbol]
    scalars = fields.integers(step["scalars"], f"{where}.scalars", *SCALAR_RANGE,
                              limit=MAX_SCALARS)
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
    if "estimated_cycles" in extra:  # the selector's estimate, which ipu-run prints
        fields.integer(extra["estimated_cycles"], "metadata.estimated_cycles", 0, 2**63 - 1)
    return extra
