"""GEMM operator candidates: enumeration and validation against concrete types.

The retained AMP GEMM plan (docs/internals.md, "The retained AMP GEMM plan") comes in one
catalog entry per (precision, row block):

- `amp_gemm_f16_r{16,32,64}`: AMP `A16/B16x16/C16`, FP16 in, FP32 partials across all of K
  (kernels `amp_gemm_f16p32_init` / `_accum` on an f32 partials panel, converted to the f16
  output once per column block);
- `amp_gemm_f16_r{16,32,64}_p16`: the same with FP16 partials (kernels `amp_gemm_f16_init` /
  `_accum`, rounded to FP16 after every 64-deep block): cheaper, less accurate, and in the
  catalog only with `graph-to-mid{gemm-partials=f16}`;
- `amp_gemm_f8_r{16,32,64}`: FP8 in, FP16 partials (the only kind the FP8 AMP has);
- `amp_gemm_f32_r{16,32,64}`: AMP `A8/B8x16/C16`, FP32 throughout, kernels
  `amp_gemm_f32_init` / `amp_gemm_f32_accum`.

For `[..., M, K] x [..., K, N]` on `T` tiles a candidate with row block `rb` builds:

- lhs `amp_left`:   batch axes `1 x 1`, rows `rb x R`, K `64 x 1`       (R = min(T, ceil(M / rb)));
- rhs `amp_right`:  batch axes `1 x 1`, K `64 x pK`, N `64 x pN`       (pN = min(nJ, T),
  pK = min(nK, T // pN): the 64x64 blocks spread over the tiles);
- out `amp_output`: batch axes `1 x 1`, rows `rb x R`, N `64 x 1`, interleaved memory;

all with 32-byte (`IPU21.pace_alignment`) alignment, the left stream's access tail, the pair
(out, lhs) in distinct memory elements and no output aliasing. Every candidate is built in
full, then validated against the operand types and against the per-tile memory limits
`place-memory` enforces (a first-fit placement of an output-row tile's buffers by its rules).
A candidate that does not fit says which limit it exceeds, with byte counts
(`planning/gemm_selection.py` adds whether more tiles would help and picks the cheapest valid
candidate by the toy cost model).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import (
    Float8E4M3FNUZType,
    Float16Type,
    Float32Type,
    TensorType,
)
from xdsl.ir import Attribute

from device.kernels import UnknownKernelError, get_kernel
from device.layouts import AMP_BLOCK, AMP_ROWS, block_bytes, panel_bytes
from device.model.kernels_gemm import GEMM_FAMILIES
from device.target import WORD_BYTES, Target, latency_table
from ipu_dialects.graph import Fp8ScaleAttr, fp8_scale
from ipu_dialects.mid import (
    AxisTilingAttr,
    DispatchKind,
    ElementOrder,
    MemoryClass,
    OperandPlanAttr,
    OperandRole,
    OperatorDispatchAttr,
    OperatorPlanAttr,
    TensorFormatAttr,
)
from planning.exchange_rows import (
    duplex_instructions,
    free_row_ranges,
    plan_broadcast,
    receiver_instructions,
    sender_instructions,
    slot_stride,
    take_row_range,
)
from planning.gemm_grid import GRID_ROW_BLOCK, choose_grid, grid_of, lhs_pairs, rhs_pairs
from planning.gemm_ksplit import (
    LAYERS,
    KSplitShape,
    block_words,
    choose_ksplit,
    half_words,
    ksplit_of,
    partials_words,
)
from planning.gemm_ksplit import lhs_pairs as ksplit_lhs_pairs
from planning.gemm_ksplit import rhs_pairs as ksplit_rhs_pairs
from planning.memory_allocator import FirstFit, Request, regions
from planning.shard_geometry import ShardGeometry, ceil_div

GEMM_OPERANDS = ("lhs", "rhs", "out")
ROLE_OF = {"lhs": OperandRole.LEFT, "rhs": OperandRole.RIGHT, "out": OperandRole.OUTPUT}
ORDER_OF = {
    "lhs": ElementOrder.AMP_LEFT,
    "rhs": ElementOrder.AMP_RIGHT,
    "out": ElementOrder.AMP_OUTPUT,
}
GEMM_KERNEL_POINTERS = ("out", "left", "right")
GEMM_DISPATCHES = (DispatchKind.GEMM_BLOCKS, DispatchKind.GEMM_GRID, DispatchKind.GEMM_KSPLIT)
TWO_D_DISPATCHES = (DispatchKind.GEMM_GRID, DispatchKind.GEMM_KSPLIT)


# ----------------------------------------------------------------------------------------------
# The problem: what a graph.gemm asks for, in plain values
# ----------------------------------------------------------------------------------------------


def element_precision(element: Attribute) -> str:
    """Storage precision name of a logical element type."""
    if isinstance(element, Float16Type):
        return "f16"
    if isinstance(element, Float32Type):
        return "f32"
    if isinstance(element, Float8E4M3FNUZType):
        return "f8f143"
    raise ValueError(f"element type {element} has no storage precision")


@dataclass(frozen=True)
class GemmProblem:
    """The concrete operand types of one GEMM: shapes, element precision, transposes."""

    lhs_shape: tuple[int, ...]
    rhs_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    precision: str
    transpose_lhs: bool = False
    transpose_rhs: bool = False
    lhs_scale: int = 0  # FP8 operands: value = q * 2**scale
    rhs_scale: int = 0

    @classmethod
    def from_types(
        cls,
        lhs: TensorType,
        rhs: TensorType,
        out: TensorType,
        transpose_lhs: bool = False,
        transpose_rhs: bool = False,
    ) -> GemmProblem:
        return cls(
            tuple(lhs.get_shape()),
            tuple(rhs.get_shape()),
            tuple(out.get_shape()),
            element_precision(lhs.get_element_type()),
            transpose_lhs,
            transpose_rhs,
            fp8_scale(lhs) if isinstance(lhs.encoding, Fp8ScaleAttr) else 0,
            fp8_scale(rhs) if isinstance(rhs.encoding, Fp8ScaleAttr) else 0,
        )

    def __post_init__(self) -> None:
        # a zero extent leaves nothing to tile: no plan exists (graph.gemm's verifier also
        # rejects it; this keeps unverified IR from reaching the tiling as a bad AxisTiling)
        for operand, label in zip(GEMM_OPERANDS, ("lhs", "rhs", "result")):
            shape = self.shape_of(operand)
            if 0 in shape:
                raise ValueError(
                    f"{label} has shape {list(shape)} with extent 0 at axis {shape.index(0)}; "
                    "the AMP GEMM plan needs every extent >= 1"
                )

    def shape_of(self, operand: str) -> tuple[int, ...]:
        return {"lhs": self.lhs_shape, "rhs": self.rhs_shape, "out": self.out_shape}[operand]

    def transposed(self, operand: str) -> bool:
        return {"lhs": self.transpose_lhs, "rhs": self.transpose_rhs, "out": False}[operand]

    def effective(self) -> GemmProblem:
        """The same GEMM with its transposed operands given as their transposes: the AMP plan
        reads a transposed operand as the untransposed one (orders amp_left_t/amp_right_t)."""
        def untransposed(shape: tuple[int, ...], flag: bool) -> tuple[int, ...]:
            return (*shape[:-2], shape[-1], shape[-2]) if flag else shape

        return GemmProblem(untransposed(self.lhs_shape, self.transpose_lhs),
                           untransposed(self.rhs_shape, self.transpose_rhs), self.out_shape,
                           self.precision, lhs_scale=self.lhs_scale, rhs_scale=self.rhs_scale)

    def scale_of(self, operand: str) -> int:
        return {"lhs": self.lhs_scale, "rhs": self.rhs_scale, "out": 0}[operand]

    @property
    def m(self) -> int:
        return self.out_shape[-2]

    @property
    def n(self) -> int:
        return self.out_shape[-1]

    @property
    def k(self) -> int:
        return self.lhs_shape[-2] if self.transpose_lhs else self.lhs_shape[-1]

    @property
    def batch(self) -> int:
        """Number of broadcast batch GEMMs."""
        return math.prod(self.out_shape[:-2])


def swap_matrix_axes(fmt: TensorFormatAttr, order: str) -> TensorFormatAttr:
    tiling = list(fmt.tiling.data)
    tiling[-2], tiling[-1] = tiling[-1], tiling[-2]
    return fmt.with_changes(tiling=tiling, order=order)


TRANSPOSED_ORDER: dict[str, str] = {ElementOrder.AMP_LEFT: ElementOrder.AMP_LEFT_T,
                                    ElementOrder.AMP_RIGHT: ElementOrder.AMP_RIGHT_T}
UNTRANSPOSED_ORDER: dict[str, str] = {t: o for o, t in TRANSPOSED_ORDER.items()}


def effective_format(fmt: TensorFormatAttr) -> TensorFormatAttr:
    """A transposed operand's format as the format of its transpose (amp_left_t -> amp_left
    with the last two tilings swapped); any other format unchanged."""
    order = fmt.order.data
    return swap_matrix_axes(fmt, UNTRANSPOSED_ORDER[order]) if order in UNTRANSPOSED_ORDER else fmt


def effective_plan(plan: OperatorPlanAttr) -> OperatorPlanAttr:
    """The plan as if its transposed operands were given untransposed."""
    operands = [
        OperandPlanAttr(e.operand.data, e.role.data, effective_format(e.format),
                        e.alignment.data, e.tail.data)
        for e in plan.operands.data
    ]
    return OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                            plan.amp.data, operands, plan.distinct_pairs, plan.alias.data)


# ----------------------------------------------------------------------------------------------
# The catalog
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemmCandidate:
    """A catalog entry: everything about a plan that does not depend on the operand types."""

    name: str
    precision: str
    amp: str
    row_block: int
    accumulate: str = "f32"
    layout: str = "rows"  # "rows": output rows; "grid": a 2-D output grid; "ksplit": two
    # layers of a grid over the halves of K

    def kernel_prefix(self, inner_blocks: int) -> str:
        family = kernel_family(self.precision, self.accumulate, inner_blocks)
        assert family is not None  # the catalog holds supported accumulations only
        return family

    @property
    def output_precision(self) -> str:
        """FP8 inputs give FP16 partials: the output panel is f16."""
        return OUTPUT_PRECISION.get(self.precision, self.precision)


AMP_CONFIG = {"f16": "A16/B16x16/C16", "f32": "A8/B8x16/C16", "f8f143": "AF8/BF8x16/C16"}
KERNEL_PRECISION = {"f16": "f16", "f32": "f32", "f8f143": "f8"}
OUTPUT_PRECISION = {"f8f143": "f16"}
# The kernels of each (input precision, accumulation precision). FP16 inputs accumulate all
# of K in FP32 (`amp_gemm_f16p32_*` keep an f32 partials panel, rounded to FP16 once at the
# end) or, when the pipeline allows it (`gemm-partials=f16`), round to FP16 after every
# 64-deep block (`amp_gemm_f16_*`: cheaper, less accurate). FP8 has FP16 partials only.
# The one table of the families is the kernel table's (`device.model.kernels_gemm`).
KERNEL_FAMILY: dict[tuple[str, str], str] = {(f.precision, f.accumulate): f.prefix
                                             for f in GEMM_FAMILIES}
ACCUMULATE = {"f16": "f32", "f32": "f32", "f8f143": "f16"}
ROW_BLOCKS = (16, 32, 64)
# The explicit, cheaper FP16-partials candidates carry this suffix; they are in the catalog
# only when the pipeline is told accuracy allows it (graph-to-mid{gemm-partials=f16}).
F16_PARTIALS_SUFFIX = "_p16"
PARTIALS_CHOICES = ("f32", "f16")

GRID = "grid"
KSPLIT = "ksplit"
# The K-split sums two layers' FP32 partials, so it exists for the FP32-partials kernels only
# (FP16 and FP32 inputs; FP8's AMP has FP16 partials).
KSPLIT_PRECISIONS = ("f16", "f32")
CATALOG: tuple[GemmCandidate, ...] = tuple(
    GemmCandidate(f"amp_gemm_{KERNEL_PRECISION[p]}_r{rb}", p, AMP_CONFIG[p], rb, ACCUMULATE[p])
    for p in ("f16", "f32", "f8f143")
    for rb in ROW_BLOCKS
) + tuple(
    GemmCandidate(f"amp_gemm_{KERNEL_PRECISION[p]}_grid", p, AMP_CONFIG[p], GRID_ROW_BLOCK,
                  ACCUMULATE[p], GRID)
    for p in ("f16", "f32", "f8f143")
) + tuple(
    GemmCandidate(f"amp_gemm_f16_r{rb}{F16_PARTIALS_SUFFIX}", "f16", AMP_CONFIG["f16"], rb, "f16")
    for rb in ROW_BLOCKS
) + (
    GemmCandidate(f"amp_gemm_f16_grid{F16_PARTIALS_SUFFIX}", "f16", AMP_CONFIG["f16"],
                  GRID_ROW_BLOCK, "f16", GRID),
) + tuple(
    GemmCandidate(f"amp_gemm_{KERNEL_PRECISION[p]}_ksplit", p, AMP_CONFIG[p], GRID_ROW_BLOCK,
                  ACCUMULATE[p], KSPLIT)
    for p in KSPLIT_PRECISIONS
)
CATALOG_NAMES = tuple(c.name for c in CATALOG)


def replicates_an_operand(name: str) -> bool:
    """Whether the catalog entry stores an operand more than once (the K-split's B): the
    entries a program that runs out of memory falls back without (`ipu-pipeline`)."""
    return any(c.name == name and c.layout == KSPLIT for c in CATALOG)


def default_catalog_names(partials: str = "f32") -> tuple[str, ...]:
    """The catalog a pipeline enables when it names none: FP16 partials only when
    `partials` is "f16" (the user said FP16 accuracy over K is enough)."""
    if partials not in PARTIALS_CHOICES:
        raise ValueError(f"gemm-partials={partials}: expected one of {', '.join(PARTIALS_CHOICES)}")
    return tuple(c.name for c in CATALOG
                 if partials == "f16" or not c.name.endswith(F16_PARTIALS_SUFFIX))


F32_PARTIALS_FAMILY = KERNEL_FAMILY[("f16", "f32")]


def kernel_family(precision: str, accumulate: str, inner_blocks: int) -> str | None:
    """The kernel symbol prefix a plan must use (None: no AMP kernels for this accumulation).
    With a single 64-deep K block FP16 inputs need no partials panel: the FP16-output kernels
    compute the one block in FP32 and round once, which is what FP32 partials give."""
    family = KERNEL_FAMILY.get((precision, accumulate))
    if family == F32_PARTIALS_FAMILY and inner_blocks == 1:
        return KERNEL_FAMILY[("f16", "f16")]
    return family


def has_f32_partials_panel(plan: OperatorPlanAttr) -> bool:
    """Whether the plan keeps an f32 partials panel per output-row tile (its kernels are the
    FP32-partials ones), converted to the output once per column block."""
    return (plan.dispatch.init_symbol or "").startswith(F32_PARTIALS_FAMILY)


def inner_blocks(problem: GemmProblem) -> int:
    """nK: 64-deep blocks of the contraction axis."""
    return ceil_div(problem.k, AMP_BLOCK)


def catalog_entries(names: Sequence[str] | None) -> tuple[GemmCandidate, ...]:
    """The enabled catalog entries (all when `names` is empty/None); unknown names raise."""
    if not names:
        return tuple(c for c in CATALOG if c.name in default_catalog_names())
    by_name = {c.name: c for c in CATALOG}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise ValueError(
            f"unknown GEMM candidate(s) {', '.join(unknown)}; known: {', '.join(CATALOG_NAMES)}"
        )
    return tuple(by_name[n] for n in names)


# ----------------------------------------------------------------------------------------------
# Building a complete candidate plan for concrete types
# ----------------------------------------------------------------------------------------------


def row_partitions(m: int, row_block: int, tiles: int) -> int:
    """R = min(T, ceil(M / rb)): output-row tiles."""
    return min(tiles, ceil_div(m, row_block))


def right_partitions(k: int, n: int, tiles: int) -> tuple[int, int]:
    """(pK, pN): 64x64 right blocks spread over the tiles, columns first."""
    n_k, n_j = ceil_div(k, AMP_BLOCK), ceil_div(n, AMP_BLOCK)
    p_n = min(n_j, tiles)
    p_k = max(1, min(n_k, tiles // p_n))
    return p_k, p_n


def _matrix_format(
    precision: str,
    order: str,
    batch_rank: int,
    rows: tuple[int, int],
    cols: tuple[int, int],
    mode: str,
    group: int,
    memory: str = MemoryClass.STANDARD,
    scale: int = 0,
    replication: int = 1,
) -> TensorFormatAttr:
    tiling = [AxisTilingAttr(1, 1, mode)] * batch_rank + [
        AxisTilingAttr(rows[0], rows[1], mode),
        AxisTilingAttr(cols[0], cols[1], mode),
    ]
    return TensorFormatAttr(precision, order, tiling, replication, group, memory, scale)


def partition_counts(candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                     target: Target) -> dict[str, tuple[int, int]]:
    """(row, column) partition counts of each operand's matrix axes. The row plan cuts A and
    the output by rows only and spreads B's 64x64 blocks; the grid plan cuts all three over
    the grid it chooses (`planning/gemm_grid.py`). A transposed rhs keeps K whole on each tile
    (row plan) so that its blocks are numbered the same way in both orders."""
    if candidate.layout == KSPLIT:
        return ksplit_partitions(candidate, problem, tiles, target)
    if candidate.layout == GRID:
        f32_partials = has_f32_partials(candidate, problem)
        grid = choose_grid(problem.m, problem.n, problem.k, tiles, candidate.precision,
                           candidate.output_precision, f32_partials,
                           target.amp_left_access_tail_bytes, target, latency_table(target, tiles))
        return {"lhs": (grid.rows, grid.cols), "rhs": (grid.rows, grid.cols),
                "out": (grid.rows, grid.cols)}
    r = row_partitions(problem.m, candidate.row_block, tiles)
    p_k, p_n = right_partitions(problem.k, problem.n, tiles)
    return {"lhs": (r, 1), "rhs": (1 if problem.transpose_rhs else p_k, p_n), "out": (r, 1)}


def ksplit_partitions(candidate: GemmCandidate, problem: GemmProblem, tiles: int,
                      target: Target) -> dict[str, tuple[int, int]]:
    """The K-split's cuts (`planning/gemm_ksplit.py`): A and the output 2R x C, B R x C in
    each of the two layers (replicated); with no shape (an odd number of K blocks, fewer than
    two row chunks) the row plan's cut on one tile, which validation then refuses."""
    shape = choose_ksplit(problem.m, problem.n, problem.k, tiles, candidate.precision,
                          candidate.output_precision, target.amp_left_access_tail_bytes,
                          target, latency_table(target, tiles))
    if shape is None:
        return {"lhs": (1, 1), "rhs": (1, 1), "out": (1, 1)}
    rows, cols = LAYERS * shape.rows, shape.cols
    return {"lhs": (rows, cols), "rhs": (shape.rows, cols), "out": (rows, cols)}


def has_f32_partials(candidate: GemmCandidate, problem: GemmProblem) -> bool:
    return candidate.kernel_prefix(inner_blocks(problem)) == F32_PARTIALS_FAMILY




DISPATCH_OF_LAYOUT = {"rows": DispatchKind.GEMM_BLOCKS, GRID: DispatchKind.GEMM_GRID,
                      KSPLIT: DispatchKind.GEMM_KSPLIT}
LAYOUT_OF_DISPATCH = {kind: layout for layout, kind in DISPATCH_OF_LAYOUT.items()}
# How diagnostics and `ipu-run --explain` name a layout's plan and tiles.
LAYOUT_NAME = {"rows": "output-row", GRID: "grid", KSPLIT: "K-split"}


def tile_of_plan(plan: OperatorPlanAttr) -> str:
    """"an output-row tile", "a grid tile", "a K-split tile": the subject of memory
    diagnostics."""
    name = LAYOUT_NAME[LAYOUT_OF_DISPATCH[plan.dispatch.kind.data]]
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name} tile"


