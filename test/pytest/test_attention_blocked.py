"""The blocked attention plan (planning/attention_plans.py) end to end on the device model.

Each case compiles one `graph.attention` with the blocked plan (the cheapest blocked candidate,
or a named one), runs the package on the device model and checks it against the NumPy
reference; the plan's estimate equals the cycles the model charges for its steps. One key
block exchange row word, or one address, corrupted makes the run fail. At GPT-2-small size
(seq 1024, 12 heads, head_dim 64, f16, causal) the op alone compiles for 1472 tiles and fits.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from e2e_support import CompiledCase, compile_case, run_verdict
from test_e2e_corruption import (
    Broadcast,
    decoded,
    flip_field_bit,
    image_differences,
    is_sender,
    reencoded_receiver,
    with_row_on_one_tile,
)

from device import isa
from device.package import ExchangeStep, KernelStep
from device.target import IPU21
from frontend.models import attention_program
from ipu_dialects import graph
from passes.operators.attention import AttentionOperator
from passes.operators.base import SelectionContext, cheapest
from planning.attention_plans import (
    attention_macs,
    blocked_cycles,
    candidate_partitions,
    layout_for,
    memory_failure,
)


def attention_op(module) -> graph.AttentionOp:
    return next(op for op in module.walk() if isinstance(op, graph.AttentionOp))


def context(tiles: int) -> SelectionContext:
    return SelectionContext(tiles, "pad", "consumer", IPU21, ())


@pytest.fixture
def blocked(monkeypatch):
    """Make graph-to-mid take the cheapest valid blocked candidate (or `want`, by name)."""
    chosen: dict[str, object] = {}

    def use(want: str | None = None):
        def choose(self, op, ctx):
            candidates = [c for c in self.candidates(op, ctx)
                          if c.name.startswith("attention_blocked") and c.reason is None]
            pick = next(c for c in candidates if c.name == want) if want else cheapest(candidates)
            chosen["candidate"] = pick
            return pick

        monkeypatch.setattr(AttentionOperator, "choose", choose)
        return chosen

    return use


def own_cycles(case: CompiledCase) -> int:
    from device.model import run_package

    result = run_package(case.package, case.feeds)
    assert not result.exchange_errors
    executed = list(case.package.executed())
    return sum(c for step, c in zip(executed, result.cycles_by_step, strict=True)
               if step.provenance.startswith("graph.attention"))


# (query shape, key shape, element, causal, tiles): slices x 16-row groups above and below
# the tile count, sequence lengths that are no multiple of 16 or 64, an odd partition count
# (no pair broadcast), one partition per slice (no exchange), head_dim 128 (two panels)
CASES = [
    ((2, 3, 100, 64), (2, 3, 100, 64), "f16", True, 16),  # 6 x 7 = 42 groups > 16 tiles
    ((2, 3, 100, 64), (2, 3, 100, 64), "f32", False, 16),
    ((1, 2, 40, 32), (1, 2, 150, 32), "f32", False, 8),  # P = 3, 150 keys: 3 blocks, padded
    ((1, 2, 40, 32), (1, 2, 150, 32), "f16", False, 8),
    ((3, 50, 64), (3, 50, 64), "f16", False, 5),  # P = 1: every tile holds its blocks
    ((1, 2, 256, 128), (1, 2, 256, 128), "f16", True, 64),  # 2 x 16 groups < 64 tiles
    ((2, 130, 16), (2, 130, 16), "f32", True, 7),  # P = 3, 130 rows
]


@pytest.mark.parametrize("query,key,element,causal,tiles", CASES)
def test_blocked_plan_matches_the_reference_and_its_estimate(blocked, query, key, element,
                                                             causal, tiles):
    chosen = blocked()
    module = attention_program(query, key, element, causal)
    case = compile_case(module, tiles, seed=5)
    assert run_verdict(case) is None
    candidate = chosen["candidate"]
    assert not candidate.name.endswith("_cyclic") or causal
    assert own_cycles(case) == candidate.cycles  # no conversions: the host writes the formats
    kernels = {s.symbol for s in case.package.executed() if isinstance(s, KernelStep)}
    # the cyclic variant copies the query and output blocks that are already on their tile
    split = "_k" in candidate.name  # the key split: its layers' states merged
    assert kernels - {"copy_words"} == {f"attention_block_{element}_init",
                                        f"attention_finish_{element}"} | (
        {f"attention_block_{element}_accum"} if key[-2] > 64 * (2 if split else 1)
        else set()) | ({"attention_merge"} if split else set())
    assert "copy_words" not in kernels or candidate.name.endswith("_cyclic")


# causal, several 16-row groups per tile: the cyclic variant (tile p computes the blocks
# g * P + p), with P even and odd, padded rows, local pieces (a block already on its tile)
CYCLIC_CASES = [
    ((2, 192, 64), "f16", 4, "attention_blocked_r96_cyclic"),  # P = 2, 6 groups per tile
    ((1, 3, 150, 64), "f32", 9, "attention_blocked_r64_cyclic"),  # P = 3, rows padded to 192
    ((2, 2, 256, 48), "f16", 16, "attention_blocked_r64_cyclic"),  # P = 4, head_dim 48
]


@pytest.mark.parametrize("shape,element,tiles,name", CYCLIC_CASES)
def test_cyclic_variant_matches_the_reference_and_its_estimate(blocked, shape, element, tiles,
                                                               name):
    chosen = blocked(name)
    case = compile_case(attention_program(shape, shape, element, True), tiles, seed=7)
    assert run_verdict(case) is None
    assert own_cycles(case) == chosen["candidate"].cycles
    moves = [s for s in case.package.executed() if isinstance(s, ExchangeStep)
             and ("query blocks" in s.provenance or "output blocks" in s.provenance)]
    assert moves  # the query and output blocks did travel


def test_cyclic_variant_balances_causal_work():
    """Contiguous rows: the last tile of a slice computes every block; cyclic: the blocks
    above every tile's early rows are skipped everywhere, so later blocks are cheaper."""
    contiguous, cyclic = (blocked_cycles(layout_for((1, 12, 1024, 64), (1, 12, 1024, 64), 16,
                                                    "f16", True, c), IPU21, 256)
                          for c in (False, True))
    assert cyclic.staging > 0 and contiguous.staging == 0
    assert cyclic.exchange == contiguous.exchange
    # 4 groups per tile over 16 key blocks: 64 group-blocks contiguous, 4+4+4+4+3*4+2*4+1*4 = 40
    assert cyclic.compute < 0.7 * contiguous.compute
    assert cyclic.total < 0.75 * contiguous.total


