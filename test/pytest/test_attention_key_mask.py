"""graph.attention's key padding mask (`key_mask`, i32 [batch..., Sk] of 0/1) on the device:
the `attention_block_*_masked` kernels against their definition, the blocked plans with a
mask against the reference (and their cost estimate against what the model charges), the
refusals, and the importers' recognition of masks that are not key padding masks."""

from __future__ import annotations

import numpy as np
import pytest
from e2e_support import CompiledCase, run_verdict
from kernels_support import AREAS, T, run
from test_attention_blocked import blocked, own_cycles  # noqa: F401  (a fixture)

from device.kernels import get_kernel, kernel_cycles
from device.layouts import pack, unpack
from device.model import ModelError
from device.model.cycles_attention import block_cycles_of
from device.model.host import values_of_stored
from device.model.memory import TileMemory
from device.package import KernelStep
from frontend.builder import GraphBuilder
from interpreters.graph import InterpreterError, find_function, run_function
from ipu_dialects import graph
from passes.operators.attention import KEY_MASK_RETAINED, AttentionOperator
from passes.operators.base import NoValidPlan, SelectionContext
from tools.ipu_run import compile_module, random_inputs
from tools.run_io import fp8_spreads

WORD = 4


# ---- the kernels against their definition -------------------------------------------------
def definition(query, keys, values, scale, keep):
    """softmax over the attended keys of scale * Q K^T, times V; zeros for a row that
    attends to no key."""
    scores = np.where(keep[None, :], scale * (query.astype(np.float64) @ keys.T), -np.inf)
    if not keep.any():
        return np.zeros((query.shape[0], values.shape[1]))
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ values


ROWS, HEAD_DIM, KEYS = 32, 64, 100  # two key blocks, the second padded past key 100


def masked_kernel_run(mask: np.ndarray, heads: int, tiles: list[int]):
    """Blocks 0 and 1 of `attention_block_f32_{init,accum}_masked`, then `attention_finish_f32`,
    on `tiles` (one partition each: tile t is slice t); the same Q, K, V on every tile, the
    whole mask on every tile. Returns (the outputs per tile, Q, K, V, cycles per call)."""
    rng = np.random.default_rng(3)
    query = rng.standard_normal((ROWS, HEAD_DIM)).astype(np.float32)
    keys = rng.standard_normal((KEYS, HEAD_DIM)).astype(np.float32)
    values = rng.standard_normal((KEYS, HEAD_DIM)).astype(np.float32)
    memory = TileMemory(T, max(tiles) + 1)
    interleaved = T.interleaved_start
    out, stats, scores, probs, q_at, k_at, v_at, m_at = (
        interleaved, AREAS[0], interleaved + 0x8000, AREAS[1], AREAS[2], AREAS[3], AREAS[4],
        AREAS[4] + 0x8000)
    for tile in tiles:
        memory.write(tile, q_at, pack(query, "amp_left", "f32"))
        memory.write(tile, m_at, mask.astype("<i4"))
    scalars = dict(key_length=KEYS, causal=0, scale_bits=0x3E000000, query_length=ROWS,
                   head_dim=HEAD_DIM, rows=ROWS, partitions=1, cyclic=0, slices=max(tiles) + 1,
                   key_splits=1, heads=heads,
                   mask_rows=mask.shape[0])
    cycles = []
    for block in (0, 1):
        block_keys = np.zeros((64, HEAD_DIM), np.float32)
        block_values = np.zeros((64, HEAD_DIM), np.float32)
        taken = slice(64 * block, min(64 * block + 64, KEYS))
        block_keys[: taken.stop - taken.start] = keys[taken]
        block_values[: taken.stop - taken.start] = values[taken]
        for tile in tiles:
            memory.write(tile, k_at, pack(block_keys.T.copy(), "amp_right", "f32"))
            memory.write(tile, v_at, pack(block_values, "amp_right", "f32"))
        symbol = f"attention_block_f32_{'init' if block == 0 else 'accum'}_masked"
        abi = get_kernel(symbol)
        named = dict(scalars, key_block=block)
        cycles.append(run(memory, symbol, tiles, [out, stats, scores, probs, q_at, k_at, v_at,
                                                  m_at], [named[n] for n in abi.scalars]))
    result = AREAS[0] + 0x8000
    run(memory, "attention_finish_f32", tiles, [result, out, stats], [ROWS, HEAD_DIM])
    outputs = {t: unpack(memory.read(t, result, ROWS * HEAD_DIM * WORD), (ROWS, HEAD_DIM),
                         "row_major", "f32") for t in tiles}
    return outputs, query, keys, values, cycles, scalars


