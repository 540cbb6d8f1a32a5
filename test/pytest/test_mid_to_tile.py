"""mid-to-tile: GEMM lowering to tile work lists (passes/mid_to_tile.py)."""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func, test
from xdsl.dialects.builtin import ModuleOp, TensorType, f16, f32
from xdsl.ir import Block, Region
from xdsl.utils.exceptions import PassFailedException

from device.layouts import block_bytes, panel_bytes
from device.target import IPU21
from ipu_dialects import mid
from ipu_dialects.tile import BufferOp, ExchangeOp, KernelOp, LoopOp
from ipu_dialects.tile_iteration import evaluate_scalar_map, iteration_vectors
from passes.mid_to_tile import MidToTilePass
from planning.gemm_problem import CATALOG, GemmProblem
from planning.gemm_selection import build_gemm_plan
from planning.shard_geometry import geometry


def with_format(shape, element, fmt: mid.TensorFormatAttr) -> TensorType:
    return TensorType(element, list(shape), fmt)


def build_gemm_module(
    lhs_shape, rhs_shape, out_shape, tiles: int, precision: str = "f16", row_block: int = 16
) -> ModuleOp:
    """A mid module with one `mid.gemm`, planned by the retained AMP plan (planning/gemm_rows.py)."""
    element = f16 if precision == "f16" else f32
    candidate = next(
        c for c in CATALOG if c.precision == precision and c.row_block == row_block
    )
    problem = GemmProblem(tuple(lhs_shape), tuple(rhs_shape), tuple(out_shape), precision)
    plan = build_gemm_plan(candidate, problem, tiles, "pad", IPU21)
    formats = {p.operand.data: p.format for p in plan.operands.data}
    a_t = with_format(lhs_shape, element, formats["lhs"])
    b_t = with_format(rhs_shape, element, formats["rhs"])
    c_t = with_format(out_shape, element, formats["out"])
    block = Block(arg_types=[a_t, b_t])
    block.args[0].name_hint = "a"
    block.args[1].name_hint = "b"
    gemm = mid.GemmOp(block.args[0], block.args[1], c_t, plan)
    gemm.result.name_hint = "c"
    block.add_ops([gemm, func.ReturnOp(gemm.result)])
    function = func.FuncOp("gemm", ((a_t, b_t), (c_t,)), Region(block))
    module = ModuleOp([function])
    module.attributes["ipu.config"] = mid.PipelineConfigAttr("ipu21", tiles)
    return module


def lower(module: ModuleOp) -> ModuleOp:
    MidToTilePass().apply(Context(), module)
    module.verify()
    return module


def ops_of(module: ModuleOp, kind):
    return [op for op in module.walk() if isinstance(op, kind)]


def test_op_count_does_not_grow_with_tiles():
    counts = {}
    for tiles in (16, 184, 1472):
        module = build_gemm_module((2944, 1024), (1024, 1024), (2944, 1024), tiles)
        lower(module)
        counts[tiles] = sum(1 for _ in module.walk())
    assert len(set(counts.values())) == 1, counts


def test_op_count_does_not_grow_with_blocks():
    small = lower(build_gemm_module((64, 128), (128, 128), (64, 128), 4))
    large = lower(build_gemm_module((64, 1024), (1024, 2048), (64, 2048), 4))
    assert sum(1 for _ in small.walk()) == sum(1 for _ in large.walk())


