"""What a `graph.gemm` asks for (`GemmProblem`) and the catalog of plans that may answer it.

The catalog holds one entry per (precision, partials, layout, row block); an entry's layout
is its dispatch kind (`DispatchKind`, the only tag a layout has), whose strategy
(`planning/gemm_layout.py`) cuts the operands, sizes the buffers and costs the work:

- `amp_gemm_f16_r{16,32,64}` (`gemm_blocks`, output rows): AMP `A16/B16x16/C16`, FP16 in,
  FP32 partials across all of K (kernels `amp_gemm_f16p32_init` / `_accum` on an f32
  partials panel, converted to the f16 output once per column block);
- `amp_gemm_f16_r{16,32,64}_p16`: the same with FP16 partials (kernels `amp_gemm_f16_init` /
  `_accum`, rounded to FP16 after every 64-deep block): cheaper, less accurate, and in the
  catalog only with `graph-to-mid{gemm-partials=f16}`;
- `amp_gemm_f8_r{16,32,64}`: FP8 in, FP16 partials (the only kind the FP8 AMP has);
- `amp_gemm_f32_r{16,32,64}`: AMP `A8/B8x16/C16`, FP32 throughout;
- `amp_gemm_{f16,f32,f8}_grid`, `amp_gemm_f16_grid_p16` (`gemm_grid`, a 2-D output grid);
- `amp_gemm_{f16,f32}_ksplit` (`gemm_ksplit`, two layers of a grid over the halves of K).
- `amp_gemm_{f16,f32}_grid3d` (`gemm_grid3d`, L layers of one grid over the L-ths of K).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import get_args

import numpy as np
from xdsl.dialects.builtin import (
    Float8E4M3FNUZType,
    Float16Type,
    Float32Type,
    TensorType,
)
from xdsl.ir import Attribute

from device.layouts import AMP_BLOCK, AMP_ROWS, FP8_MAX, FP8_SCALE_RANGE
from device.model.kernels_gemm import GEMM_FAMILIES
from device.target import Precision
from ipu_dialects.graph import fp8_scale
from ipu_dialects.mid import (
    DispatchKind,
    ElementOrder,
    OperandPlanAttr,
    OperandRole,
    OperatorPlanAttr,
    TensorFormatAttr,
)
from ipu_dialects.mid_config import GemmPartials
from planning.shard_geometry import ShardGeometry, ceil_div

GEMM_OPERANDS = ("lhs", "rhs", "out")
ROLE_OF = {"lhs": OperandRole.LEFT, "rhs": OperandRole.RIGHT, "out": OperandRole.OUTPUT}
ORDER_OF = {
    "lhs": ElementOrder.AMP_LEFT,
    "rhs": ElementOrder.AMP_RIGHT,
    "out": ElementOrder.AMP_OUTPUT,
}


# ----------------------------------------------------------------------------------------------
# The problem: what a graph.gemm asks for, in plain values
# ----------------------------------------------------------------------------------------------


F16_MAX = float(np.finfo(np.float16).max)
# How far an FP8 GEMM's partials may sit above the result's scale: FP16's subnormal step is
# 2**-24 of the unit, FP8's 2**-10, so 10 keeps the partials 2**4 times finer.
PARTIAL_HEADROOM = 10


def stored_scale(value_type: TensorType) -> int:
    """The scale a value is stored with: its mid format's once it has one (a value lowered
    for an earlier consumer), else its graph type's FP8 scale (0 without one)."""
    encoding = value_type.encoding
    return encoding.scale.data if isinstance(encoding, TensorFormatAttr) else fp8_scale(value_type)


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
    out_scale: int = 0  # FP8: the result's declared scale (the partials': `partial_scale`)
    # the rows are this many stacked slices of equal size (a folded batch,
    # `planning/gemm_fold.py`): the 2-D layouts keep each tile's rows inside one slice
    row_slices: int = 1

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
            stored_scale(lhs),
            stored_scale(rhs),
            stored_scale(out),
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
                           self.precision, lhs_scale=self.lhs_scale, rhs_scale=self.rhs_scale,
                           out_scale=self.out_scale, row_slices=self.row_slices)

    def scale_of(self, operand: str) -> int:
        return {"lhs": self.lhs_scale, "rhs": self.rhs_scale, "out": self.partial_scale}[operand]

    @property
    def partial_scale(self) -> int:
        """FP8: the unit 2**s of the FP16 partials (the output panel holds value / 2**s). The
        result's scale, so that FP16 holds every FP8 value of it, raised until K products of
        the largest codes cannot overflow FP16 (an infinite partial would stay infinite
        whatever the later blocks add, and could saturate the result with the wrong sign),
        by at most `PARTIAL_HEADROOM`: FP16's smallest step stays 2**4 times finer than
        the result's smallest FP8 step."""
        if self.precision != Precision.F8F143:
            return 0
        worst = self.k * FP8_MAX**2 * 2.0 ** (self.lhs_scale + self.rhs_scale)
        needed = math.ceil(math.log2(worst / F16_MAX))
        return min(max(self.out_scale, needed), self.out_scale + PARTIAL_HEADROOM,
                   FP8_SCALE_RANGE.stop - 1)

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

    @property
    def inner_blocks(self) -> int:
        """nK: 64-deep blocks of the contraction axis."""
        return ceil_div(self.k, AMP_BLOCK)


