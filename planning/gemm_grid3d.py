"""The 3-D grid GEMM plan (`gemm_grid3d` dispatch): planning, memory and cost
(`Grid3DLayout`); the tile work is `passes/operators/gemm_grid3d_lowering.py`.

L layers of one R x C grid (layer l, grid row r, grid column c on tile l*R*C + r*C + c).
Each layer is the 2-D grid (`planning/gemm_grid.py`) over its own L-th of K: layer l works on
the K blocks k = l*s + i, i = 0 .. s - 1 (s = nK / L), into FP32 partials of the whole output
block. A and B are cut as for the 2-D grid and replicated once per layer, so every layer
holds all of both and its broadcasts stay inside it: per step i, A's panel along every grid
row of every layer (L*R groups), then B's blocks down every grid column of every layer (L*C
groups), then one AMP call per panel. After the K loop the layers' partials are summed in
rounds of halving: with n layers left, the last n // 2 each send their partials to the tile
of the same block n - n // 2 layers down, which adds them into its own; the last round's
add (into layer 0) writes the output, rounded once. The output is layer 0's R x C cut.

Where a GEMM's output has fewer 16 x 64 blocks than the chip has tiles (BERT's M = 384 rows
make 24 x 12 blocks at d = 768: 288 tiles), the 2-D grid and the K-split leave most tiles
idle; the layers put L times the tiles on the same blocks, each with an L-th of the AMP
work and of the broadcasts, for a reduction of ceil(log2 L) rounds at the end (against the
K-split, whose two layers' halves keep the tile count at the block count). The replicas cost
memory: L copies of A and B. The shape (R, C, L) is chosen, like the grid's, by the cycles
the device model charges (`grid3d_cycles`), among the shapes that fit tile memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.model import cycles as device_cycles
from device.shard_geometry import ShardGeometry
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.mid import DispatchKind, OperatorPlanAttr, TensorFormatAttr
from planning.exchange_rows import broadcast_events
from planning.gemm_grid import GridShape, candidate_grids, no_tile_count_helps, phase_events
from planning.gemm_layout import CycleBreakdown, OperandCuts, rank_shapes
from planning.gemm_memory import RowTileBuffer, phase_stride, scratch_buffer, shard_buffer
from planning.gemm_problem import (
    GEMM_OPERANDS,
    GemmCandidate,
    GemmProblem,
    InvalidPlan,
    operand_geometries,
)
from planning.shard_geometry import ceil_div


@dataclass(frozen=True)
class Grid3DShape:
    """L layers of one R x C grid (`grid`: its blocks over all of K) and the K steps of
    each."""

    grid: GridShape
    layers: int  # L
    steps: int  # s: K blocks per layer, nK / L

    @property
    def rows(self) -> int:
        return self.grid.rows

    @property
    def cols(self) -> int:
        return self.grid.cols

    @property
    def layer_tiles(self) -> int:
        return self.grid.tiles

    @property
    def tiles(self) -> int:
        return self.layers * self.layer_tiles

    @classmethod
    def of(cls, grid: GridShape, k: int, layers: int) -> Grid3DShape:
        return cls(grid, layers, ceil_div(k, AMP_BLOCK) // layers)

    def layer_block(self, layer, step):
        """The K block layer `layer` works on in step `step` (ints or NumPy arrays)."""
        return layer * self.steps + step


def lhs_pairs(shape: Grid3DShape) -> bool:
    """A's broadcast along a grid row goes to tile pairs when a row holds whole pairs."""
    return shape.cols % 2 == 0


def rhs_pairs(shape: Grid3DShape) -> bool:
    """B's down a grid column only with one column (consecutive tiles) and R even (else a
    layers' boundary splits a pair)."""
    return shape.cols == 1 and shape.rows % 2 == 0


