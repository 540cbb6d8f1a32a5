"""`run_package`: load a package into the model, run its steps in order, read the outputs."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from device.model.cycles import exchange_step_cycles
from device.model.errors import ModelError
from device.model.fabric import run_exchange_phase
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


def load_images(memory: TileMemory, package: Package) -> None:
    """Write every tile's image (its exchange rows at their slot addresses)."""
    for tile in range(package.tiles):
        for address, words in package.tile_image(tile):
            memory.write_words(tile, address, words,
                               f"loading the image of tile {tile} (segment at {address:#x})")


def run_package(package: Package, inputs: dict[str, np.ndarray],
                target: Target = IPU21) -> RunResult:
    check_package_target(package, target)
    memory = TileMemory(target, package.tiles)
    load_images(memory, package)
    write_inputs(memory, package, inputs)
    latency = target.latency_matrix(package.tiles)
    cycles_by_step: list[int] = []
    errors: list[str] = []
    for index, step in enumerate(package.steps):
        where = f"step {index}" + (f" ({step.provenance})" if step.provenance else "")
        if isinstance(step, ExchangeStep):
            phase = run_exchange_phase(memory, package, step, where, target, latency)
            errors.extend(phase.errors)
            cycles_by_step.append(exchange_step_cycles(phase.events, target))
        elif isinstance(step, KernelStep):
            cycles_by_step.append(run_kernel_step(memory, step, where, target))
        else:
            raise ModelError(f"{where}: unknown step type {type(step).__name__}")
    return RunResult(read_outputs(memory, package), sum(cycles_by_step), cycles_by_step, errors)