class InvalidPlan(Exception):
    """Why a candidate cannot run this problem (the message is the reason)."""


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


def with_operand_formats(plan: OperatorPlanAttr,
                         formats: Mapping[str, TensorFormatAttr]) -> OperatorPlanAttr:
    """`plan` with the operands named in `formats` stored in those formats instead (every
    other field, and every operand not named, as it was)."""
    operands = [
        OperandPlanAttr(e.operand.data, e.role.data, formats.get(e.operand.data, e.format),
                        e.alignment.data, e.tail.data)
        for e in plan.operands.data
    ]
    return OperatorPlanAttr(plan.candidate.data, plan.dispatch, plan.accumulate.data,
                            plan.amp.data, operands, plan.distinct_pairs, plan.alias.data)


def effective_plan(plan: OperatorPlanAttr) -> OperatorPlanAttr:
    """The plan as if its transposed operands were given untransposed."""
    return with_operand_formats(plan, {e.operand.data: effective_format(e.format)
                                       for e in plan.operands.data})


def operand_geometries(plan: OperatorPlanAttr,
                       problem: GemmProblem) -> tuple[ShardGeometry, ShardGeometry, ShardGeometry]:
    """(lhs, rhs, out): the geometry of each operand's format."""
    lhs, rhs, out = (ShardGeometry.from_format(problem.shape_of(o), plan.operand_plan(o).format)
                     for o in GEMM_OPERANDS)
    return lhs, rhs, out


# ----------------------------------------------------------------------------------------------
# The kernels
# ----------------------------------------------------------------------------------------------

AMP_CONFIG = {"f16": "A16/B16x16/C16", "f32": "A8/B8x16/C16", "f8f143": "AF8/BF8x16/C16"}
KERNEL_PRECISION = {"f16": "f16", "f32": "f32", "f8f143": "f8"}
OUTPUT_PRECISION = {"f8f143": "f16"}
# The kernels of each (input precision, accumulation precision). FP16 inputs accumulate all
# of K in FP32 (`amp_gemm_f16p32_*` keep an f32 partials panel, rounded to FP16 once at the
# end) or, when the pipeline allows it (`gemm-partials=f16`), round to FP16 after every
# 64-deep block (`amp_gemm_f16_*`: cheaper, less accurate). FP8 has FP16 partials only.
# Read only through `kernel_family` (the GEMM kernel records may move to `device/`).
# The one table of the families is the kernel table's (`device.model.kernels_gemm`).
KERNEL_FAMILY: dict[tuple[str, str], str] = {(f.precision, f.accumulate): f.prefix
                                             for f in GEMM_FAMILIES}
