"""The 2-D grid GEMM plan (`gemm_grid` dispatch): planning, memory and cost (`GridLayout`);
the tile work is `passes/operators/gemm_grid_lowering.py`.

The output is cut into an R x C grid of blocks, one per tile (tile t = r * C + c holds rows
block r and columns block c). A is cut the same way along its rows (R) and along K (C
chunks), B along K (R chunks) and along its columns (C), so every tile stores one shard of
each and the chip's memory holds each operand once. For every 64-deep K block k, in one
phase each grid row r broadcasts panel k of its A rows from the tile of that row that holds
it, and in a second phase each grid column c broadcasts its B blocks (k, columns of c) from
the tile of that column that holds them: R (then C) concurrent groups on disjoint tiles
(`tile.exchange ... groups`). Every tile then runs one AMP call per 64-column panel of its
output block; the tiles that hold panel k of A or the B blocks read them where they live
(`tile.kernel ... home`), the others from their receive slots. An element of A reaches C
tiles and one of B reaches R tiles, instead of every output-row tile receiving all of B
(the row plan): with all tiles computing, exchange per K block is 32 (rows + columns) words
per tile against rows x columns / 64 cycles of AMP work, which is what brings a GEMM that
fills the chip near the AMP roofline (docs/internals.md, "The 2-D grid GEMM plan", "Bound").

Both broadcasts go to tile pairs at double rate (`tile.exchange ... pairs`, 64-bit items;
docs/internals.md "Pair broadcast") where every tile pair (2i, 2i + 1) receives one group:
A's along the grid rows when C is even (a grid row then holds whole pairs), B's down the one
grid column when C = 1 (its receivers are then consecutive tiles).

The grid shape is chosen here, by the same cycle functions the device model charges
(`grid_cycles`), among the shapes whose buffers fit tile memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.model import cycles as device_cycles
from device.shard_geometry import ShardGeometry
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.mid import DispatchKind, MemoryClass, OperatorPlanAttr, TensorFormatAttr
from planning.exchange_rows import broadcast_events
from planning.gemm_layout import CycleBreakdown, OperandCuts, rank_shapes
from planning.gemm_memory import RowTileBuffer, phase_stride, scratch_buffer, shard_buffer
from planning.gemm_problem import (
    GEMM_OPERANDS,
    GRID_ROW_BLOCK,
    GemmCandidate,
    GemmProblem,
    InvalidPlan,
    has_f32_partials_panel,
    operand_geometries,
)
from planning.shard_geometry import ceil_div


@dataclass(frozen=True)
class GridShape:
    """An R x C grid and the block counts it gives each tile."""

    rows: int  # R: grid rows (row blocks of the output)
    cols: int  # C: grid columns (column blocks of the output)
    tile_rows: int  # output rows per tile (a multiple of 16)
    panels: int  # 64-column panels per tile (nb)
    a_k_blocks: int  # K blocks of A per tile (kpa): A's K is cut into C chunks
    b_k_blocks: int  # K blocks of B per tile (kpb): B's K is cut into R chunks

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    @classmethod
    def of(cls, m: int, n: int, k: int, rows: int, cols: int) -> GridShape:
        n_k = ceil_div(k, AMP_BLOCK)
        return cls(rows, cols, ceil_div(ceil_div(m, GRID_ROW_BLOCK), rows) * GRID_ROW_BLOCK,
                   ceil_div(ceil_div(n, AMP_BLOCK), cols), ceil_div(n_k, cols),
                   ceil_div(n_k, rows))


def lhs_pairs(grid: GridShape) -> bool:
    """Whether A's broadcast along the grid rows can go to tile pairs: a row holds whole
    pairs when C is even."""
    return grid.cols % 2 == 0


def rhs_pairs(grid: GridShape) -> bool:
    """Whether B's broadcast down the grid columns can go to tile pairs: only with one grid
    column, whose tiles are consecutive (with more, a pair's tiles sit in two columns)."""
    return grid.cols == 1


def grid_of(out: ShardGeometry, lhs: ShardGeometry, rhs: ShardGeometry) -> GridShape:
    """The grid a plan's formats describe."""
    rows, cols = out.partitions[-2], out.partitions[-1]
    return GridShape(rows, cols, out.chunk[-2], out.chunk[-1] // AMP_BLOCK,
                     lhs.chunk[-1] // AMP_BLOCK, rhs.chunk[-2] // AMP_BLOCK)


def candidate_grids(m: int, n: int, k: int, tiles: int, slices: int = 1) -> list[GridShape]:
    """Every grid worth costing: for each panel count per tile, the fewest columns that
    cover N and as many rows as the tiles left allow (no grid row or column is empty); for
    rows stacked from `slices` equal slices, as many as keep each tile's rows in one slice
    (when there are any such grids)."""
    row_blocks, col_blocks = ceil_div(m, GRID_ROW_BLOCK), ceil_div(n, AMP_BLOCK)
    grids = {}
    for panels in range(1, col_blocks + 1):
        cols = ceil_div(col_blocks, panels)
        if cols > tiles:
            continue
        rows = slice_rows(row_blocks, tiles // cols, slices) if slices > 1 else None
        if rows is None:
            rows = min(tiles // cols, row_blocks)
            rows = ceil_div(row_blocks, ceil_div(row_blocks, rows))
        grids[(rows, cols)] = GridShape.of(m, n, k, rows, cols)
    return list(grids.values())


def slice_rows(row_blocks: int, most: int, slices: int, per_row: int = 1) -> int | None:
    """The most grid rows, at most `most`, that cut `row_blocks` blocks stacked from `slices`
    equal slices evenly with each grid row inside one slice, counted in grid rows of
    `per_row` partitions each (the K-split's two layers: 2); None if there are none."""
    if row_blocks % slices:
        return None
    per_slice = row_blocks // slices
    counts = [slices * q for q in range(1, per_slice + 1)
              if per_slice % q == 0 and (slices * q) % per_row == 0
              and slices * q // per_row <= most]
    return max(counts) // per_row if counts else None


# ---- memory ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GridBytes:
    """Bytes of each buffer of one grid tile (all tiles hold the same shards)."""

    lhs: int
    rhs: int
    out: int
    partials: int  # 0 without an f32 partials shard
    lhs_slot: int
    rhs_slot: int

    @property
    def total(self) -> int:
        return self.lhs + self.rhs + self.out + self.partials + self.lhs_slot + self.rhs_slot


def grid_bytes(grid: GridShape, precision: str, out_precision: str, f32_partials: bool,
               lhs_tail: int) -> GridBytes:
    rows, panels = grid.tile_rows, grid.panels
    return GridBytes(
        lhs=grid.a_k_blocks * panel_bytes(rows, precision) + lhs_tail,
        rhs=grid.b_k_blocks * panels * block_bytes(precision),
        out=panels * panel_bytes(rows, out_precision),
        partials=panels * panel_bytes(rows, "f32") if f32_partials else 0,
        lhs_slot=panel_bytes(rows, precision) + lhs_tail,
        rhs_slot=panels * block_bytes(precision),
    )


# ---- cycles ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class GridCycles:
    exchange: int
    amp: int
    rounding: int

    @property
    def total(self) -> int:
        return self.exchange + self.amp + self.rounding


def phase_events(senders: np.ndarray, receivers: np.ndarray, words: int,
                 latency: np.ndarray) -> np.ndarray:
    """Events of each phase of concurrent broadcasts: its words, then the farthest receiver
    of any group. `senders` [phase, group], `receivers` [group, tile] (a group's sender among
    its receivers receives nothing)."""
    arrival = latency[senders[:, :, None], receivers[None, :, :]]
    arrival = np.where(receivers[None] == senders[:, :, None], 0, arrival)
    return words + arrival.max(axis=(1, 2))


def grid_phase_events(grid: GridShape, k_blocks: int, a_words: int, b_words: int,
                      latency: np.ndarray) -> np.ndarray:
    """Per K block, the A phase along the grid rows, then the B phase down the grid columns
    (none when a grid row, or column, is one tile); a pair broadcast sends its words as
    64-bit items, two per event."""
    k, rows, cols = np.arange(k_blocks), np.arange(grid.rows), np.arange(grid.cols)
    events = []
    if grid.cols > 1:
        senders = rows[None, :] * grid.cols + (k // grid.a_k_blocks)[:, None]
        events.append(phase_events(senders, rows[:, None] * grid.cols + cols[None, :],
                                   broadcast_events(a_words, lhs_pairs(grid)), latency))
    if grid.rows > 1:
        senders = (k // grid.b_k_blocks)[:, None] * grid.cols + cols[None, :]
        events.append(phase_events(senders, rows[None, :] * grid.cols + cols[:, None],
                                   broadcast_events(b_words, rhs_pairs(grid)), latency))
    return np.concatenate(events) if events else np.zeros(0, dtype=np.int64)


def grid_cycles(grid: GridShape, k: int, precision: str, out_precision: str,
                f32_partials: bool, target: Target, latency: np.ndarray) -> GridCycles:
    """What the device model charges for the grid lowering (`passes/operators/gemm_grid_lowering.py`):
    per K block a sync and the A phase, a sync and the B phase, one AMP call per panel; then
    the rounding of the f32 partials shard."""
    k_blocks = ceil_div(k, AMP_BLOCK)
    a_words = panel_bytes(grid.tile_rows, precision) // WORD_BYTES
    b_words = grid.panels * block_bytes(precision) // WORD_BYTES
    events = grid_phase_events(grid, k_blocks, a_words, b_words, latency)
    exchange = sum(device_cycles.exchange_step_cycles(int(e), target) for e in events)
    amp = k_blocks * grid.panels * device_cycles.gemm_cycles(grid.tile_rows, precision, target)
    rounding = 0
    if f32_partials:
        out, partials = (shard_descriptor(grid, p) for p in (out_precision, "f32"))
        rounding = device_cycles.convert_shard_cycles(out, partials, 0, target)
    return GridCycles(exchange, amp, rounding)


def shard_descriptor(grid: GridShape, precision: str) -> ShardGeometry:
    """One grid tile's output block as a format: what `convert_shard` reads and writes."""
    rows, cols = grid.tile_rows, grid.panels * AMP_BLOCK
    return ShardGeometry((grid.tiles * rows, cols), (rows, cols), (grid.tiles, 1), (True, True),
                         1, grid.tiles, precision, "amp_output")


def ranked_grids(m: int, n: int, k: int, tiles: int, precision: str, out_precision: str,
                 f32_partials: bool, lhs_tail: int, target: Target,
                 latency: np.ndarray, slices: int = 1) -> list[GridShape]:
    """The grids whose shards fit a tile, cheapest first (then the fewest tiles); when none
    fits, only the smallest one (validation then says why); `slices`: `candidate_grids`'."""
    grids = candidate_grids(m, n, k, tiles, slices)

    def size(g: GridShape) -> int:
        return grid_bytes(g, precision, out_precision, f32_partials, lhs_tail).total

    def fits(g: GridShape) -> bool:
        sizes = grid_bytes(g, precision, out_precision, f32_partials, lhs_tail)
        interleaved = sizes.out + sizes.partials  # the output and partials live there
        return (sizes.total <= target.usable_bytes
                and interleaved <= target.memory_end - target.interleaved_start)

    return rank_shapes(grids, fits, size,
                       lambda g: grid_cycles(g, k, precision, out_precision, f32_partials,
                                             target, latency).total,
                       lambda g: g.tiles)


def no_tile_count_helps(name: str, out: TensorFormatAttr, target: Target) -> str:
    """Why a 2-D layout (the grid, the K-split) fits no tile count: its blocks do not
    shrink past one 16 x 64 block per tile."""
    rows, cols = out.partitions[-2:]
    return (
        f"no tile count helps: the {name} plan cuts the output into at most {rows} x {cols} "
        f"blocks of 16 rows by 64 columns here, and on all {target.tiles} tiles a {name} "
        "tile still does not fit"
    )


class GridLayout:
    """An R x C output grid, one block per tile (the `GemmLayout` of `gemm_grid`)."""

    dispatch = DispatchKind.GEMM_GRID
    name = "grid"
    reads_transposed = False
    replicates_an_operand = False
    last_step = "rounding"

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """All three operands over the cheapest grid that fits (`ranked_grids`)."""
        return self.cut_options(candidate, problem, tiles, target)[0]

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """All three operands over each grid that fits (`ranked_grids`), cheapest first."""
        grids = ranked_grids(problem.m, problem.n, problem.k, tiles, candidate.precision,
                             candidate.output_precision, candidate.has_f32_partials(problem),
                             target.amp_left_access_tail_bytes, target,
                             latency_table(target, tiles), problem.row_slices)
        return [OperandCuts(*((grid.rows, grid.cols),) * 3) for grid in grids]

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        """One R x C grid for all three operands, one GEMM (no batch)."""
        lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
        if problem.batch != 1:
            raise InvalidPlan(f"the grid plan runs one GEMM; this one has {problem.batch} batch "
                              "slices")
        grid = out.partitions[-2:]
        if lhs.partitions[-2:] != grid or rhs.partitions[-2:] != grid:
            raise InvalidPlan(
                f"lhs, rhs and out must be cut over one grid (out {list(grid)}, lhs "
                f"{list(lhs.partitions[-2:])}, rhs {list(rhs.partitions[-2:])})"
            )

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """Its shards, the B slot of all its panels, the A panel's slot and the f32 partials
        of all its panels."""
        lhs, rhs, out = (plan.operand_plan(o) for o in GEMM_OPERANDS)
        out_geometry = operand_geometries(plan, problem)[2]
        rows, panels = out_geometry.chunk[-2], out_geometry.chunk[-1] // AMP_BLOCK
        buffers = {
            "lhs": shard_buffer(plan, problem, target, "lhs", "its left shard", True),
            "rhs": shard_buffer(plan, problem, target, "rhs", "its right shard", True),
            "out": shard_buffer(plan, problem, target, "out", "its output shard", False),
            "slot": scratch_buffer("its right-block receive slot",
                                   panels * block_bytes(problem.precision), rhs, target,
                                   rhs.format.memory.data == MemoryClass.INTERLEAVED, True),
            "lhs_slot": scratch_buffer("its left-panel receive slot",
                                       panel_bytes(rows, problem.precision), lhs, target, False,
                                       True, lhs.tail.data),
        }
        if has_f32_partials_panel(plan):
            buffers["partials"] = scratch_buffer(
                f"its f32 partials panel{'s' if panels > 1 else ''}",
                panels * panel_bytes(rows, "f32"), out, target, True, False)
        return buffers

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """Per K block one A panel and one set of B blocks; the k = 0 ops, then the k loop's."""
        lhs, rhs, out = operand_geometries(plan, problem)
        n_k = ceil_div(problem.k, AMP_BLOCK)
        panel = panel_bytes(out.chunk[-2], problem.precision) // WORD_BYTES
        blocks = out.chunk[-1] // AMP_BLOCK * block_bytes(problem.precision) // WORD_BYTES
        grid = grid_of(out, lhs, rhs)
        return [count * phase_stride(words, pairs, farthest) for count in (1, n_k - 1) if count
                for words, pairs in ((panel, lhs_pairs(grid)), (blocks, rhs_pairs(grid)))]

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        lhs, rhs, out = operand_geometries(plan, problem)
        grid = grid_cycles(grid_of(out, lhs, rhs), problem.k, problem.precision, out.precision,
                           has_f32_partials_panel(plan), target, latency_table(target, tiles))
        return CycleBreakdown(grid.exchange, 0, grid.amp, grid.rounding)

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        return no_tile_count_helps(self.name, out, target)