def test_every_blocked_candidate_runs_and_costs_what_the_model_charges(blocked):
    module = attention_program((2, 2, 96, 64), (2, 2, 96, 64), "f16", True)
    names = [c.name for c in AttentionOperator().candidates(attention_op(module), context(12))
             if c.name.startswith("attention_blocked") and c.reason is None]
    assert len(names) >= 2
    for name in names:
        chosen = blocked(name)
        case = compile_case(module, 12, seed=2)
        assert run_verdict(case) is None, name
        assert own_cycles(case) == chosen["candidate"].cycles, name


def test_causal_blocks_above_the_diagonal_cost_nothing_but_the_call():
    from device.model.cycles_attention import attention_block_cycles

    scalars = dict(key_length=512, causal=1, scale_bits=0x3E000000, query_length=512,
                   head_dim=64, rows=64, partitions=8, cyclic=0, slices=1, key_splits=1)
    last_block = dict(scalars, key_block=7)
    # partition 0 (rows 0..63) sees no key of block 7 (keys 448..511): the call alone
    assert attention_block_cycles(last_block, "f16", False, 0, IPU21) == IPU21.kernel_call_cycles
    # partition 7 sees it in all four groups; partition 6 (rows 384..447) in none
    full = attention_block_cycles(last_block, "f16", False, 7, IPU21)
    assert attention_block_cycles(last_block, "f16", False, 6, IPU21) == IPU21.kernel_call_cycles
    assert attention_block_cycles(dict(scalars, causal=0, key_block=7), "f16", False, 0,
                                  IPU21) == full
    # on its diagonal block partition 3 computes its groups that see a key (all of them)
    assert attention_block_cycles(dict(scalars, key_block=3), "f16", False, 3, IPU21) == full
    # lock-stepped, the slowest tile sets each block's step: with contiguous rows the last
    # partition computes every block, so the causal plan takes as long as the unmasked one
    causal, plain = (blocked_cycles(layout_for((4, 512, 64), (4, 512, 64), 8, "f16", c),
                                    IPU21, 32) for c in (True, False))
    assert causal == plain