@pytest.mark.parametrize(
    "shapes, tiles, precision",
    [
        (((64, 256), (256, 192), (64, 192)), 4, "f16"),
        (((100, 130), (130, 70), (100, 70)), 4, "f32"),
        (((2, 1, 48, 128), (3, 128, 64), (2, 3, 48, 64)), 4, "f16"),
        (((256, 64), (64, 256), (256, 256)), 16, "f32"),
        (((32, 192), (192, 64), (32, 64)), 1, "f16"),
    ],
)
def test_every_block_comes_from_its_home_and_every_panel_is_used(shapes, tiles, precision):
    lhs_shape, rhs_shape, out_shape = shapes
    module = lower(build_gemm_module(lhs_shape, rhs_shape, out_shape, tiles, precision))
    buffers = {op.sym_name.data: op for op in ops_of(module, BufferOp)}
    b_buf = buffers["b"]
    bg = geometry(b_buf.origin.get_shape(), b_buf.origin.encoding)
    n_k = -(-lhs_shape[-1] // 64)
    n_j = -(-out_shape[-1] // 64)
    batch = out_shape[:-2]
    rows = buffers["c"].shard_shape[-2]
    # FP16 inputs keep FP32 partials in one f32 panel, rounded into panel j of c once
    partials = buffers.get("c_partials")
    assert (partials is not None) == (precision == "f16")
    seen_gemm, rounded = set(), set()
    for kernel in ops_of(module, KernelOp):
        if kernel.symbol == "copy_words":
            continue
        loops = [p for p in _parents(kernel) if isinstance(p, LoopOp)]
        bounds = [(loop.lower_bound, loop.upper_bound) for loop in loops]
        c_shard = buffers["c"].shard_shape
        if kernel.symbol == "convert_shard":
            assert [v.owner for v in kernel.views] == [buffers["c"], partials]
            out_off, src_off = (evaluate_scalar_map(m.data, bounds) for m in kernel.offsets.data)
            for n, (*bidx, j) in enumerate(iteration_vectors(bounds)):
                rounded.add((tuple(bidx), int(j)))
                lin_c = int(np.ravel_multi_index(bidx, batch)) if batch else 0
                assert out_off[n] == (lin_c * (c_shard[-1] // 64) + j) * panel_bytes(rows, precision)
                assert src_off[n] == 0
            continue
        init = kernel.symbol.endswith("_init")
        assert kernel.scalar_values == (rows,)
        out_off, left_off, right_off = (
            evaluate_scalar_map(m.data, bounds) for m in kernel.offsets.data
        )
        assert kernel.views[0].owner is (buffers["c"] if partials is None else partials)
        for n, ivs in enumerate(iteration_vectors(bounds)):
            *bidx, j = ivs if init else ivs[:-1]
            k = 0 if init else ivs[-1]
            seen_gemm.add((tuple(bidx), int(k), int(j)))
            # out panel j of this batch (or the partials panel), left panel k of the
            # (broadcast) batch
            lin_c = int(np.ravel_multi_index(bidx, batch)) if batch else 0
            panel_j = (lin_c * (c_shard[-1] // 64) + j) * panel_bytes(rows, precision)
            assert out_off[n] == (panel_j if partials is None else 0)
            a_batch = [0 if e == 1 else i for e, i in zip(lhs_shape[:-2], bidx[len(bidx) - (len(lhs_shape) - 2):])]
            lin_a = int(np.ravel_multi_index(a_batch, lhs_shape[:-2])) if a_batch else 0
            a_shard = buffers["a"].shard_shape
            assert left_off[n] == (lin_a * (a_shard[-1] // 64) + k) * panel_bytes(rows, precision)
            assert right_off[n] == 0
    assert len(seen_gemm) == max(1, int(np.prod(batch))) * n_k * n_j
    assert len(rounded) == (max(1, int(np.prod(batch))) * n_j if partials is not None else 0)
    # every exchange sends block (k, j) from the tile that stores it, at its offset there
    for exchange in ops_of(module, ExchangeOp):
        loops = [p for p in _parents(exchange) if isinstance(p, LoopOp)]
        bounds = [(loop.lower_bound, loop.upper_bound) for loop in loops]
        tiles_ = evaluate_scalar_map(exchange.src_tile.data, bounds)
        offsets = evaluate_scalar_map(exchange.src_offset.data, bounds)
        assert exchange.word_count * 4 == block_bytes(precision)
        for n, ivs in enumerate(iteration_vectors(bounds)):
            init = len(ivs) == len(batch) + 1
            *bidx, j = ivs if init else ivs[:-1]
            k = 0 if init else ivs[-1]
            b_batch = [0 if e == 1 else i for e, i in zip(rhs_shape[:-2], bidx[len(bidx) - (len(rhs_shape) - 2):])]
            elem = (*b_batch, k * 64, j * 64)
            q = tuple(bg.partition_of_element(ax, e) for ax, e in enumerate(elem))
            assert tiles_[n] == bg.tile_of(q)
            local = [e - o for e, o in zip(elem, bg.origin(q))]
            chunk = bg.shard_shape
            lin_b = int(np.ravel_multi_index(local[:-2], chunk[:-2])) if local[:-2] else 0
            block_index = (lin_b * (chunk[-2] // 64) + local[-2] // 64) * (chunk[-1] // 64) + local[-1] // 64
            assert offsets[n] == block_index * block_bytes(precision)


def _parents(op):
    out = []
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        out.append(parent)
        parent = parent.parent_op()
    return out[::-1]


def test_copy_runs_exactly_where_the_home_tile_is_an_output_row_tile():
    # 32 rows -> 2 row tiles on 8 tiles; B's 4x2 blocks live on tiles 0..7: the init phase's
    # homes (tiles 0, 1) are row tiles, the accumulating phases' homes (2..7) never are.
    module = lower(build_gemm_module((32, 256), (256, 128), (32, 128), 8))
    exchanges = ops_of(module, ExchangeOp)
    assert len(exchanges) == 2
    with_copy = []
    for exchange in exchanges:
        bounds = [(loop.lower_bound, loop.upper_bound) for loop in _parents(exchange) if isinstance(loop, LoopOp)]
        homes = set(evaluate_scalar_map(exchange.src_tile.data, bounds).tolist())
        copies = [
            op for op in exchange.parent_block().ops
            if isinstance(op, KernelOp) and op.symbol == "copy_words"
        ]
        with_copy.append(bool(copies))
        assert bool(copies) == bool(homes & set(exchange.dst_tiles.tiles()))
        for copy in copies:
            assert copy.on_tile == exchange.src_tile and copy.offsets.data[1] == exchange.src_offset
    assert with_copy == [True, False]


def test_op_no_operator_lowers_is_named():
    module = build_gemm_module((16, 64), (64, 64), (16, 64), 1)
    (function,) = ops_of(module, func.FuncOp)
    gemm = next(op for op in function.body.block.ops if isinstance(op, mid.GemmOp))
    other = test.TestOp(operands=[gemm.result], result_types=[gemm.result.type])
    other.results[0].name_hint = "y"
    function.body.block.insert_op_after(other, gemm)
    with pytest.raises(PassFailedException,
                       match=r"cannot lower test.op \(result %y\): no operator of passes/operators"):
        MidToTilePass().apply(Context(), module)


def test_missing_config_is_a_diagnostic():
    module = build_gemm_module((16, 64), (64, 64), (16, 64), 1)
    del module.attributes["ipu.config"]
    with pytest.raises(PassFailedException, match="no 'ipu.config'"):
        MidToTilePass().apply(Context(), module)
