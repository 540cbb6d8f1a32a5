"""The retained AMP GEMM plan (`gemm_blocks` dispatch): output rows on tiles, B's blocks
broadcast to them. Planning, memory and cost; the tile work is
`passes/operators/gemm_rows_lowering.py`.

For `[..., M, K] x [..., K, N]` on `T` tiles a candidate with row block `rb` cuts:

- lhs `amp_left`:   batch axes `1 x 1`, rows `rb x R`, K `64 x 1`       (R = min(T, ceil(M / rb)));
- rhs `amp_right`:  batch axes `1 x 1`, K `64 x pK`, N `64 x pN`       (pN = min(nJ, T),
  pK = min(nK, T // pN): the 64x64 blocks spread over the tiles);
- out `amp_output`: batch axes `1 x 1`, rows `rb x R`, N `64 x 1`, interleaved memory.

Per batch and (k, j) block, block (k, j) of B goes from its home tile to the receive slot of
every output-row tile (a pair broadcast), the home tile copies it into its own slot when it
is an output-row tile, and every row tile calls the GEMM kernel; with FP32 partials each
column block's f32 partials panel is rounded into the output once.
"""

from __future__ import annotations

import numpy as np

from device.layouts import AMP_BLOCK, block_bytes, panel_bytes
from device.model import cycles as device_cycles
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.mid import DispatchKind, MemoryClass, OperatorPlanAttr, TensorFormatAttr
from planning.exchange_rows import broadcast_events
from planning.gemm_grid import slice_rows
from planning.gemm_layout import CycleBreakdown, OperandCuts
from planning.gemm_memory import RowTileBuffer, phase_stride, scratch_buffer, shard_buffer
from planning.gemm_problem import (
    GemmCandidate,
    GemmProblem,
    InvalidPlan,
    has_f32_partials_panel,
    operand_geometries,
)
from planning.shard_geometry import ShardGeometry, ceil_div


def row_partitions(m: int, row_block: int, tiles: int) -> int:
    """R = min(T, ceil(M / rb)): output-row tiles."""
    return min(tiles, ceil_div(m, row_block))