def test_tiles_never_hold_all_of_a_slices_keys():
    layout = layout_for((1, 12, 1024, 64), (1, 12, 1024, 64), 64, "f16", True)
    assert layout.tiles == 768 and layout.rows == 16 and layout.key_chunk == 1
    assert layout.key_chunk * 64 < 1024


def test_candidates_use_every_tile_the_slices_allow():
    # 12 slices x 64 groups of 16 rows = 768 < 1472 tiles: one group per tile
    assert candidate_partitions(12, 1024, 1472)[0] == 64
    # 96 slices x 24 groups > 1472: 15 partitions of 2 groups, 1440 tiles
    assert candidate_partitions(96, 384, 1472)[0] * 96 == 1152
    assert candidate_partitions(2000, 64, 1472) == []


def test_a_blocked_plan_that_does_not_fit_is_invalid_with_a_reason():
    layout = layout_for((1, 1, 8192, 64), (1, 1, 8192, 64), 1, "f16", False)
    assert memory_failure(layout, IPU21) == (
        "an attention tile needs 9502752 bytes, tile memory holds 606208 outside the code "
        "region")


def test_fp8_attention_keeps_the_retained_plans():
    module = attention_program((2, 64, 64), (2, 64, 64), "f8E4M3FNUZ", False)
    candidates = AttentionOperator().candidates(attention_op(module), context(8))
    reasons = {c.reason for c in candidates if c.name.startswith("attention_blocked")}
    assert reasons == {"the blocked plan has kernels for f16 and f32 attention, not f8f143"}
    assert cheapest(candidates).name.startswith("attention_split")


def test_the_retained_plans_win_small_cases_and_are_checked_against_memory():
    small = attention_program((2, 4, 64, 64), (2, 4, 64, 64), "f16", True)
    assert cheapest(AttentionOperator().candidates(attention_op(small), context(1472))).name \
        == "attention_split2"
    gpt2 = attention_program((1, 12, 1024, 64), (1, 12, 1024, 64), "f16", True)
    candidates = {c.name: c for c in AttentionOperator().candidates(attention_op(gpt2),
                                                                     context(1472))}
    assert candidates["attention_split2"].reason == (
        "an attention tile needs 3148800 bytes, tile memory holds 606208 outside the code "
        "region (out 1536, query 1536, key 1572864, value 1572864)")
    # two key layers: the second on the 384 tiles whose rows see the last 8 key blocks
    assert cheapest(list(candidates.values())).name == "attention_blocked_r16_k2"


# ---- corruption ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def corruptible() -> CompiledCase:
    import _pytest.monkeypatch

    patch = _pytest.monkeypatch.MonkeyPatch()
    try:
        patch.setattr(AttentionOperator, "choose", lambda self, op, ctx: next(
            c for c in self.candidates(op, ctx) if c.name == "attention_blocked_r32"))
        case = compile_case(attention_program((1, 2, 128, 64), (1, 2, 128, 64), "f16", True),
                            8, seed=4)
    finally:
        patch.undo()
    assert run_verdict(case) is None
    return case


def key_block_exchange(case: CompiledCase) -> Broadcast:
    """The first key-block exchange, with its sender and one receiver."""
    for index, step in enumerate(case.package.steps):
        if isinstance(step, ExchangeStep) and "%k" in step.provenance:
            tiles = np.flatnonzero(step.row_id >= 0).tolist()
            senders = [t for t in tiles if is_sender(decoded(case.package, step, t))]
            receivers = [t for t in tiles if t not in senders]
            return Broadcast(index, step, senders[0], receivers[0])
    raise AssertionError("no key-block exchange")


@pytest.mark.parametrize("what", ["send-address", "receiver-pic"])
def test_one_corrupted_key_block_row_word_fails_the_run(corruptible, what):
    broadcast = key_block_exchange(corruptible)
    package = corruptible.package
    if what == "send-address":  # bit 1: a 64-bit stream stays at an even word address
        tile = broadcast.sender
        words = flip_field_bit(package, broadcast, tile, isa.Send, "address", bit=1)
    else:  # two words on: the block lands one 64-bit item off in the key slot
        tile = broadcast.receiver
        (select,) = decoded(package, broadcast.step, tile)[:1]
        words = reencoded_receiver(package, broadcast, pic=select.pic ^ 2)
    corrupted = with_row_on_one_tile(package, broadcast.step_index, tile, words)
    (difference,) = image_differences(package, corrupted)
    assert difference[0] == tile
    assert run_verdict(corruptible, corrupted) is not None


