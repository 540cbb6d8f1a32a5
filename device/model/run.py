"""`run_package`: load a package into the model, run its steps in order, read the outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.model.cycles import exchange_step_cycles
from device.model.errors import ModelError
from device.model.fabric import check_row_ids, run_exchange_phase
from device.model.host import read_outputs, write_inputs
from device.model.kernel_impls import run_kernel_step
from device.model.memory import TileMemory
from device.package import ExchangeStep, KernelStep, Package
from device.target import IPU21, Target


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


def load_images(memory: TileMemory, package: Package) -> list[tuple[int, int, np.ndarray]]:
    """Write every tile's image (its exchange rows at their slot addresses); returns the
    (tile, address, words) segments written."""
    segments = []
    for tile in range(package.tiles):
        for address, words in package.tile_image(tile):
            memory.write_words(tile, address, words,
                               f"loading the image of tile {tile} (segment at {address:#x})")
            segments.append((tile, address, np.asarray(words, dtype=np.uint32)))
    return segments


def check_images_intact(memory: TileMemory, segments, after: str) -> None:
    """Each image segment still holds its words: two rows sharing a slot with different
    words, or host data written over a row, would otherwise run a different row silently."""
    for tile, address, words in segments:
        if not np.array_equal(memory.read_words(tile, address, words.size), words):
            raise ModelError(
                f"tile {tile}: the exchange row at {address:#x} ({words.size} words) is "
                f"overwritten {after}"
            )


def step_label(index: int, step) -> str:
    provenance = getattr(step, "provenance", "")  # an unknown step type may have none
    return f"step {index}" + (f" ({provenance})" if provenance else "")


def run_package(package: Package, inputs: dict[str, np.ndarray],
                target: Target = IPU21) -> RunResult:
    check_package_target(package, target)
    for index, step in enumerate(package.steps):  # the image loader indexes row_id and rows
        if isinstance(step, ExchangeStep):
            check_row_ids(package, step, step_label(index, step))
    memory = TileMemory(target, package.tiles)
    segments = load_images(memory, package)
    check_images_intact(memory, segments, "by another row of the tile image")
    write_inputs(memory, package, inputs)
    check_images_intact(memory, segments, "by an input shard")
    latency = target.latency_matrix(package.tiles)
    cycles_by_step: list[int] = []
    errors: list[str] = []
    for index, step in enumerate(package.steps):
        where = step_label(index, step)
        if isinstance(step, ExchangeStep):
            phase = run_exchange_phase(memory, package, step, where, target, latency)
            errors.extend(phase.errors)
            cycles_by_step.append(exchange_step_cycles(phase.events, target))
        elif isinstance(step, KernelStep):
            cycles_by_step.append(run_kernel_step(memory, step, where, target))
        else:
            raise ModelError(f"{where}: unknown step type {type(step).__name__}")
    return RunResult(read_outputs(memory, package), sum(cycles_by_step), cycles_by_step, errors)