def right_partitions(k: int, n: int, tiles: int) -> tuple[int, int]:
    """(pK, pN): 64x64 right blocks spread over the tiles, columns first."""
    n_k, n_j = ceil_div(k, AMP_BLOCK), ceil_div(n, AMP_BLOCK)
    p_n = min(n_j, tiles)
    p_k = max(1, min(n_k, tiles // p_n))
    return p_k, p_n


class RowsLayout:
    """Output rows on tiles (the `GemmLayout` of `gemm_blocks`)."""

    dispatch = DispatchKind.GEMM_BLOCKS
    name = "output-row"
    reads_transposed = True
    replicates_an_operand = False
    last_step = "rounding"

    def cuts(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
             target: Target) -> OperandCuts:
        """A and the output by rows only, B's 64x64 blocks spread. A transposed rhs keeps K
        whole on each tile so that its blocks are numbered the same way in both orders."""
        r = row_partitions(problem.m, candidate.row_block, tiles)
        if problem.row_slices > 1:  # a folded batch: each tile's rows inside one slice
            r = slice_rows(ceil_div(problem.m, candidate.row_block), tiles,
                           problem.row_slices) or r
        p_k, p_n = right_partitions(problem.k, problem.n, tiles)
        return OperandCuts((r, 1), (1 if problem.transpose_rhs else p_k, p_n), (r, 1))

    def cut_options(self, candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                    target: Target) -> list[OperandCuts]:
        """Its one cut: the rows over as many tiles as they fill."""
        return [self.cuts(candidate, problem, tiles, target)]

    def check(self, plan: OperatorPlanAttr, problem: GemmProblem) -> None:
        lhs, out = (plan.operand_plan(o).format for o in ("lhs", "out"))
        if lhs.partitions[-1] != 1 or out.partitions[-1] != 1:
            raise InvalidPlan("each output-row tile must hold all of K (lhs) and N (out)")

    def buffers(self, plan: OperatorPlanAttr, problem: GemmProblem,
                target: Target) -> dict[str, RowTileBuffer]:
        """Its shards, the rhs receive slot (one block) and the f32 partials panel; `rhs` and
        the slot are the ends of the right-block exchanges."""
        rhs, out = plan.operand_plan("rhs"), plan.operand_plan("out")
        rows = ShardGeometry.from_format(problem.out_shape, out.format).chunk[-2]
        buffers = {
            "lhs": shard_buffer(plan, problem, target, "lhs", "its left shard", False),
            "rhs": shard_buffer(plan, problem, target, "rhs", "its right shard", True),
            "out": shard_buffer(plan, problem, target, "out", "its output shard", False),
            "slot": scratch_buffer("its right-block receive slot", block_bytes(problem.precision),
                                   rhs, target,
                                   rhs.format.memory.data == MemoryClass.INTERLEAVED, True),
        }
        if has_f32_partials_panel(plan):
            buffers["partials"] = scratch_buffer("its f32 partials panel",
                                                 panel_bytes(rows, "f32"), out, target, True,
                                                 False)
        return buffers

    def row_slot_bytes(self, plan: OperatorPlanAttr, problem: GemmProblem,
                       farthest: np.ndarray) -> list[int]:
        """The k = 0 exchange op, then the k loop's: one pair broadcast per batch and block."""
        lhs, _, out = operand_geometries(plan, problem)
        words = block_bytes(problem.precision) // WORD_BYTES
        n_j, n_k = out.padded_shape[-1] // AMP_BLOCK, lhs.padded_shape[-1] // AMP_BLOCK
        stride = phase_stride(words, True, farthest)
        ops = [problem.batch * n_j * stride]
        if n_k > 1:
            ops.append(problem.batch * n_j * (n_k - 1) * stride)
        return ops

    def cycles(self, plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
               target: Target) -> CycleBreakdown:
        """Per batch and (k, j) block, the broadcast of block (k, j) from its home tile to the
        other output-row tiles, a pair broadcast (a sync plus `words / 2 + max L(home,
        receiver)` events: 64-bit items; no step without a receiver), the home tile's copy
        into its slot when it is an output-row tile, and one GEMM call on every row tile;
        per column block, the rounding of the f32 partials panel."""
        precision = problem.precision
        lhs, rhs, out = operand_geometries(plan, problem)
        row_tiles, rows = out.tiles_used, out.chunk[-2]
        n_k, n_j = lhs.padded_shape[-1] // AMP_BLOCK, out.padded_shape[-1] // AMP_BLOCK
        homes = rhs.block_home_tiles((rhs.rank - 2, rhs.rank - 1))[:n_k, :n_j].reshape(-1)
        items = broadcast_events(block_bytes(precision) // WORD_BYTES, pairs=True)
        latency = latency_table(target, tiles)[:, :row_tiles].copy()
        # a home tile that is a row tile does not receive its own broadcast
        inside = homes < row_tiles
        latency_to_others = latency[homes]
        latency_to_others[np.flatnonzero(inside), homes[inside]] = -1
        farthest = latency_to_others.max(axis=1)
        with_receivers = farthest >= 0
        exchange = int(np.sum(target.sync_cycles + items + farthest[with_receivers]))
        copies = int(np.count_nonzero(inside)) * device_cycles.copy_cycles(
            block_bytes(precision), target)
        amp = homes.size * device_cycles.gemm_cycles(rows, precision, target)
        rounding = 0
        if has_f32_partials_panel(plan):
            out_panel, partials_panel = (
                ShardGeometry((row_tiles * rows, AMP_BLOCK), (rows, AMP_BLOCK), (row_tiles, 1),
                              (True, True), 1, row_tiles, p, "amp_output")
                for p in (out.precision, "f32")
            )
            rounding = n_j * device_cycles.convert_shard_cycles(out_panel, partials_panel, 0,
                                                                target)
        batch = problem.batch
        return CycleBreakdown(batch * exchange, batch * copies, batch * amp, batch * rounding)

    def no_tile_count_helps(self, problem: GemmProblem, out: TensorFormatAttr,
                            target: Target) -> str:
        rows = ShardGeometry.from_format(problem.out_shape, out).chunk[-2]
        batches = (
            f" in each of the {problem.batch} batch slices (batch axes are not partitioned)"
            if problem.batch > 1 else ""
        )
        return (
            "no tile count helps: the retained plan partitions output rows only, and on all "
            f"{target.tiles} tiles an output-row tile still holds {rows} rows{batches} (with "
            f"all {problem.n} output columns and all {problem.k} of K)"
        )