def test_a_corrupted_key_pointer_fails_the_run(corruptible):
    import copy

    package = copy.deepcopy(corruptible.package)
    index = next(i for i, s in enumerate(package.steps)
                 if isinstance(s, KernelStep) and s.symbol == "attention_block_f16_init")
    step = package.steps[index]
    pointers = np.array(step.pointers, copy=True)
    pointers[1, 5] += 64  # tile 1's key block pointer, one 64-byte row of the block later
    package.steps[index] = KernelStep(step.symbol, step.tiles, pointers, step.scalars,
                                      step.provenance, step.pointer_strides)
    assert run_verdict(corruptible, package) is not None


# ---- GPT-2-small size ---------------------------------------------------------------------------
@pytest.mark.slow
def test_gpt2_small_attention_compiles_and_fits_on_1472_tiles():
    """seq 1024, 12 heads, head_dim 64, f16, causal: the op alone through every pass (place-
    memory included) on 1472 tiles; the tiles hold 16 query rows and one key block each, and
    a second key layer on 384 more tiles takes the last 8 key blocks of the rows that see
    them."""
    shape = (1, 12, 1024, 64)
    module = attention_program(shape, shape, "f16", True)
    estimate = cheapest(AttentionOperator().candidates(attention_op(module), context(1472)))
    assert estimate.name == "attention_blocked_r16_k2"
    case = compile_case(module, 1472, seed=0)
    steps = list(case.package.executed())
    # 8 steps of a key and a value phase per layer; the query copy; two state phases
    assert sum(isinstance(s, ExchangeStep) for s in steps) == 2 * 2 * 8 + 1 + 2
    assert case.package.tiles == 1472
    roofline = attention_macs(shape, shape) / (64 * 1472)
    assert estimate.cycles is not None and estimate.cycles < 7 * roofline
    assert math.isclose(roofline, 17096.3, rel_tol=1e-4)
    # and it runs (about half a minute on the device model)
    assert run_verdict(case) is None
    assert own_cycles(case) == estimate.cycles


# ---- diagnostics ---------------------------------------------------------------------------------
def test_layout_refusals_name_their_reason():
    from planning.attention_plans import layout_failure

    def failure(query, key, partitions, precision="f16", causal=False, cyclic=False, tiles=64,
                indivisible="pad"):
        layout = layout_for(query, key, partitions, precision, causal, cyclic)
        return layout_failure(layout, tiles, indivisible)

    assert failure((4, 256, 64), (4, 256, 64), 16, tiles=32) == (
        "4 batch x head slices of 16 query partitions need 64 tiles, the pipeline has 32")
    assert failure((1, 512, 128), (1, 512, 128), 4) == (
        "a key block of head_dim 128 is contiguous only when each tile holds one key block; "
        "4 partitions hold 2")
    assert failure((1, 512, 128), (1, 512, 128), 4, causal=True, cyclic=True) == (
        "a key block of head_dim 128 is contiguous only when each tile holds one key block; "
        "4 partitions hold 2")
    assert failure((1, 512, 128), (1, 512, 128), 8, causal=True, cyclic=True) == (
        "the cyclic variant moves 16-row blocks of one 64-column panel between the tiles of a "
        "slice: it needs head_dim <= 64 and two or more groups per tile")
    assert failure((2, 100, 64), (2, 100, 64), 2, indivisible="reject") == (
        "indivisible=reject: the blocked plan pads query rows to 16, keys to 64 and head_dim "
        "to 64")
    assert failure((2, 128, 64), (2, 128, 64), 2, indivisible="reject") is None


BLOCK_SCALARS = dict(key_block=0, key_length=64, causal=0, scale_bits=0x3F800000,
                     query_length=16, head_dim=64, rows=16, partitions=1, cyclic=0, slices=1,
                     key_splits=1)


