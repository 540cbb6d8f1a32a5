"""The K-split (2.5-D) GEMM plan (`gemm_ksplit` dispatch): planning, memory and cost
(`KSplitLayout`); the tile work is `passes/operators/gemm_ksplit_lowering.py`.

Two layers of R x C tiles (layer l, grid row r, grid column c on tile l*R*C + r*C + c) each
compute every output block over half of K into FP32 partials; then each tile keeps one half
of its block's rows, adds the other layer's partials of that half and rounds once. With
every operand in a standard format:
- the output's rows are cut 2R ways into chunks of h rows (a multiple of 16), its columns C
  ways (W = 64 * panels): tile (l, r, c) holds row chunk l*R + r. So grid row r's block is
  made of the row chunks r and R + r (its half 0 and half 1), and after the reduction the
  tile of layer l holds half l: the output of a K-split is an ordinary row-and-column cut;
- A is cut like the output by rows (chunk l*R + r on tile (l, r, c)) and C ways along K
  (kpa blocks per tile): the half of a block's A panel that layer l holds comes from its own
  layer, the other half from the other layer;
- B is cut R ways along K (kpb blocks) and C ways by columns, replicated in both layers.
Layer l works on the K blocks k = l*s + i, i = 0 .. s - 1 (s = nK / 2). Per step i: the A
half of the own layer goes along every grid row of every layer (2R groups), the other half
crosses to the other layer (2R groups, every sender also receives: full duplex; both in
`lhs_senders`), then the B blocks go down every grid column of every layer (2C groups),
then every tile calls the AMP kernel once per half and panel (rows = h). A's broadcasts go
to tile pairs when C is even, B's when C = 1 and R is even. After the K loop one
full-duplex phase sends each tile's other half to its partner in the other layer (tile
+- R*C), and one `add` per tile sums its half and the received one into the output (FP32
in, one rounding).

Against the 2-D grid (`planning/gemm_grid.py`) a tile's block is twice as large for the same
tile count, so the A and B words per K block of the chip halve, for one exchange of partials
at the end (docs/internals.md, "The 2-D grid GEMM plan", "Bound"). The shape is chosen, as for the grid, by the
cycles the device model charges (`ksplit_cycles`), among the shapes that fit tile memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from device.layouts import AMP_BLOCK, AMP_ROWS, block_bytes, panel_bytes
from device.model import cycles as device_cycles
from device.shard_geometry import ShardGeometry
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.mid import DispatchKind, OperatorPlanAttr, TensorFormatAttr
from planning.exchange_rows import broadcast_events
from planning.gemm_grid import no_tile_count_helps, phase_events, slice_rows
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

LAYERS = 2


@dataclass(frozen=True)
class KSplitShape:
    """Two layers of an R x C grid and the block counts they give each tile."""

    rows: int  # R: grid rows per layer
    cols: int  # C: grid columns per layer
    half_rows: int  # h: output rows of a block's half (a multiple of 16)
    panels: int  # 64-column panels per block
    a_k_blocks: int  # kpa: K blocks of A per tile (K cut C ways)
    b_k_blocks: int  # kpb: K blocks of B per tile (K cut R ways, in each layer)
    steps: int  # K blocks per layer: nK / 2

    @property
    def layer_tiles(self) -> int:
        return self.rows * self.cols

    @property
    def tiles(self) -> int:
        return LAYERS * self.layer_tiles

    @classmethod
    def of(cls, m: int, n: int, k: int, rows: int, cols: int) -> KSplitShape:
        n_k = ceil_div(k, AMP_BLOCK)
        return cls(rows, cols, ceil_div(ceil_div(m, AMP_ROWS), LAYERS * rows) * AMP_ROWS,
                   ceil_div(ceil_div(n, AMP_BLOCK), cols), ceil_div(n_k, cols),
                   ceil_div(n_k, rows), n_k // LAYERS)

    def tile(self, layer, row, col):
        """The tile of (layer, grid row, grid column): ints or NumPy arrays."""
        return layer * self.layer_tiles + row * self.cols + col

    def layer_block(self, layer, step):
        """The K block layer `layer` works on in step `step`."""
        return layer * self.steps + step


def lhs_pairs(shape: KSplitShape) -> bool:
    """A's halves go along grid rows: to tile pairs when a row holds whole pairs."""
    return shape.cols % 2 == 0


def rhs_pairs(shape: KSplitShape) -> bool:
    """B's blocks go down the grid columns: to pairs only with one column (consecutive tiles)
    and an even number of rows (else the layers' boundary splits a pair)."""
    return shape.cols == 1 and shape.rows % 2 == 0