def build_gemm_plan(
    candidate: GemmCandidate, problem: GemmProblem, tiles: int, indivisible: str, target: Target
) -> OperatorPlanAttr:
    """The complete plan of `candidate` for `problem` (not yet validated). A transposed
    operand is stored transposed (amp_left_t/amp_right_t)."""
    p, mode = candidate.precision, str(indivisible)
    parts = partition_counts(candidate, problem, tiles, target)
    rank_of = {o: len(problem.shape_of(o)) for o in GEMM_OPERANDS}
    formats = {
        "lhs": _matrix_format(
            p, ElementOrder.AMP_LEFT, rank_of["lhs"] - 2,
            (candidate.row_block, parts["lhs"][0]), (AMP_BLOCK, parts["lhs"][1]), mode, tiles,
            scale=problem.lhs_scale if p == problem.precision else 0,
        ),
        "rhs": _matrix_format(
            p, ElementOrder.AMP_RIGHT, rank_of["rhs"] - 2,
            (AMP_BLOCK, parts["rhs"][0]), (AMP_BLOCK, parts["rhs"][1]), mode, tiles,
            scale=problem.rhs_scale if p == problem.precision else 0,
            # the K-split's two layers (none when no shape exists: out is then uncut)
            replication=LAYERS if candidate.layout == KSPLIT and parts["out"][0] > 1 else 1,
        ),
        "out": _matrix_format(
            candidate.output_precision, ElementOrder.AMP_OUTPUT, rank_of["out"] - 2,
            (candidate.row_block, parts["out"][0]), (AMP_BLOCK, parts["out"][1]), mode, tiles,
            MemoryClass.INTERLEAVED,
        ),
    }
    for o in ("lhs", "rhs"):
        if problem.transposed(o):
            formats[o] = swap_matrix_axes(formats[o], TRANSPOSED_ORDER[ORDER_OF[o]])
    tails = {"lhs": target.amp_left_access_tail_bytes, "rhs": 0, "out": 0}
    operands = [
        OperandPlanAttr(o, ROLE_OF[o], formats[o], target.pace_alignment, tails[o])
        for o in GEMM_OPERANDS
    ]
    dispatch = OperatorDispatchAttr(
        DISPATCH_OF_LAYOUT[candidate.layout],
        AMP_BLOCK, AMP_BLOCK,
        f"{candidate.kernel_prefix(inner_blocks(problem))}init",
        f"{candidate.kernel_prefix(inner_blocks(problem))}accum",
    )
    return OperatorPlanAttr(
        candidate.name,
        dispatch,
        candidate.accumulate,
        candidate.amp,
        operands,
        distinct=[("out", "lhs")],
        alias="none",
    )