def grid3d_of(out: ShardGeometry, lhs: ShardGeometry, rhs: ShardGeometry) -> Grid3DShape:
    """The shape a plan's formats describe (the layers: rhs's replicas)."""
    rows, cols = out.partitions[-2], out.partitions[-1]
    grid = GridShape(rows, cols, out.chunk[-2], out.chunk[-1] // AMP_BLOCK,
                     lhs.chunk[-1] // AMP_BLOCK, rhs.chunk[-2] // AMP_BLOCK)
    return Grid3DShape.of(grid, lhs.shape[-1], rhs.replication)


def layer_counts(k: int) -> list[int]:
    """The layer counts worth trying: every divisor of the K blocks from 2 on."""
    n_k = ceil_div(k, AMP_BLOCK)
    return [layers for layers in range(2, n_k + 1) if n_k % layers == 0]


def candidate_shapes(m: int, n: int, k: int, tiles: int, slices: int = 1) -> list[Grid3DShape]:
    """For each layer count, the grids (`candidate_grids`) of the tiles one layer gets."""
    return [Grid3DShape.of(grid, k, layers)
            for layers in layer_counts(k) if tiles // layers >= 1
            for grid in candidate_grids(m, n, k, tiles // layers, slices)]


# ---- memory ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid3DBytes:
    lhs: int
    rhs: int
    out: int
    partials: int  # f32, the whole block
    lhs_slot: int
    rhs_slot: int
    received: int  # another layer's partials

    @property
    def total(self) -> int:
        return (self.lhs + self.rhs + self.out + self.partials + self.lhs_slot + self.rhs_slot
                + self.received)

    @property
    def interleaved(self) -> int:
        return self.out + self.partials + self.received


def grid3d_bytes(shape: Grid3DShape, precision: str, out_precision: str,
                 lhs_tail: int) -> Grid3DBytes:
    grid = shape.grid
    rows, panels = grid.tile_rows, grid.panels
    partials = panels * panel_bytes(rows, "f32")
    return Grid3DBytes(
        lhs=grid.a_k_blocks * panel_bytes(rows, precision) + lhs_tail,
        rhs=grid.b_k_blocks * panels * block_bytes(precision),
        out=panels * panel_bytes(rows, out_precision),
        partials=partials,
        lhs_slot=panel_bytes(rows, precision) + lhs_tail,
        rhs_slot=panels * block_bytes(precision),
        received=partials,
    )


def fits(shape: Grid3DShape, precision: str, out_precision: str, lhs_tail: int,
         target: Target) -> bool:
    sizes = grid3d_bytes(shape, precision, out_precision, lhs_tail)
    return (sizes.total <= target.usable_bytes
            and sizes.interleaved <= target.memory_end - target.interleaved_start)


# ---- who sends to whom ----------------------------------------------------------------------
def lhs_senders(shape: Grid3DShape) -> np.ndarray:
    """[step, group]: the tile sending A's panel to grid row r of layer l (g = l*R + r)."""
    step = np.arange(shape.steps)[:, None]
    group = np.arange(shape.layers * shape.rows)[None, :]
    column = shape.layer_block(group // shape.rows, step) // shape.grid.a_k_blocks
    return group * shape.cols + column


def lhs_receivers(shape: Grid3DShape) -> np.ndarray:
    """[group, tile]: grid row r of layer l."""
    group = np.arange(shape.layers * shape.rows)[:, None]
    return group * shape.cols + np.arange(shape.cols)[None, :]


def rhs_senders(shape: Grid3DShape) -> np.ndarray:
    """[step, group]: the tile sending the B blocks down column c of layer l (g = l*C + c)."""
    step = np.arange(shape.steps)[:, None]
    group = np.arange(shape.layers * shape.cols)[None, :]
    layer, col = group // shape.cols, group % shape.cols
    row = shape.layer_block(layer, step) // shape.grid.b_k_blocks
    return layer * shape.layer_tiles + row * shape.cols + col


def rhs_receivers(shape: Grid3DShape) -> np.ndarray:
    """[group, tile]: grid column c of layer l."""
    group = np.arange(shape.layers * shape.cols)[:, None]
    layer, col = group // shape.cols, group % shape.cols
    return layer * shape.layer_tiles + np.arange(shape.rows)[None, :] * shape.cols + col


@dataclass(frozen=True)
class ReductionRound:
    """Layers [keep, keep + senders) send their partials to layers [0, senders), which add."""

    keep: int
    senders: int

    @property
    def last(self) -> bool:
        """The round whose add writes the output (into layer 0)."""
        return self.keep == 1


def reduction_rounds(layers: int) -> list[ReductionRound]:
    rounds, left = [], layers
    while left > 1:
        senders = left // 2
        rounds.append(ReductionRound(left - senders, senders))
        left -= senders
    return rounds


# ---- cycles ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid3DCycles:
    exchange: int
    amp: int
    reduction: int  # the rounds' partials exchanges and adds

    @property
    def total(self) -> int:
        return self.exchange + self.amp + self.reduction


def panel_words(shape: Grid3DShape, precision: str) -> int:
    return panel_bytes(shape.grid.tile_rows, precision) // WORD_BYTES


def block_words(shape: Grid3DShape, precision: str) -> int:
    return shape.grid.panels * block_bytes(precision) // WORD_BYTES


def partials_words(shape: Grid3DShape) -> int:
    return shape.grid.panels * panel_bytes(shape.grid.tile_rows, "f32") // WORD_BYTES


def step_phase_events(shape: Grid3DShape, precision: str, latency: np.ndarray) -> np.ndarray:
    """[phase kind, step]: events of the A phase (none when C = 1) and of the B phase (none
    when R = 1)."""
    phases = []
    if shape.cols > 1:
        phases.append(phase_events(lhs_senders(shape), lhs_receivers(shape), broadcast_events(
            panel_words(shape, precision), lhs_pairs(shape)), latency))
    if shape.rows > 1:
        phases.append(phase_events(rhs_senders(shape), rhs_receivers(shape), broadcast_events(
            block_words(shape, precision), rhs_pairs(shape)), latency))
    return np.stack(phases) if phases else np.zeros((0, shape.steps), dtype=np.int64)


def round_events(shape: Grid3DShape, reduction: ReductionRound, latency: np.ndarray) -> int:
    receivers = np.arange(reduction.senders * shape.layer_tiles)
    senders = receivers + reduction.keep * shape.layer_tiles
    return partials_words(shape) + int(latency[senders, receivers].max())


def block_descriptor(shape: Grid3DShape, precision: str) -> ShardGeometry:
    """Every tile's output block as a format (in `precision`): what the reduction's `add`s
    read and write."""
    rows, cols, tiles = shape.grid.tile_rows, shape.grid.panels * AMP_BLOCK, shape.tiles
    return ShardGeometry((tiles * rows, cols), (rows, cols), (tiles, 1), (True, True), 1, tiles,
                         precision, "amp_output")


def grid3d_cycles(shape: Grid3DShape, precision: str, out_precision: str, target: Target,
                  latency: np.ndarray) -> Grid3DCycles:
    """What the device model charges for the lowering
    (`passes/operators/gemm_grid3d_lowering.py`): per step a sync and the events of each of
    its phases, one AMP call per panel; then per reduction round a sync, the partials' phase
    and the add."""
    events = step_phase_events(shape, precision, latency)
    exchange = int(events.size * target.sync_cycles + events.sum())
    amp = (shape.steps * shape.grid.panels
           * device_cycles.gemm_cycles(shape.grid.tile_rows, precision, target))
    partials = block_descriptor(shape, "f32")
    reduction = sum(
        device_cycles.exchange_step_cycles(round_events(shape, r, latency), target)
        + device_cycles.add_cycles(block_descriptor(shape, out_precision) if r.last
                                   else partials, partials, partials, 0, target)
        for r in reduction_rounds(shape.layers))
    return Grid3DCycles(exchange, amp, reduction)


def ranked_shapes(m: int, n: int, k: int, tiles: int, precision: str, out_precision: str,
                  lhs_tail: int, target: Target, latency: np.ndarray,
                  slices: int = 1) -> list[Grid3DShape]:
    """The shapes whose buffers fit a tile, cheapest first (then the fewest tiles); when none
    fits, only the smallest one (validation then says why); empty when no shape exists."""
    return rank_shapes(
        candidate_shapes(m, n, k, tiles, slices),
        lambda s: fits(s, precision, out_precision, lhs_tail, target),
        lambda s: grid3d_bytes(s, precision, out_precision, lhs_tail).total,
        lambda s: grid3d_cycles(s, precision, out_precision, target, latency).total,
        lambda s: s.tiles)


class Grid3DLayout:
    """L layers of one R x C grid over the L-ths of K (the `GemmLayout` of `gemm_grid3d`)."""

    dispatch = DispatchKind.GEMM_GRID3D
    name = "3-D grid"
    reads_transposed = False
    replicates_an_operand = True  # A and B, once per layer
    last_step = "reduction"  # the layers' partials summed (exchanges and adds)

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """All three operands over the R x C grid, A and B replicated in the L layers; with no
        shape (K of one block) the row plan's cut on one tile, which `check` refuses."""
        return self.cut_options(candidate, problem, tiles, target)[0]

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """The cuts of each shape that fits (`ranked_shapes`), cheapest first."""
        shapes = ranked_shapes(problem.m, problem.n, problem.k, tiles, candidate.precision,
                               candidate.output_precision, target.amp_left_access_tail_bytes,
                               target, latency_table(target, tiles), problem.row_slices)
        if not shapes:
            return [OperandCuts((1, 1), (1, 1), (1, 1))]
        return [OperandCuts(*((s.rows, s.cols),) * 3, rhs_replication=s.layers,
                            lhs_replication=s.layers) for s in shapes]

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        """One R x C grid for all three operands, A and B replicated in L >= 2 layers that
        divide K's blocks, one GEMM."""
        lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
        if problem.batch != 1:
            raise InvalidPlan(f"the 3-D grid plan runs one GEMM; this one has {problem.batch} "
                              "batch slices")
        grid = out.partitions[-2:]
        if lhs.partitions[-2:] != grid or rhs.partitions[-2:] != grid:
            raise InvalidPlan(
                f"lhs, rhs and out must be cut over one grid (out {list(grid)}, lhs "
                f"{list(lhs.partitions[-2:])}, rhs {list(rhs.partitions[-2:])})")
        if problem.inner_blocks < 2:
            raise InvalidPlan(f"the 3-D grid plan shares K among two or more layers; K has "
                              f"{problem.inner_blocks} block of {AMP_BLOCK}")
        layers = rhs.replication.data
        if layers < 2 or lhs.replication.data != layers or out.replication.data != 1:
            raise InvalidPlan(
                f"lhs and rhs must be replicated once per layer (two or more), out not at all "
                f"(lhs {lhs.replication.data}, rhs {layers}, out {out.replication.data})")
        if problem.inner_blocks % layers:
            raise InvalidPlan(f"the 3-D grid plan gives each of its {layers} layers an equal "
                              f"share of K; K has {problem.inner_blocks} block(s) of {AMP_BLOCK}")

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """Its shards, the B slot, the A panel's slot, the f32 partials of its block and the
        partials it receives from another layer."""
        lhs, rhs, out = (plan.operand_plan(o) for o in GEMM_OPERANDS)
        out_geometry = operand_geometries(plan, problem)[2]
        rows, panels = out_geometry.chunk[-2], out_geometry.chunk[-1] // AMP_BLOCK
        partials = panels * panel_bytes(rows, "f32")
        return {
            "lhs": shard_buffer(plan, problem, target, "lhs", "its left shard", True),
            "rhs": shard_buffer(plan, problem, target, "rhs", "its right shard", True),
            "out": shard_buffer(plan, problem, target, "out", "its output shard", False),
            "slot": scratch_buffer("its right-block receive slot",
                                   panels * block_bytes(problem.precision), rhs, target, False,
                                   True),
            "lhs_slot": scratch_buffer("its left-panel receive slot",
                                       panel_bytes(rows, problem.precision), lhs, target,
                                       False, True, lhs.tail.data),
            "partials": scratch_buffer("its f32 partials", partials, out, target, True, True),
            "received": scratch_buffer("the partials it receives from another layer",
                                       partials, out, target, True, True),
        }

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """Per step (i = 0, then the loop) the A phase and the B phase, then one partials
        phase per reduction round."""
        lhs, rhs, out = operand_geometries(plan, problem)
        shape = grid3d_of(out, lhs, rhs)
        per_step = []
        if shape.cols > 1:
            per_step.append(phase_stride(panel_words(shape, problem.precision),
                                         lhs_pairs(shape), farthest))
        if shape.rows > 1:
            per_step.append(phase_stride(block_words(shape, problem.precision),
                                         rhs_pairs(shape), farthest))
        slots = [count * nbytes for count in (1, shape.steps - 1) if count for nbytes in per_step]
        reduction = phase_stride(partials_words(shape), False, farthest)
        return [*slots, *(reduction for _ in reduction_rounds(shape.layers))]

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        lhs, rhs, out = operand_geometries(plan, problem)
        cycles = grid3d_cycles(grid3d_of(out, lhs, rhs), problem.precision,
                               out.precision, target, latency_table(target, tiles))
        return CycleBreakdown(cycles.exchange, 0, cycles.amp, cycles.reduction)

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        return no_tile_count_helps(self.name, out, target)