@pytest.mark.parametrize("changes,message", [
    (dict(rows=24), "rows = 24 is not a multiple of 16"),
    (dict(causal=2), "causal = 2 must be 0 or 1"),
    (dict(cyclic=3), "cyclic = 3 must be 0 or 1"),
    (dict(key_block=1), "key_block = 1 is outside the 1 blocks of 64 keys a layer takes"),
    (dict(key_length=192, key_splits=2), "key_splits = 2 layers need contiguous rows and an "
     "equal share of the 3 key blocks"),
    (dict(key_length=128, key_splits=2, slices=0), "scalar 'slices' = 0 must be >= 1"),
    (dict(head_dim=0), "scalar 'head_dim' = 0 must be >= 1"),
])
def test_block_kernel_refuses_bad_scalars(changes, message):
    assert block_kernel_failure(dict(BLOCK_SCALARS, **changes)) == (
        f"step 0: kernel attention_block_f16_init on tile 0: {message}")


def block_kernel_failure(scalars: dict[str, int], tile: int = 0) -> str:
    """The model's refusal of one attention_block_f16_init call on `tile` with `scalars`."""
    from kernels_support import AREAS, T, run

    from device.kernels import get_kernel
    from device.model import ModelError
    from device.model.memory import TileMemory

    abi = get_kernel("attention_block_f16_init")
    interleaved = T.interleaved_start
    pointers = [interleaved, AREAS[0], interleaved + 0x8000, AREAS[1], AREAS[2], AREAS[3],
                AREAS[4]]
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, tile + 1), abi.symbol, [tile], pointers,
            [scalars[n] for n in abi.scalars])
    return str(info.value)


def test_block_kernel_names_a_tile_past_its_layers():
    # two key layers of one slice of one partition: tiles 0 and 1
    assert block_kernel_failure(dict(BLOCK_SCALARS, key_length=128, key_splits=2), 2) == (
        "step 0: kernel attention_block_f16_init on tile 2: tile 2 is past the 2 layers of 1 "
        "slices")


@pytest.mark.parametrize("what,message", [
    ("scores-standard", "'scores' at 0xa4000 is not in interleaved memory [0xac000, 0xe8000)"),
    ("probs-with-out", "'out' at 0xac000 and 'probs' at 0xac000 share memory element 6"),
])
def test_block_kernel_checks_the_amp_memory_rules(what, message):
    from kernels_support import AREAS, T, run

    from device.kernels import get_kernel
    from device.model import ModelError
    from device.model.memory import TileMemory

    abi = get_kernel("attention_block_f16_init")
    interleaved = T.interleaved_start
    pointers = [interleaved, AREAS[0], interleaved + 0x8000, AREAS[1], AREAS[2], AREAS[3],
                AREAS[4]]
    if what == "scores-standard":
        pointers[2] = AREAS[4] + 0x8000
    else:
        pointers[3] = interleaved
    with pytest.raises(ModelError) as info:
        run(TileMemory(T, 1), abi.symbol, [0], pointers,
            [BLOCK_SCALARS[n] for n in abi.scalars])
    assert str(info.value) == f"step 0: kernel attention_block_f16_init on tile 0: {message}"


def test_a_blocked_attention_dispatch_needs_its_accumulation_kernel():
    from xdsl.utils.exceptions import VerifyException

    from ipu_dialects.mid import DispatchKind, OperatorDispatchAttr

    with pytest.raises(VerifyException, match="dispatch: attention_blocks needs accum"):
        OperatorDispatchAttr(DispatchKind.ATTENTION_BLOCKS.value, init="attention_block_f16_init")


# the key split: L layers of tiles, each over nK / L key blocks, merged after the loop;
# causal (a later layer only on the partitions that see its keys), unmasked, three layers,
# an odd layer width (no pair broadcast), f32, one partition per slice
KEY_SPLIT_CASES = [
    ((1, 2, 256, 64), "f16", True, 48, "attention_blocked_r16_k2"),  # layer 1: partitions 8..15
    ((2, 2, 192, 64), "f16", False, 144, "attention_blocked_r16_k3"),
    ((1, 3, 200, 32), "f32", True, 64, "attention_blocked_r16_k2"),  # 13 partitions, 4 blocks
    ((1, 2, 64, 64), "f16", False, 8, "attention_blocked_r64_k2"),  # P = 1: 2 key blocks
]


