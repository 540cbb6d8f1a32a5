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
   memory (kernel footprints from the registry), shard origins on a grid covering the tensor, and no
   two inputs (no two outputs) sharing a byte of a tile (an input and an output may: memory
   placement reuses a dead input's bytes).

Steps 1 and 2 are `device/package_metadata.py`'s; this module checks the archive and its
values (3 and 4) and gives the `Package`'s fields (`package_fields`).

Every violation is one `PackageError` whose message starts with the file and the field,
``pkg/metadata.json: steps[3].row_address: ...``. Word values need no range check: the row
words must be stored as uint32.
"""

from __future__ import annotations

import io
import math
import re
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from device.kernel_abi import KernelAbi
from device.kernels import KERNELS
from device.layouts import shard_bytes
from device.limits import (
    MAX_ARRAY_BYTES,
    MAX_MODEL_SECONDS,
    MODEL_SECONDS_PER_STEP,
    MODEL_SECONDS_PER_TILE_STEP,
    NPY_HEADER_LIMIT,
)
from device.package_metadata import (
    ARCHIVE,
    ASSEMBLY,
    METADATA,
    SOURCE,
    Fields,
    Metadata,
    TensorSpec,
    check_metadata,
    parse_metadata,
    read_file,
    read_text,
)
from device.package_parts import (
    ExchangeStep,
    HostTensor,
    KernelStep,
    LoopStep,
    PackageError,
    Step,
    flat_steps,
)
from device.target import WORD_BYTES, Target

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
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error,
            NotImplementedError) as error:  # zipfile: a version or method it does not read
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
    start, end = meta.target.row_memory
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
        start, end = target.row_memory
        if step["row_address"] + longest * WORD_BYTES > end:
            raise PackageError(
                f"{archive.path.parent / METADATA}: steps[{index}].row_address: a row of "
                f"{longest} words at {step['row_address']:#x} ends past the standard memory "
                f"rows may take [{start:#x}, {end:#x})")
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
    return (pointers + np.minimum(travel, 0).sum(axis=0),
            pointers + np.maximum(travel, 0).sum(axis=0))


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
    """Shards are the cells of a grid of padded rectangles from the origin, and every cell has
    one: an origin off the grid or a cell without a shard would leave elements unwritten or
    unread. The grid covers the tensor and may extend past it (a format with more partitions
    than blocks gives a tile a shard that is all padding, which the host writes as zeros)."""
    padded = np.asarray(spec.padded, dtype=np.int64)
    off_grid = np.flatnonzero((origins % padded).any(axis=1))
    if off_grid.size:
        raise archive.error(name, f"shard {int(off_grid[0])} starts at "
                                  f"{origins[off_grid[0]].tolist()}, not a multiple of the "
                                  f"padded shard {list(spec.padded)}")
    cells = np.maximum(-(-np.asarray(spec.shape, dtype=np.int64) // padded),
                       origins.max(axis=0, initial=0) // padded + 1)
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
    for axis, size in enumerate(spec.padded):  # the grid has at most one cell per shard
        check_range(archive, f"{prefix}_origins", origins[:, axis], 0, size * (count - 1),
                    f"axis {axis} origin")
    check_shard_grid(archive, f"{prefix}_origins", origins, spec)
    return HostTensor(spec.name, spec.shape, spec.precision, spec.order, spec.padded, tiles,
                      addresses, origins, spec.scale)


# Inputs are all written before the run and outputs all read after it, so place-memory keeps
# the tensors of one role apart (all inputs are live at the start, all outputs at the end). An
# input and an output may share memory: the input is dead before the output is written, which
# only the program's order shows, so that pair is not checked here.
ROLE_TIMES = {"inputs": "the host writes every input before the run",
              "outputs": "the host reads every output after the run"}


def check_disjoint_roles(archive: Archive, tensors: list[HostTensor],
                         specs: list[TensorSpec]) -> None:
    """No two inputs (and no two outputs) hold a byte of one tile in common."""
    for role, when in ROLE_TIMES.items():
        group = [(t, s) for t, s in zip(tensors, specs, strict=True) if s.role == role]
        if len(group) < 2:
            continue
        tile = np.concatenate([t.tiles for t, _ in group]).astype(np.int64)
        start = np.concatenate([t.addresses for t, _ in group]).astype(np.int64)
        size = np.concatenate([np.full(t.shard_count(), shard_bytes(s.padded, s.precision))
                               for t, s in group])
        owner = np.concatenate([np.full(t.shard_count(), k) for k, (t, _) in enumerate(group)])
        order = np.lexsort((owner, start, tile))  # by tile, then address
        tile, start, end, owner = tile[order], start[order], start[order] + size[order], owner[order]
        # sorted by start, some two shards of a tile overlap iff two neighbours do
        clash = np.flatnonzero((tile[1:] == tile[:-1]) & (start[1:] < end[:-1]))
        if clash.size:
            k = int(clash[0])
            first, second = group[int(owner[k])][1], group[int(owner[k + 1])][1]
            raise archive.error(
                f"{second.role}{second.index}_addresses",
                f"the shard of {second.label} ('{second.name}') on tile {int(tile[k])} at "
                f"[{int(start[k + 1]):#x}, {int(end[k + 1]):#x}) overlaps that of {first.label} "
                f"('{first.name}') at [{int(start[k]):#x}, {int(end[k]):#x}); {when}, so "
                f"their shards may not share memory")


def estimated_model_seconds(meta: Metadata, program: list[Step]) -> float:
    """A floor on the model's time for one run: per executed step and per executed (step,
    tile) pair, loops unrolled (the costs measured in `device/limits.py`)."""
    steps = pairs = 0
    flat = [s for _, s in flat_steps(program)]
    for step, loops in zip(flat, meta.loop_counts, strict=True):
        if isinstance(step, ExchangeStep):
            tiles = int((step.row_id >= 0).sum())
        elif isinstance(step, KernelStep):
            tiles = int(step.tiles.shape[0])
        else:
            continue
        runs = math.prod(loops)  # at most MAX_LOOP_DEPTH factors: an exact integer
        steps, pairs = steps + runs, pairs + runs * tiles
    return steps * MODEL_SECONDS_PER_STEP + pairs * MODEL_SECONDS_PER_TILE_STEP


def check_model_time(archive: Archive, meta: Metadata, program: list[Step],
                     max_model_seconds: float) -> None:
    """A loaded package is untrusted: a run the model would spend more than
    `max_model_seconds` on (estimated) is refused before it starts."""
    seconds = estimated_model_seconds(meta, program)
    if seconds > max_model_seconds:
        raise PackageError(f"{archive.path.parent / METADATA}: steps: a run would take the "
                           f"device model about {seconds:.3g} s, loops unrolled (at most "
                           f"{max_model_seconds:.3g} s: MAX_MODEL_SECONDS, device/limits.py; "
                           "ipu-run --max-model-seconds raises it)")


# ---- the whole package -----------------------------------------------------------------------


def package_fields(directory: str | Path,
                   max_model_seconds: float = MAX_MODEL_SECONDS) -> dict[str, Any]:
    """The checked contents of a package directory: the arguments of `Package`; a run of
    it must be estimated to take the model at most `max_model_seconds`."""
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
        check_model_time(archive, meta, steps, max_model_seconds)
        tensors = [build_tensor(archive, meta, members, spec) for spec in meta.tensors]
        check_disjoint_roles(archive, tensors, meta.tensors)
    assembly = read_text(directory, ASSEMBLY, required=False) or ""
    source = read_text(directory, SOURCE, required=False) or ""
    return dict(
        target=meta.target.name, tiles=meta.tiles, rows=rows, steps=steps,
        inputs=[t for t, s in zip(tensors, meta.tensors, strict=True) if s.role == "inputs"],
        outputs=[t for t, s in zip(tensors, meta.tensors, strict=True) if s.role == "outputs"],
        function=meta.function, assembly=assembly, metadata=meta.extra, source=source,
        pipeline=meta.pipeline,
    )