def test_masked_kernels_match_their_definition_per_batch_row():
    """Tile t (slice t, heads 1) reads mask row t: row 0 masks random keys and all of block 1,
    row 1 masks all of block 0 (the running max starts at -inf and recovers in block 1),
    row 2 masks every key (zeros)."""
    rng = np.random.default_rng(7)
    mask = (rng.random((3, KEYS)) > 0.4).astype(np.int32)
    mask[0, 64:] = 0
    mask[1, :64] = 0
    mask[2] = 0
    outputs, query, keys, values, _, _ = masked_kernel_run(mask, 1, [0, 1, 2])
    for tile, row in ((0, 0), (1, 1), (2, 2)):
        want = definition(query, keys, values, 0.125, mask[row] == 1)
        np.testing.assert_allclose(outputs[tile], want, rtol=2e-5, atol=2e-6)
    assert not outputs[2].any()
    assert np.abs(outputs[0] - outputs[1]).max() > 0.1  # the rows' masks differ


def test_a_mask_row_serves_every_head_of_its_batch_index():
    mask = np.ones((2, KEYS), np.int32)
    mask[1, 70:] = 0
    outputs, query, keys, values, _, _ = masked_kernel_run(mask, 2, [0, 1, 2, 3])
    for tile in range(4):
        want = definition(query, keys, values, 0.125, mask[tile // 2] == 1)
        np.testing.assert_allclose(outputs[tile], want, rtol=2e-5, atol=2e-6)


def test_masked_cycles_are_the_unmasked_ones_plus_the_mask_work():
    mask = np.ones((1, KEYS), np.int32)
    _, _, _, _, cycles, scalars = masked_kernel_run(mask, 1, [0])
    for block, charged in enumerate(cycles):
        unmasked = get_kernel(f"attention_block_f32_{'init' if block == 0 else 'accum'}")
        named = dict(scalars, key_block=block)
        plain = kernel_cycles(unmasked.symbol, [named[n] for n in unmasked.scalars], 0, T)
        assert plain == block_cycles_of(2, ROWS, HEAD_DIM, "f32", block == 0, T)
        # one select per score (32 rows x 64 keys over the f32 lanes), 64 mask words loaded
        extra = -(-ROWS * 64 // T.vector_f32_lanes) + -(-64 * WORD // T.vector_bytes_per_cycle)
        assert charged == plain + extra


def test_a_mask_entry_other_than_0_or_1_stops_the_kernel():
    mask = np.ones((1, KEYS), np.int32)
    mask[0, 5] = 2
    with pytest.raises(ModelError, match="key_mask entry 2 for key 5 of mask row 0 is not 0 "
                                         r"\(masked\) or 1 \(attended\)"):
        masked_kernel_run(mask, 1, [0])


def test_a_tile_past_the_mask_rows_is_named():
    with pytest.raises(ModelError, match="tile 1 is in slice 1, of mask row 1; the mask has 1 "
                                         "rows"):
        masked_kernel_run(np.ones((1, KEYS), np.int32), 1, [0, 1])


# ---- the plans end to end --------------------------------------------------------------------
def masked_module(shape, element, causal):
    g = GraphBuilder("attn")
    q, k, v = (g.input(list(shape), element, name=n) for n in "qkv")
    mask = g.index_input([*shape[:-3], shape[-2]], name="mask")
    g.output(g.attention(q, k, v, causal=causal, key_mask=mask))
    return g.build()


def padding_mask(shape, seed):
    """Random keys masked, one batch row fully masked, another with its first block masked."""
    rng = np.random.default_rng(seed)
    mask = (rng.random((shape[0], shape[-2])) > 0.3).astype(np.int32)
    mask[0] = 0
    mask[-1, :64] = 0
    return mask


def compiled_with_mask(module, tiles, mask) -> CompiledCase:
    func = find_function(module)
    arrays = random_inputs(func, 5)
    arrays[-1] = mask
    expected = run_function(module, arrays)
    package = compile_module(module.clone(), tiles, "pad")
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    return CompiledCase(package, feeds, expected, list(func.function_type.outputs.data),
                        fp8_spreads(module, arrays))


# (shape [batch, heads, seq, head_dim], element, causal, tiles): exchanges (P > 1), one
# partition per slice (P = 1, no exchange), several key blocks, causal (the cyclic variant
# when it is cheaper), f16 and f32, three batch rows
MASKED_CASES = [
    ((2, 2, 200, 32), "f32", False, 64),
    ((2, 1, 128, 64), "f32", True, 16),
    ((3, 2, 96, 16), "f16", False, 6),
    ((2, 2, 130, 32), "f16", True, 64),
    ((2, 2, 192, 64), "f16", True, 8),
]


@pytest.mark.parametrize("shape,element,causal,tiles", MASKED_CASES)
def test_masked_blocked_plan_matches_the_reference_and_its_estimate(blocked,  # noqa: F811
                                                                    shape, element, causal,
                                                                    tiles):
    chosen = blocked()
    case = compiled_with_mask(masked_module(shape, element, causal), tiles,
                              padding_mask(shape, sum(shape)))
    assert run_verdict(case) is None
    assert not case.expected[0][0].any()  # batch row 0 attends to no key: zeros
    assert own_cycles(case) == chosen["candidate"].cycles
    kernels = {s.symbol for s in case.package.executed() if isinstance(s, KernelStep)}
    assert f"attention_block_{element}_init_masked" in kernels
    assert f"attention_block_{element}_init" not in kernels


def test_a_random_mask_from_ipu_run_passes():
    """`ipu-run`'s random inputs draw a key mask's entries from {0, 1} (index_bound 2)."""
    from e2e_support import compile_case

    case = compile_case(masked_module((2, 2, 64, 32), "f32", False), 16, seed=2)
    assert run_verdict(case) is None


def selection_context(tiles: int) -> SelectionContext:
    from device.target import IPU21

    return SelectionContext(tiles, "pad", "consumer", IPU21, ())


def test_the_retained_plans_refuse_a_mask_by_name():
    op = next(o for o in masked_module((2, 2, 16, 32), "f32", False).walk()
              if isinstance(o, graph.AttentionOp))
    candidates = AttentionOperator().candidates(op, selection_context(16))
    retained = [c for c in candidates if not c.name.startswith("attention_blocked")]
    assert retained and all(c.reason == KEY_MASK_RETAINED for c in retained)
    assert any(c.reason is None for c in candidates)


def test_a_masked_attention_without_a_blocked_plan_has_no_plan():
    """More batch x head slices than tiles: no blocked plan, and the retained ones say why."""
    op = next(o for o in masked_module((4, 4, 16, 32), "f32", False).walk()
              if isinstance(o, graph.AttentionOp))
    with pytest.raises(NoValidPlan, match="the retained attention kernel has no key mask"):
        AttentionOperator().select(op, selection_context(8))


def test_unmasked_plans_keep_their_kernels_and_cycles():
    """The same attention without a mask: the unmasked kernels, and cycles below the masked."""
    shape = (2, 2, 128, 64)
    g = GraphBuilder("attn")
    q, k, v = (g.input(list(shape), "f32", name=n) for n in "qkv")
    g.output(g.attention(q, k, v))
    plain = next(o for o in g.build().walk() if isinstance(o, graph.AttentionOp))
    masked = next(o for o in masked_module(shape, "f32", False).walk()
                  if isinstance(o, graph.AttentionOp))
    ctx = selection_context(16)
    by_name = {c.name: c for c in AttentionOperator().candidates(masked, ctx)}
    for candidate in AttentionOperator().candidates(plain, ctx):
        if candidate.name.startswith("attention_blocked") and candidate.reason is None:
            assert candidate.plan.dispatch.init_symbol.endswith("_init")
            assert by_name[candidate.name].cycles > candidate.cycles


def test_the_reference_refuses_a_mask_entry_other_than_0_or_1():
    module = masked_module((1, 1, 16, 8), "f32", False)
    x = np.ones((1, 1, 16, 8), np.float32)
    mask = np.ones((1, 16), np.int32)
    mask[0, 3] = 5
    with pytest.raises(InterpreterError, match=r"key_mask value 5 at \[0, 3\] is not 0"):
        run_function(module, [x, x, x, mask])