# ----------------------------------------------------------------------------------------------
# Validation against the concrete operand types
# ----------------------------------------------------------------------------------------------


class InvalidPlan(Exception):
    """Why a candidate cannot run this operation (the message is the reason)."""


def _check_transposes(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    """A transposed operand is stored transposed, an untransposed one is not."""
    for o in ("lhs", "rhs"):
        stored = plan.operand_plan(o).format.order.data in UNTRANSPOSED_ORDER
        if plan.dispatch.kind.data in TWO_D_DISPATCHES and problem.transposed(o):
            layout = LAYOUT_NAME[LAYOUT_OF_DISPATCH[plan.dispatch.kind.data]]
            raise InvalidPlan(f"the {layout} plan reads {o} untransposed; {o} is transposed")
        if stored != problem.transposed(o):
            flag = "transposed" if problem.transposed(o) else "not transposed"
            raise InvalidPlan(
                f"{o} is {flag} but stored {plan.operand_plan(o).format.order.data}"
            )
    if problem.transpose_rhs and effective_format(plan.operand_plan("rhs").format).partitions[-2] != 1:
        raise InvalidPlan("a transposed rhs must keep K whole on each tile")


def _check_dispatch(plan: OperatorPlanAttr) -> None:
    dispatch = plan.dispatch
    if dispatch.kind.data not in GEMM_DISPATCHES:
        raise InvalidPlan(f"dispatch kind {dispatch.kind.data} does not implement a gemm")
    for what, block in (("inner", dispatch.inner_block), ("column", dispatch.column_block)):
        if block != AMP_BLOCK:
            raise InvalidPlan(f"dispatch {what} block {block} is not the AMP block {AMP_BLOCK}")
    names = tuple(entry.operand.data for entry in plan.operands.data)
    if names != GEMM_OPERANDS:
        raise InvalidPlan(f"plan operands {names} are not the gemm operands {GEMM_OPERANDS}")


def _check_kernels(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    """Kernel modes: both kernels exist, take (out, left, right), run this precision and
    keep the plan's partials."""
    dispatch = plan.dispatch
    accumulate = plan.accumulate.data
    family = kernel_family(problem.precision, accumulate, inner_blocks(problem))
    if family is None:
        raise InvalidPlan(
            f"accumulation precision {accumulate} is not supported by the AMP kernels"
        )
    for mode, symbol in (("init", dispatch.init_symbol), ("accum", dispatch.accum_symbol)):
        try:
            abi = get_kernel(symbol or "")
        except UnknownKernelError:
            raise InvalidPlan(f"{mode} kernel @{symbol} is not in the kernel registry") from None
        if not abi.implemented:
            raise InvalidPlan(f"{mode} kernel @{symbol} is {abi.status}, not implemented")
        if abi.pointers != GEMM_KERNEL_POINTERS:
            raise InvalidPlan(
                f"{mode} kernel @{symbol} takes pointers {abi.pointers}, a gemm kernel "
                f"takes {GEMM_KERNEL_POINTERS}"
            )
        if not (symbol or "").startswith(f"amp_gemm_{KERNEL_PRECISION[problem.precision]}"):
            raise InvalidPlan(
                f"{mode} kernel @{symbol} does not run {problem.precision} operands"
            )
        if not (symbol or "").endswith(f"_{mode}"):
            raise InvalidPlan(f"{mode} kernel @{symbol} is not an {mode} kernel")
        if symbol != f"{family}{mode}":
            raise InvalidPlan(
                f"{mode} kernel @{symbol} does not keep {accumulate} partials (the plan's "
                f"accumulation); that is @{family}{mode}"
            )
    for entry in plan.operands.data:
        fmt, o = entry.format, entry.operand.data
        wanted = OUTPUT_PRECISION.get(problem.precision, problem.precision) if o == "out" \
            else problem.precision
        if fmt.precision.data != wanted:
            raise InvalidPlan(
                f"{o} is stored {fmt.precision_text()} but the {o} of these kernels is {wanted}"
            )
        if fmt.scale.data != problem.scale_of(o):
            raise InvalidPlan(f"{o} is stored with FP8 scale {fmt.scale.data}, the operand "
                              f"has scale {problem.scale_of(o)}")


def _check_roles(plan: OperatorPlanAttr, problem: GemmProblem, target: Target) -> None:
    """GEMM layout roles, orders, memory class, alignment, batch and block structure."""
    for entry in plan.operands.data:
        o, fmt = entry.operand.data, entry.format
        if entry.role.data != ROLE_OF[o]:
            raise InvalidPlan(f"{o} has role {entry.role.data}, the AMP plan needs {ROLE_OF[o]}")
        if fmt.order.data != ORDER_OF[o]:
            raise InvalidPlan(f"{o} has order {fmt.order.data}, the AMP plan needs {ORDER_OF[o]}")
        if fmt.rank != len(problem.shape_of(o)):
            raise InvalidPlan(
                f"{o} format tiles {fmt.rank} axes, the operand has {len(problem.shape_of(o))}"
            )
        if entry.alignment.data % target.pace_alignment:
            raise InvalidPlan(
                f"{o} alignment {entry.alignment.data} is not a multiple of the PACE alignment "
                f"{target.pace_alignment}"
            )
        for axis, (block, parts) in enumerate(zip(fmt.blocks[:-2], fmt.partitions[:-2])):
            if (block, parts) != (1, 1):
                raise InvalidPlan(f"{o} batch axis {axis} is tiled {block} x {parts}, not 1 x 1")
    lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
    if out.memory.data != MemoryClass.INTERLEAVED:
        raise InvalidPlan("out must live in interleaved memory")
    if plan.operand_plan("lhs").tail.data < target.amp_left_access_tail_bytes:
        raise InvalidPlan(
            f"lhs access tail {plan.operand_plan('lhs').tail.data} is shorter than the left "
            f"stream's {target.amp_left_access_tail_bytes} bytes"
        )
    if ("out", "lhs") not in plan.distinct_pairs and ("lhs", "out") not in plan.distinct_pairs:
        raise InvalidPlan("out and lhs must sit in distinct memory elements")
    if lhs.blocks[-1] != AMP_BLOCK or rhs.blocks[-2:] != (AMP_BLOCK, AMP_BLOCK):
        raise InvalidPlan("the contraction axis must be tiled in 64-blocks on lhs and rhs")
    if plan.dispatch.kind.data == DispatchKind.GEMM_GRID:
        _check_grid_layout(plan, problem)
    elif plan.dispatch.kind.data == DispatchKind.GEMM_KSPLIT:
        _check_ksplit_layout(plan, problem)
    elif lhs.partitions[-1] != 1 or out.partitions[-1] != 1:
        raise InvalidPlan("each output-row tile must hold all of K (lhs) and N (out)")
    if out.blocks[-1] != AMP_BLOCK:
        raise InvalidPlan("out columns must be tiled in 64-blocks")
    if (lhs.blocks[-2], lhs.partitions[-2]) != (out.blocks[-2], out.partitions[-2]):
        raise InvalidPlan("lhs and out must share the row tiling")
    if lhs.blocks[-2] % AMP_ROWS:
        raise InvalidPlan(f"row block {lhs.blocks[-2]} is not a multiple of the AMP {AMP_ROWS} rows")


def _check_grid_layout(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    """The grid plan: one R x C grid for all three operands, one GEMM (no batch)."""
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


def _check_ksplit_layout(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    """The K-split: two layers of one R x C grid (A and the output cut 2R x C, B R x C and
    replicated in both layers), one GEMM, an even number of K blocks."""
    lhs, rhs, out = (plan.operand_plan(o).format for o in GEMM_OPERANDS)
    if problem.batch != 1:
        raise InvalidPlan(f"the K-split plan runs one GEMM; this one has {problem.batch} batch "
                          "slices")
    if inner_blocks(problem) % LAYERS:
        raise InvalidPlan(f"the K-split plan gives each of its two layers half of K; K has "
                          f"{inner_blocks(problem)} block(s) of {AMP_BLOCK}, an odd number")
    rows, cols = out.partitions[-2:]
    if rows % LAYERS or rows < LAYERS:
        raise InvalidPlan(f"the K-split plan cuts the output rows into two layers of chunks; "
                          f"{problem.m} rows make {rows} chunk(s) of 16 or more")
    if lhs.partitions[-2:] != (rows, cols) or rhs.partitions[-2:] != (rows // LAYERS, cols):
        raise InvalidPlan(
            f"lhs and out must be cut {rows} x {cols} and rhs {rows // LAYERS} x {cols} (out "
            f"{list(out.partitions[-2:])}, lhs {list(lhs.partitions[-2:])}, rhs "
            f"{list(rhs.partitions[-2:])})")
    if rhs.replication.data != LAYERS or lhs.replication.data != 1 or out.replication.data != 1:
        raise InvalidPlan(f"rhs must be replicated in both layers (replication {LAYERS}), lhs "
                          "and out not at all")


def _check_tile_groups(plan: OperatorPlanAttr, tiles: int) -> None:
    for entry in plan.operands.data:
        fmt = entry.format
        used = fmt.replication.data * fmt.partition_count
        if fmt.group.data > tiles or used > tiles:
            raise InvalidPlan(
                f"{entry.operand.data} needs a tile group of {max(fmt.group.data, used)} "
                f"tiles, only {tiles} available"
            )


def _check_divisibility(plan: OperatorPlanAttr, problem: GemmProblem) -> None:
    for entry in plan.operands.data:
        o = entry.operand.data
        shape = problem.shape_of(o)
        g = ShardGeometry.from_format(shape, entry.format)
        for axis in g.rejected_axes():
            raise InvalidPlan(
                f"{o} axis {axis - len(shape)} extent {shape[axis]} is not a multiple of "
                f"block {g.blocks[axis]} and the tiling rejects padding"
            )


# Tile memory: the per-tile limits `place-memory` enforces, checked here so that a plan that
# is chosen can also be placed. Tile 0 is an output-row tile and the home of a right block, so
# it holds every buffer of the GEMM (shards are equal-sized on every tile): its memory decides.


@dataclass(frozen=True)
class RowTileBuffer:
    """One buffer of an output-row tile as `place-memory` sees it."""

    what: str  # for diagnostics: "its left shard"
    request: Request

    @property
    def extent(self) -> int:
        return self.request.extent

    def described(self) -> str:
        if not self.request.tail:
            return self.what
        return f"{self.what} ({self.request.nbytes} bytes + {self.request.tail}-byte access tail)"


def row_tile_buffers(
    plan: OperatorPlanAttr, problem: GemmProblem, target: Target
) -> dict[str, RowTileBuffer]:
    """The buffers of tile 0, in the order `mid-to-tile` declares them (inputs, output, the
    rhs receive slot); `rhs` and the slot are the ends of the right-block exchanges."""

    def buffer(o: str, what: str, exchanged: bool) -> RowTileBuffer:
        entry = plan.operand_plan(o)
        g = ShardGeometry.from_format(problem.shape_of(o), entry.format)
        return RowTileBuffer(what, Request(
            g.shard_bytes(),
            entry.tail.data,
            max(target.pace_alignment, entry.alignment.data),
            entry.format.memory.data == MemoryClass.INTERLEAVED,
            exchanged,
        ))

    rhs, out = plan.operand_plan("rhs"), plan.operand_plan("out")
    out_geometry = ShardGeometry.from_format(problem.out_shape, out.format)
    rows = out_geometry.chunk[-2]
    if plan.dispatch.kind.data == DispatchKind.GEMM_KSPLIT:
        return ksplit_tile_buffers(plan, problem, target, buffer, out_geometry)
    grid = plan.dispatch.kind.data == DispatchKind.GEMM_GRID
    # the grid plan receives all its panels' B blocks at once, and keeps partials for them all
    panels = out_geometry.chunk[-1] // AMP_BLOCK if grid else 1
    buffers = {
        "lhs": buffer("lhs", "its left shard", grid),
        "rhs": buffer("rhs", "its right shard", True),
        "out": buffer("out", "its output shard", False),
        "slot": RowTileBuffer("its right-block receive slot", Request(
            panels * block_bytes(problem.precision),
            0,
            max(target.pace_alignment, rhs.alignment.data),
            rhs.format.memory.data == MemoryClass.INTERLEAVED,
            True,
        )),
    }
    if grid:
        lhs = plan.operand_plan("lhs")
        buffers["lhs_slot"] = RowTileBuffer("its left-panel receive slot", Request(
            panel_bytes(rows, problem.precision), lhs.tail.data,
            max(target.pace_alignment, lhs.alignment.data), False, True))
    if has_f32_partials_panel(plan):
        buffers["partials"] = RowTileBuffer(f"its f32 partials panel{'s' if panels > 1 else ''}",
                                            Request(
            panels * panel_bytes(rows, "f32"), 0, max(target.pace_alignment, out.alignment.data),
            True, False,
        ))
    return buffers


def ksplit_tile_buffers(plan: OperatorPlanAttr, problem: GemmProblem, target: Target,
                        buffer, out_geometry: ShardGeometry) -> dict[str, RowTileBuffer]:
    """A K-split tile's buffers: its shards, the A panel's slot (both halves), the B slot,
    the f32 partials of both halves and the other layer's half it receives."""
    lhs, rhs, out = (plan.operand_plan(o) for o in GEMM_OPERANDS)
    h, panels = out_geometry.chunk[-2], out_geometry.chunk[-1] // AMP_BLOCK

    def scratch(what: str, nbytes: int, entry: OperandPlanAttr, interleaved: bool,
                tail: int = 0) -> RowTileBuffer:
        return RowTileBuffer(what, Request(nbytes, tail, max(target.pace_alignment,
                                                             entry.alignment.data),
                                           interleaved, True))

    half_partials = panels * panel_bytes(h, "f32")
    return {
        "lhs": buffer("lhs", "its left shard", True),
        "rhs": buffer("rhs", "its right shard", True),
        "out": buffer("out", "its output shard", False),
        "slot": scratch("its right-block receive slot", panels * block_bytes(problem.precision),
                        rhs, False),
        "lhs_slot": scratch("its left-panel receive slot",
                            panel_bytes(LAYERS * h, problem.precision), lhs, False, lhs.tail.data),
        "partials": scratch("its f32 partials of both halves", LAYERS * half_partials, out, True),
        "received": scratch("the other layer's half it receives", half_partials, out, True),
    }


class DoesNotFit(InvalidPlan):
    """The plan's buffers do not fit the memory of an output-row tile."""


def _check_capacity(buffers: dict[str, RowTileBuffer], target: Target, who: str) -> None:
    available = target.sram_bytes - target.code_region_bytes
    needed = sum(b.extent for b in buffers.values())
    if needed > available:
        raise DoesNotFit(
            f"{who} needs {needed} bytes, tile memory holds {available} outside "
            "the code region"
        )
    region = target.memory_end - target.interleaved_start
    for b in buffers.values():
        if b.request.interleaved and b.extent > region:
            raise DoesNotFit(
                f"{who} needs {b.extent} bytes of interleaved memory for "
                f"{b.what}, the interleaved region holds {region}"
            )
    interleaved = sum(b.extent for b in buffers.values() if b.request.interleaved)
    if interleaved > region:
        raise DoesNotFit(
            f"{who} needs {interleaved} bytes of interleaved memory, the "
            f"interleaved region holds {region}"
        )


def _placement_failure(
    allocator: FirstFit[str], name: str, partner_names: Sequence[str],
    buffers: dict[str, RowTileBuffer], who: str,
) -> DoesNotFit:
    target = allocator.target
    buffer = buffers[name]
    if partner_names and allocator.find_address(name, buffer.request) is not None:
        others = " and ".join(buffers[p].what.removeprefix("its ") for p in partner_names)
        return DoesNotFit(
            f"{who} cannot keep {buffer.described()} in a memory element apart "
            f"from the {others}: no free range of its memory class avoids their elements"
        )
    standard = (
        "standard memory above the code region's memory elements (an exchanged buffer)"
        if buffer.request.exchanged
        else "standard memory outside the code region"
    )
    free = [
        f"{allocator.largest_free_range(start, stop)} bytes of "
        f"{'interleaved memory' if start >= target.interleaved_start else standard}"
        for start, stop in regions(buffer.request, target)
    ]
    return DoesNotFit(
        f"{who} needs one free range of {buffer.extent} bytes for "
        f"{buffer.described()}; the largest free ranges left are {' and '.join(free)}"
    )


def _check_placement(buffers: dict[str, RowTileBuffer], target: Target,
                     distinct: Sequence[tuple[str, str]], who: str) -> FirstFit[str]:
    allocator: FirstFit[str] = FirstFit(target)
    # interleaved buffers first, like place-memory: they have only one region to go to
    order = [n for n, b in buffers.items() if b.request.interleaved]
    order += [n for n, b in buffers.items() if not b.request.interleaved]
    for name in order:
        partners = [b for a, b in distinct if a == name] + [a for a, b in distinct if b == name]
        if allocator.place(name, buffers[name].request, partners) is None:
            raise _placement_failure(allocator, name, partners, buffers, who)
    return allocator


# Exchange rows. `schedule-exchange` gives every iteration of an exchange op its own row slot
# and bump-allocates each op's slots as one range: in the code region while it has room, then
# in standard memory that no buffer occupies and that lies outside the memory elements of the
# exchanged buffers (`passes/schedule_exchange.py`, `RowMemory`). The plan's two exchange ops
# (k = 0 and the accumulating k loop) must find their ranges there, next to its buffers.


def row_slot_bytes(problem: GemmProblem, plan: OperatorPlanAttr, tiles: int,
                   target: Target) -> list[int]:
    """Bytes of row slots of each exchange op of the plan (init phases, then the k loop)."""
    if tiles == 1:
        return []  # one tile holds every block: no exchange
    # the rows' length depends on the phase's events only past a `delay`'s range: the
    # farthest receiver on the chip is as long as any phase gets
    farthest = np.full((2, 2), target.max_latency(tiles))

    def stride(words: int, pairs: bool) -> int:
        phase = plan_broadcast(0, (1,), words, 0, 0, farthest, pairs)
        return slot_stride([sender_instructions(phase), receiver_instructions(phase)])

    out, lhs, rhs = (ShardGeometry.from_format(problem.shape_of(o), plan.operand_plan(o).format)
                     for o in ("out", "lhs", "rhs"))
    if plan.dispatch.kind.data == DispatchKind.GEMM_KSPLIT:
        return ksplit_row_slot_bytes(ksplit_of(out, lhs, rhs), problem.precision, farthest)
    if plan.dispatch.kind.data == DispatchKind.GEMM_GRID:
        # per K block one A panel and one set of B blocks; the k = 0 ops, then the k loop's
        n_k = ceil_div(problem.k, AMP_BLOCK)
        panel = panel_bytes(out.chunk[-2], problem.precision) // WORD_BYTES
        blocks = out.chunk[-1] // AMP_BLOCK * block_bytes(problem.precision) // WORD_BYTES
        grid = grid_of(out, lhs, rhs)
        return [count * stride(words, pairs) for count in (1, n_k - 1) if count
                for words, pairs in ((panel, lhs_pairs(grid)), (blocks, rhs_pairs(grid)))]
    words = block_bytes(problem.precision) // WORD_BYTES
    n_j, n_k = out.padded_shape[-1] // AMP_BLOCK, lhs.padded_shape[-1] // AMP_BLOCK
    ops = [problem.batch * n_j * stride(words, True)]  # the row plan broadcasts to pairs
    if n_k > 1:
        ops.append(problem.batch * n_j * (n_k - 1) * stride(words, True))
    return ops


def ksplit_row_slot_bytes(shape: KSplitShape, precision: str,
                          farthest: np.ndarray) -> list[int]:
    """Row slots of the K-split's exchange ops: per step (i = 0, then the loop) the A phases
    and the B phase, then the partials' phase; the phases whose senders also receive have
    full-duplex rows (`duplex_instructions`), the longest of a phase's rows sets its stride."""

    def stride(words: int, pairs: bool, duplex: bool) -> int:
        phase = plan_broadcast(0, (1,), words, 0, 0, farthest, pairs)
        rows = [sender_instructions(phase), receiver_instructions(phase)]
        if duplex:
            rows.append(duplex_instructions(phase, phase))
        return slot_stride(rows)

    a_words, b_words = half_words(shape, precision), block_words(shape, precision)
    per_step = [stride(a_words, ksplit_lhs_pairs(shape), False)] if shape.cols > 1 else []
    per_step.append(stride(a_words, ksplit_lhs_pairs(shape), True))
    if shape.rows > 1:
        per_step.append(stride(b_words, ksplit_rhs_pairs(shape), False))
    slots = [count * nbytes for count in (1, shape.steps - 1) if count for nbytes in per_step]
    return [*slots, stride(partials_words(shape), False, True)]


def row_ranges(allocator: FirstFit[str], exchanged: Sequence[str],
               target: Target) -> list[list[int]]:
    """The ranges `schedule-exchange` would give row slots on a tile placed like `allocator`."""
    busy = frozenset().union(*(target.elements_of_range(p.address, p.extent)
                               for p in allocator.placed if p.key in exchanged))
    return free_row_ranges(sorted((p.address, p.end) for p in allocator.placed), busy, target)


def _check_row_slots(allocator: FirstFit[str], plan: OperatorPlanAttr, problem: GemmProblem,
                     tiles: int, target: Target, who: str) -> None:
    exchanged = [name for name, b in row_tile_buffers(plan, problem, target).items()
                 if b.request.exchanged]
    ranges = row_ranges(allocator, exchanged, target)
    for nbytes in row_slot_bytes(problem, plan, tiles, target):
        if take_row_range(ranges, nbytes) is None:
            largest = max((end - start for start, end in ranges), default=0)
            raise DoesNotFit(
                f"{who} has no room for the exchange rows: one exchange needs "
                f"{nbytes} bytes of row slots in one range of the code region or of standard "
                f"memory outside the exchanged buffers' memory elements; the largest such "
                f"range left is {largest} bytes"
            )


def _check_memory(plan: OperatorPlanAttr, problem: GemmProblem, tiles: int,
                  target: Target) -> None:
    """The checks `place-memory` makes, for the buffers of an output-row tile."""
    buffers = row_tile_buffers(plan, problem, target)
    who = tile_of_plan(plan)
    _check_capacity(buffers, target, who)
    distinct = list(plan.distinct_pairs)
    if "partials" in buffers:  # the partials panel is the kernels' out: apart from lhs too
        distinct.append(("partials", "lhs"))
    if "lhs_slot" in buffers:  # the grid's kernels read A from the slot or from home
        distinct.extend((o, "lhs_slot") for o in ("out", "partials") if o in buffers)
    if "received" in buffers:  # the K-split's full-duplex phases: sent and received apart
        distinct.extend([("partials", "received"), ("lhs", "lhs_slot")])
    allocator = _check_placement(buffers, target, distinct, who)
    _check_row_slots(allocator, plan, problem, tiles, target, who)


def validation_failure(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> InvalidPlan | None:
    try:
        _check_transposes(plan, problem)
        plan, problem = effective_plan(plan), problem.effective()
        _check_dispatch(plan)
        _check_kernels(plan, problem)
        _check_roles(plan, problem, target)
        _check_tile_groups(plan, tiles)
        _check_divisibility(plan, problem)
        _check_memory(plan, problem, tiles, target)
    except InvalidPlan as reason:
        return reason
    return None


def validate_gemm_plan(
    plan: OperatorPlanAttr, problem: GemmProblem, tiles: int, target: Target
) -> str | None:
    """None if `plan` can run `problem` on `tiles` tiles, else the reason it cannot."""
    failure = validation_failure(plan, problem, tiles, target)
    return None if failure is None else str(failure)
