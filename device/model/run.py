"""`run_package`: load a package into the model, run its steps in order, read the outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.model.cycles import exchange_step_cycles
from device.model.errors import ModelError
from device.model.fabric import RunCache, check_row_ids, run_exchange_phase
from device.model.host import read_outputs, write_inputs
from device.model.kernel_steps import run_kernel_step
from device.model.memory import TileMemory
from device.package import ExchangeStep, KernelStep, Package, executed_count, flat_steps
from device.target import IPU21, WORD_BYTES, Target


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    cycles: int
    cycles_by_step: list[int]
    exchange_errors: list[str] = field(default_factory=list)


def check_package_target(package: Package, target: Target) -> None:
    if package.target != target.name:
        raise ModelError(f"the package is for target '{package.target}', the model runs "
                         f"'{target.name}'")
    if not 1 <= package.tiles <= target.tiles:
        raise ModelError(f"the package uses {package.tiles} tiles; {target.name} has "
                         f"{target.tiles}")


@dataclass(frozen=True)
class ImageSegment:
    """One row of the tile images: `words` at `address` on each of `tiles` (ascending)."""

    step: int  # its position in the tile's image
    address: int
    words: np.ndarray
    tiles: np.ndarray


def image_segments(package: Package) -> list[ImageSegment]:
    """Every tile's image (`Package.tile_image`), as one segment per step and row; a
    package type with its own `tile_image` is asked tile by tile."""
    segments = []
    if type(package).tile_image is not Package.tile_image:
        for tile in range(package.tiles):
            for position, (address, words) in enumerate(package.tile_image(tile)):
                segments.append(ImageSegment(position, address,
                                             np.asarray(words, dtype=np.uint32),
                                             np.array([tile])))
        return segments
    for index, step in enumerate(s for _, s in flat_steps(package.steps)):
        if isinstance(step, ExchangeStep):
            row_id = np.asarray(step.row_id).reshape(-1)
            for rid in np.unique(row_id[row_id >= 0]).tolist():
                segments.append(ImageSegment(index, step.row_address,
                                             np.asarray(package.rows[rid], dtype=np.uint32),
                                             np.flatnonzero(row_id == rid)))
    return segments


def load_images(memory: TileMemory, package: Package) -> list[ImageSegment]:
    """Write every tile's image (its exchange rows at their slot addresses), in step order
    as `Package.tile_image` lists them; returns the segments written."""
    segments = image_segments(package)
    outside = [s for s in segments if s.address < memory.base
               or s.address + s.words.size * WORD_BYTES > memory.end]
    if outside:  # the message names the first tile (and its first such segment)
        bad = min(outside, key=lambda s: (int(s.tiles[0]), s.step))
        tile = int(bad.tiles[0])
        memory.write_words(tile, bad.address, bad.words,
                           f"loading the image of tile {tile} (segment at {bad.address:#x})")
    for segment in segments:
        memory.write_tile_bytes(segment.tiles, segment.address,
                                segment.words.view(np.uint8)[None, :])
    return segments


def check_images_intact(memory: TileMemory, segments: list[ImageSegment], after: str) -> None:
    """Each image segment still holds its words: two rows sharing a slot with different
    words, or host data written over a row, would otherwise run a different row silently."""
    broken = []
    for segment in segments:
        first = memory.word_index(segment.address)
        held = memory.all_words[segment.tiles, first:first + segment.words.size]
        changed = np.flatnonzero(~(held == segment.words).all(axis=1))
        if changed.size:
            broken.append((int(segment.tiles[changed[0]]), segment.step, segment))
    if broken:
        tile, _, segment = min(broken, key=lambda b: b[:2])
        raise ModelError(
            f"tile {tile}: the exchange row at {segment.address:#x} ({segment.words.size} "
            f"words) is overwritten {after}"
        )


def step_label(index: int, step) -> str:
    provenance = getattr(step, "provenance", "")  # an unknown step type may have none
    return f"step {index}" + (f" ({provenance})" if provenance else "")


def _no_progress(items, description="", total=None):
    return items


def run_package(package: Package, inputs: dict[str, np.ndarray],
                target: Target = IPU21, progress=_no_progress) -> RunResult:
    """Run every step; `progress(items, description, total)` wraps the step loop (for a
    progress bar, `tools.progress`)."""
    check_package_target(package, target)
    for index, (_, step) in enumerate(flat_steps(package.steps)):  # the loader indexes rows
        if isinstance(step, ExchangeStep):
            check_row_ids(package, step, step_label(index, step))
    memory = TileMemory(target, package.tiles)
    segments = load_images(memory, package)
    check_images_intact(memory, segments, "by another row of the tile image")
    write_inputs(memory, package, inputs)
    check_images_intact(memory, segments, "by an input shard")
    latency = target.latency_matrix(package.tiles)
    cache = RunCache()  # decoded rows and row lengths, shared by the phases of the run
    cycles_by_step: list[int] = []
    errors: list[str] = []
    for index, step in progress(enumerate(package.executed()), "device model",
                                executed_count(package.steps)):
        where = step_label(index, step)
        if isinstance(step, ExchangeStep):
            phase = run_exchange_phase(memory, package, step, where, target, latency,
                                       cache)
            errors.extend(phase.errors)
            cycles_by_step.append(exchange_step_cycles(phase.events, target))
        elif isinstance(step, KernelStep):
            cycles_by_step.append(run_kernel_step(memory, step, where, target))
        else:
            raise ModelError(f"{where}: unknown step type {type(step).__name__}")
    return RunResult(read_outputs(memory, package), sum(cycles_by_step), cycles_by_step, errors)