def ksplit_of(out: ShardGeometry, lhs: ShardGeometry, rhs: ShardGeometry) -> KSplitShape:
    """The shape a plan's formats describe."""
    rows, cols = out.partitions[-2] // LAYERS, out.partitions[-1]
    n_k = ceil_div(lhs.shape[-1], AMP_BLOCK)
    return KSplitShape(rows, cols, out.chunk[-2], out.chunk[-1] // AMP_BLOCK,
                       lhs.chunk[-1] // AMP_BLOCK, rhs.chunk[-2] // AMP_BLOCK, n_k // LAYERS)


def candidate_shapes(m: int, n: int, k: int, tiles: int, slices: int = 1) -> list[KSplitShape]:
    """For each panel count per tile, the fewest columns that cover N and as many rows as the
    tiles left allow (none when K has an odd number of blocks or M fewer than two chunks);
    for rows stacked from `slices` equal slices, as many as keep each tile's rows in one
    slice (`gemm_grid.slice_rows`) when there are any."""
    row_blocks, col_blocks = ceil_div(m, AMP_ROWS), ceil_div(n, AMP_BLOCK)
    if ceil_div(k, AMP_BLOCK) % LAYERS or row_blocks < LAYERS:
        return []
    shapes = {}
    for panels in range(1, col_blocks + 1):
        cols = ceil_div(col_blocks, panels)
        rows = min(tiles // (LAYERS * cols), row_blocks // LAYERS)
        if rows < 1:
            continue
        per_tile = ceil_div(row_blocks, LAYERS * rows)
        rows = ceil_div(row_blocks, LAYERS * per_tile)
        if slices > 1:
            rows = slice_rows(row_blocks, tiles // (LAYERS * cols), slices, LAYERS) or rows
        shapes[(rows, cols)] = KSplitShape.of(m, n, k, rows, cols)
    return list(shapes.values())


# ---- memory ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class KSplitBytes:
    lhs: int
    rhs: int
    out: int
    partials: int  # both halves, f32
    lhs_slot: int  # a whole A panel: both halves
    rhs_slot: int
    received: int  # the other layer's half of the partials

    @property
    def total(self) -> int:
        return (self.lhs + self.rhs + self.out + self.partials + self.lhs_slot + self.rhs_slot
                + self.received)

    @property
    def interleaved(self) -> int:
        return self.out + self.partials + self.received


def ksplit_bytes(shape: KSplitShape, precision: str, out_precision: str,
                 lhs_tail: int) -> KSplitBytes:
    h, panels = shape.half_rows, shape.panels
    half_partials = panels * panel_bytes(h, "f32")
    return KSplitBytes(
        lhs=shape.a_k_blocks * panel_bytes(h, precision) + lhs_tail,
        rhs=shape.b_k_blocks * panels * block_bytes(precision),
        out=panels * panel_bytes(h, out_precision),
        partials=LAYERS * half_partials,
        lhs_slot=panel_bytes(LAYERS * h, precision) + lhs_tail,
        rhs_slot=panels * block_bytes(precision),
        received=half_partials,
    )


def fits(shape: KSplitShape, precision: str, out_precision: str, lhs_tail: int,
         target: Target) -> bool:
    sizes = ksplit_bytes(shape, precision, out_precision, lhs_tail)
    return (sizes.total <= target.usable_bytes
            and sizes.interleaved <= target.memory_end - target.interleaved_start)


# ---- who sends to whom ----------------------------------------------------------------------
def lhs_senders(shape: KSplitShape, across: bool) -> np.ndarray:
    """[step, group]: the tile sending A's half to group g = l*R + r (its own layer's half,
    or with `across` the other layer's)."""
    step = np.arange(shape.steps)[:, None]
    group = np.arange(LAYERS * shape.rows)[None, :]
    layer, row = group // shape.rows, group % shape.rows
    source_layer = 1 - layer if across else layer
    column = shape.layer_block(layer, step) // shape.a_k_blocks
    return shape.tile(source_layer, row, column)


def lhs_receivers(shape: KSplitShape) -> np.ndarray:
    """[group, tile]: grid row r of layer l."""
    group = np.arange(LAYERS * shape.rows)[:, None]
    return group * shape.cols + np.arange(shape.cols)[None, :]


def rhs_senders(shape: KSplitShape) -> np.ndarray:
    """[step, group]: the tile sending the B blocks of group g = l*C + c."""
    step = np.arange(shape.steps)[:, None]
    group = np.arange(LAYERS * shape.cols)[None, :]
    layer, col = group // shape.cols, group % shape.cols
    return shape.tile(layer, shape.layer_block(layer, step) // shape.b_k_blocks, col)


def rhs_receivers(shape: KSplitShape) -> np.ndarray:
    """[group, tile]: grid column c of layer l."""
    group = np.arange(LAYERS * shape.cols)[:, None]
    layer, col = group // shape.cols, group % shape.cols
    return shape.tile(layer, np.arange(shape.rows)[None, :], col)


def partner(shape: KSplitShape, tiles: np.ndarray) -> np.ndarray:
    """The tile of the other layer holding the same block."""
    return np.where(tiles < shape.layer_tiles, tiles + shape.layer_tiles,
                    tiles - shape.layer_tiles)


# ---- cycles ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class KSplitCycles:
    exchange: int
    amp: int
    reduction: int  # the partials' exchange and the add that rounds

    @property
    def total(self) -> int:
        return self.exchange + self.amp + self.reduction


def half_words(shape: KSplitShape, precision: str) -> int:
    return panel_bytes(shape.half_rows, precision) // WORD_BYTES


def block_words(shape: KSplitShape, precision: str) -> int:
    return shape.panels * block_bytes(precision) // WORD_BYTES


def partials_words(shape: KSplitShape) -> int:
    return shape.panels * panel_bytes(shape.half_rows, "f32") // WORD_BYTES


def step_phase_events(shape: KSplitShape, precision: str, latency: np.ndarray) -> np.ndarray:
    """[phase kind, step]: events of the in-layer A phase (none when C = 1), the A phase
    across the layers and the B phase (none when R = 1)."""
    a_events = broadcast_events(half_words(shape, precision), lhs_pairs(shape))
    b_events = broadcast_events(block_words(shape, precision), rhs_pairs(shape))
    phases = []
    if shape.cols > 1:
        phases.append(phase_events(lhs_senders(shape, False), lhs_receivers(shape), a_events,
                                   latency))
    phases.append(phase_events(lhs_senders(shape, True), lhs_receivers(shape), a_events,
                               latency))
    if shape.rows > 1:
        phases.append(phase_events(rhs_senders(shape), rhs_receivers(shape), b_events,
                                   latency))
    return np.stack(phases)


def reduction_events(shape: KSplitShape, latency: np.ndarray) -> int:
    tiles = np.arange(shape.tiles)
    return partials_words(shape) + int(latency[tiles, partner(shape, tiles)].max())


def ksplit_cycles(shape: KSplitShape, precision: str, out_precision: str, target: Target,
                  latency: np.ndarray) -> KSplitCycles:
    """What the device model charges for the K-split lowering
    (`passes/operators/gemm_ksplit_lowering.py`): per step a sync and the events of each of
    its phases, two AMP calls per panel; then the partials' phase and the add."""
    events = step_phase_events(shape, precision, latency)
    exchange = int(events.size * target.sync_cycles + events.sum())
    amp = (shape.steps * LAYERS * shape.panels
           * device_cycles.gemm_cycles(shape.half_rows, precision, target))
    half = half_descriptor(shape, out_precision)
    partials = half_descriptor(shape, "f32")
    reduction = (device_cycles.exchange_step_cycles(reduction_events(shape, latency), target)
                 + device_cycles.add_cycles(half, partials, partials, 0, target))
    return KSplitCycles(exchange, amp, reduction)


def half_descriptor(shape: KSplitShape, precision: str) -> ShardGeometry:
    """Every tile's half block as a format (the output's, in `precision`): what the
    reduction's `add` reads and writes."""
    rows, cols = shape.half_rows, shape.panels * AMP_BLOCK
    parts = (LAYERS * shape.rows, shape.cols)
    return ShardGeometry((parts[0] * rows, parts[1] * cols), (rows, cols), parts, (True, True),
                         1, shape.tiles, precision, "amp_output")


def ranked_ksplits(m: int, n: int, k: int, tiles: int, precision: str, out_precision: str,
                   lhs_tail: int, target: Target, latency: np.ndarray,
                   slices: int = 1) -> list[KSplitShape]:
    """The shapes whose buffers fit a tile, cheapest first (then the fewest tiles); when none
    fits, only the smallest one (validation then says why); empty when no shape exists;
    `slices`: `candidate_shapes`'."""
    return rank_shapes(
        candidate_shapes(m, n, k, tiles, slices),
        lambda s: fits(s, precision, out_precision, lhs_tail, target),
        lambda s: ksplit_bytes(s, precision, out_precision, lhs_tail).total,
        lambda s: ksplit_cycles(s, precision, out_precision, target, latency).total,
        lambda s: s.tiles)


class KSplitLayout:
    """Two layers of an R x C grid over the halves of K (the `GemmLayout` of `gemm_ksplit`)."""

    dispatch = DispatchKind.GEMM_KSPLIT
    name = "K-split"
    reads_transposed = False
    replicates_an_operand = True  # B, once per layer
    last_step = "reduction"  # the layers' partials summed (an exchange and an add)

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """A and the output 2R x C, B R x C in each of the two layers (replicated); with no
        shape (an odd number of K blocks, fewer than two row chunks) the row plan's cut on
        one tile, which `check` then refuses."""
        return self.cut_options(candidate, problem, tiles, target)[0]

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """The cuts (`cuts`) of each shape that fits (`ranked_ksplits`), cheapest first."""
        shapes = ranked_ksplits(problem.m, problem.n, problem.k, tiles, candidate.precision,
                                candidate.output_precision, target.amp_left_access_tail_bytes,
                                target, latency_table(target, tiles), problem.row_slices)
        if not shapes:
            return [OperandCuts((1, 1), (1, 1), (1, 1))]
        return [OperandCuts((LAYERS * s.rows, s.cols), (s.rows, s.cols),
                            (LAYERS * s.rows, s.cols), LAYERS) for s in shapes]

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        """Two layers of one R x C grid (A and the output cut 2R x C, B R x C and replicated
        in both layers), one GEMM, an even number of K blocks."""
        lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
        if problem.batch != 1:
            raise InvalidPlan(f"the K-split plan runs one GEMM; this one has {problem.batch} "
                              "batch slices")
        if problem.inner_blocks % LAYERS:
            raise InvalidPlan(f"the K-split plan gives each of its two layers half of K; K has "
                              f"{problem.inner_blocks} block(s) of {AMP_BLOCK}, an odd number")
        rows, cols = out.partitions[-2:]
        if rows % LAYERS or rows < LAYERS:
            raise InvalidPlan(f"the K-split plan cuts the output rows into two layers of "
                              f"chunks; {problem.m} rows make {rows} chunk(s) of 16 or more")
        if lhs.partitions[-2:] != (rows, cols) or rhs.partitions[-2:] != (rows // LAYERS, cols):
            raise InvalidPlan(
                f"lhs and out must be cut {rows} x {cols} and rhs {rows // LAYERS} x {cols} (out "
                f"{list(out.partitions[-2:])}, lhs {list(lhs.partitions[-2:])}, rhs "
                f"{list(rhs.partitions[-2:])})")
        if rhs.replication.data != LAYERS or lhs.replication.data != 1 or out.replication.data != 1:
            raise InvalidPlan(f"rhs must be replicated in both layers (replication {LAYERS}), lhs "
                              "and out not at all")

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """Its shards, the A panel's slot (both halves), the B slot, the f32 partials of both
        halves and the other layer's half it receives."""
        lhs, rhs, out = (plan.operand_plan(o) for o in GEMM_OPERANDS)
        out_geometry = operand_geometries(plan, problem)[2]
        h, panels = out_geometry.chunk[-2], out_geometry.chunk[-1] // AMP_BLOCK
        half_partials = panels * panel_bytes(h, "f32")
        return {
            "lhs": shard_buffer(plan, problem, target, "lhs", "its left shard", True),
            "rhs": shard_buffer(plan, problem, target, "rhs", "its right shard", True),
            "out": shard_buffer(plan, problem, target, "out", "its output shard", False),
            "slot": scratch_buffer("its right-block receive slot",
                                   panels * block_bytes(problem.precision), rhs, target, False,
                                   True),
            "lhs_slot": scratch_buffer("its left-panel receive slot",
                                       panel_bytes(LAYERS * h, problem.precision), lhs, target,
                                       False, True, lhs.tail.data),
            "partials": scratch_buffer("its f32 partials of both halves",
                                       LAYERS * half_partials, out, target, True, True),
            "received": scratch_buffer("the other layer's half it receives", half_partials, out,
                                       target, True, True),
        }

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """Per step (i = 0, then the loop) the A phases and the B phase, then the partials'
        phase; the phases whose senders also receive have full-duplex rows, the longest of a
        phase's rows sets its stride."""
        lhs, rhs, out = operand_geometries(plan, problem)
        shape = ksplit_of(out, lhs, rhs)
        a_words = half_words(shape, problem.precision)
        b_words = block_words(shape, problem.precision)
        per_step = [phase_stride(a_words, lhs_pairs(shape), farthest)] if shape.cols > 1 else []
        per_step.append(phase_stride(a_words, lhs_pairs(shape), farthest, duplex=True))
        if shape.rows > 1:
            per_step.append(phase_stride(b_words, rhs_pairs(shape), farthest))
        slots = [count * nbytes for count in (1, shape.steps - 1) if count for nbytes in per_step]
        return [*slots, phase_stride(partials_words(shape), False, farthest, duplex=True)]

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        lhs, rhs, out = operand_geometries(plan, problem)
        ksplit = ksplit_cycles(ksplit_of(out, lhs, rhs), problem.precision, out.precision,
                               target, latency_table(target, tiles))
        return CycleBreakdown(ksplit.exchange, 0, ksplit.amp, ksplit.reduction)

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        return no_tile_count_helps(self.name, out, target)