@pytest.mark.parametrize("shape,element,causal,tiles,name", KEY_SPLIT_CASES)
def test_key_split_matches_the_reference_and_its_estimate(blocked, shape, element, causal,
                                                          tiles, name):
    key = shape if name != "attention_blocked_r64_k2" else (*shape[:-2], 128, shape[-1])
    chosen = blocked(name)
    case = compile_case(attention_program(shape, key, element, causal), tiles, seed=11)
    assert run_verdict(case) is None
    assert own_cycles(case) == chosen["candidate"].cycles
    executed = list(case.package.executed())
    merges = [s for s in executed if isinstance(s, KernelStep) and s.symbol == "attention_merge"]
    layers = int(name.rsplit("_k", 1)[1])
    assert len(merges) == layers - 1
    block_calls = [s for s in executed if isinstance(s, KernelStep)
                   and s.symbol.startswith("attention_block")]
    key_blocks = -(-key[-2] // 64)
    assert len(block_calls) == key_blocks // layers  # the layers' calls are one step


def test_key_split_halves_gpt2_small_causal_steps():
    """GPT-2-small's attention at 1472 tiles: one layer needs 16 steps (the last rows see
    every block); two layers (the second on the 384 tiles whose rows see its keys) need 8."""
    from dataclasses import replace

    one = layout_for((12, 1024, 64), (12, 1024, 64), 64, "f16", True)
    two = replace(one, key_splits=2)
    assert (one.compute_tiles, two.compute_tiles) == (768, 768 + 12 * 32)
    single, split = (blocked_cycles(layout, IPU21, 1472) for layout in (one, two))
    assert split.compute * 2 == single.compute
    assert split.total < 0.7 * single.total


def test_key_split_state_merge_ignores_a_layer_that_saw_no_key():
    """attention_merge: a state with max -inf (its layer saw no key of these rows) adds
    nothing; two real states combine as one softmax over both key sets."""
    from kernels_support import AREAS, T, run

    from device.kernels import get_kernel
    from device.layouts import pack, unpack
    from device.model.memory import TileMemory

    rows, width = 16, 64
    rng = np.random.default_rng(3)
    acc0, acc1 = (rng.standard_normal((rows, width)).astype(np.float32) for _ in range(2))
    m0 = rng.standard_normal(rows).astype(np.float32)
    m1 = np.where(np.arange(rows) < 8, np.float32(-np.inf), m0 + 1).astype(np.float32)
    l0, l1 = np.full(rows, 2, np.float32), np.where(np.isfinite(m1), 3, 0).astype(np.float32)
    acc1[~np.isfinite(m1)] = 0
    memory = TileMemory(T, 1)
    interleaved = T.interleaved_start
    pointers = [interleaved, AREAS[0], interleaved + 0x8000, AREAS[1]]
    for at, values, order in ((pointers[0], acc0, "amp_output"), (pointers[2], acc1, "amp_output"),
                              (pointers[1], np.stack([m0, l0], 1), "row_major"),
                              (pointers[3], np.stack([m1, l1], 1), "row_major")):
        memory.write(0, at, pack(values, order, "f32"))
    abi = get_kernel("attention_merge")
    run(memory, abi.symbol, [0], pointers, [rows, 64])
    acc = unpack(memory.read(0, pointers[0], rows * width * 4), (rows, width), "amp_output", "f32")
    state = unpack(memory.read(0, pointers[1], rows * 8), (rows, 2), "row_major", "f32")
    m = np.maximum(m0, m1)
    a0 = np.exp(m0 - m)
    a1 = np.where(np.isfinite(m1), np.exp(m1 - m), np.float32(0)).astype(np.float32)
    # each result is two f32 products and a sum: within a few roundings of its terms
    terms = (acc0 * a0[:, None], acc1 * a1[:, None])
    bound = 4 * np.finfo(np.float32).eps * (np.abs(terms[0]) + np.abs(terms[1]))
    assert np.all(np.abs(acc - (terms[0] + terms[1])) <= bound)
    np.testing.assert_allclose(state[:, 1], l0 * a0 + l1 * a1, rtol=4 * np.finfo(np.float32).eps)
    np.testing.assert_array_equal(state[:8, 1], l0[:8])  # the unseen layer added nothing
    np.testing.assert_array_equal(state[:, 0], m)