ACCUMULATE = {"f16": "f32", "f32": "f32", "f8f143": "f16"}
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
    dispatch: DispatchKind = DispatchKind.GEMM_BLOCKS  # the layout

    def kernel_prefix(self, inner_blocks: int) -> str:
        family = kernel_family(self.precision, self.accumulate, inner_blocks)
        assert family is not None  # the catalog holds supported accumulations only
        return family

    def has_f32_partials(self, problem: GemmProblem) -> bool:
        return self.kernel_prefix(problem.inner_blocks) == F32_PARTIALS_FAMILY

    @property
    def output_precision(self) -> str:
        """FP8 inputs give FP16 partials: the output panel is f16."""
        return OUTPUT_PRECISION.get(self.precision, self.precision)


ROW_BLOCKS = (16, 32, 64)
GRID_ROW_BLOCK = AMP_ROWS  # rows per tile of the 2-D layouts are a multiple of the AMP's 16
# The explicit, cheaper FP16-partials candidates carry this suffix; they are in the catalog
# only when the pipeline is told accuracy allows it (graph-to-mid{gemm-partials=f16}).
F16_PARTIALS_SUFFIX = "_p16"
PARTIALS_CHOICES: tuple[str, ...] = get_args(GemmPartials)
# The K-split and the 3-D grid sum their layers' FP32 partials, so they exist for the
# FP32-partials kernels only (FP16 and FP32 inputs; FP8's AMP has FP16 partials).
KSPLIT_PRECISIONS = ("f16", "f32")
GRID, KSPLIT, GRID3D = DispatchKind.GEMM_GRID, DispatchKind.GEMM_KSPLIT, DispatchKind.GEMM_GRID3D
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
) + tuple(
    GemmCandidate(f"amp_gemm_{KERNEL_PRECISION[p]}_grid3d", p, AMP_CONFIG[p], GRID_ROW_BLOCK,
                  ACCUMULATE[p], GRID3D)
    for p in KSPLIT_PRECISIONS
)
CATALOG_NAMES = tuple(c.name for c in CATALOG)
# Layouts outside the default catalog, offered over the whole program: chosen op by op, the
# 3-D grid wins where a GEMM's output leaves most tiles idle (BERT-base on 1472 tiles:
# 422,338 -> 278,842 modeled cycles) but can lose the program what its GEMM saves
# (GPT-2-small: its down projection's output on a third of the tiles makes the layer norm,
# the up projection's input and the gelu around it slower, 644,088 -> 677,003). With
# program-layouts=true and no catalog, graph-to-mid lowers each function with and without
# them and keeps the cheaper by its program estimate (`opt_in_catalog_names`,
# `graph_to_mid.lower_cheaper_catalog`); a catalog that is named is taken as given.
OPT_IN_LAYOUTS = (GRID3D,)


def default_catalog_names(partials: str = "f32") -> tuple[str, ...]:
    """The catalog a pipeline enables when it names none: FP16 partials only when
    `partials` is "f16" (the user said FP16 accuracy over K is enough); the opt-in layouts
    (`OPT_IN_LAYOUTS`) never (graph-to-mid{program-layouts=true} tries them over the
    whole program)."""
    return tuple(c.name for c in partials_catalog(partials) if c.dispatch not in OPT_IN_LAYOUTS)


def opt_in_catalog_names(partials: str = "f32") -> tuple[str, ...]:
    """The default catalog with the opt-in layouts added (with program-layouts=true and no
    catalog, graph-to-mid also lowers each function with these and keeps the lowering its
    program estimate says is cheaper: `passes/graph_to_mid.py`, `lower_cheaper_catalog`)."""
    return default_catalog_names(partials) + tuple(
        c.name for c in partials_catalog(partials) if c.dispatch in OPT_IN_LAYOUTS)


def partials_catalog(partials: str) -> tuple[GemmCandidate, ...]:
    """The catalog entries `partials` allows: the FP16-partials ones only with "f16"."""
    if partials not in PARTIALS_CHOICES:
        raise ValueError(f"gemm-partials={partials}: expected one of {', '.join(PARTIALS_CHOICES)}")
    return tuple(c for c in CATALOG
                 if partials == "f16" or not c.name.endswith(F16_PARTIALS_SUFFIX))


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
