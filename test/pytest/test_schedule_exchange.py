"""schedule-exchange: every concrete row against a schedule rebuilt from the placed IR.

The expected broadcast of each iteration is recomputed here from the IR alone (the exchange's
affine maps, the placed buffer addresses, the destination tile set) and the target's latency
matrix, without the pass's own `BroadcastPhase` objects. Each iteration's sender and receiver
rows are instantiated from the shared `exchange.row`s and the `#tile.patch` values, encoded at
their code slot, decoded, and checked with `device.row_checker.check_row`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

import pytest
from e2e_support import compile_case, gemm_module, run_verdict
from xdsl.dialects.builtin import ModuleOp, f16, f32
from xdsl.dialects.func import FuncOp
from xdsl.utils.exceptions import PassFailedException

from device import isa
from device.exchange_timeline import ControlEvent, SendInterval
from device.row_checker import RowSchedule, check_row
from device.target import IPU21
from frontend.builder import GraphBuilder
from ipu_dialects.exchange import RowOp
from ipu_dialects.tile import BufferOp, ExchangeOp, ExchangeScheduleAttr, LoopOp
from ipu_dialects.tile_iteration import selected_iteration
from passes.ipu_pipeline import IpuPipelinePass
from planning.exchange_rows import instantiate
from tools.ipu_run import make_context

WORD = 4
XPIC_SOURCE = 0  # DESIGN.md section 5: XPIC selector 0 = source tile id
XPIC_PAIR_MUX = 1  # docs/internals.md "Pair broadcast": the pair mux takes 64-bit items
ITEMS_64_BIT = 4  # sctl bit 2
PIC_ABSOLUTE = 0  # PIC selector 0 = absolute incoming word address


def gemm_graph(lhs, rhs, element) -> ModuleOp:
    g = GraphBuilder("gemm")
    a = g.input(list(lhs), element, name="a")
    b = g.input(list(rhs), element, name="b")
    c = g.gemm(a, b)
    c.name_hint = "c"  # provenance names it, as in textual IR
    g.output(c)
    return g.build()


def compiled(lhs, rhs, element, tiles: int) -> ModuleOp:
    """Pinned to the 16-row candidates (FP16 partials): these tests are about the rows of
    that lowering's broadcasts, whichever plan the cost model would prefer."""
    module = gemm_graph(lhs, rhs, element)
    IpuPipelinePass(tiles=tiles, catalog=("amp_gemm_f16_r16_p16", "amp_gemm_f32_r16")).apply(
        make_context(), module)
    module.verify()
    return module


# ---- the expected schedule, from the IR ---------------------------------------------------


def enclosing_bounds(op) -> list[tuple[int, int]]:
    bounds = []
    parent = op.parent_op()
    while not isinstance(parent, FuncOp):
        if isinstance(parent, LoopOp):
            bounds.append((parent.lower_bound, parent.upper_bound))
        parent = parent.parent_op()
    return bounds[::-1]


def iterations(op) -> list[tuple[int, ...]]:
    """Iteration vectors, outermost loop first, in linearized (row-major) order."""
    return list(itertools.product(*(range(lb, ub) for lb, ub in enclosing_bounds(op))))


def at(affine_map, ivs) -> int:
    (value,) = affine_map.eval(list(ivs), [])
    return int(value)


@dataclass(frozen=True)
class Expected:
    sender: int
    receivers: tuple[int, ...]
    source_word: int
    dest_word: int
    total_events: int
    sctl: int
    pairs: bool = False  # a pair broadcast: 64-bit items, two words per event

    def sender_schedule(self, words: int) -> RowSchedule:
        events = words // 2 if self.pairs else words
        return RowSchedule(events, [SendInterval(0, words, self.source_word, self.sctl)], [])

    def receiver_schedule(self) -> RowSchedule:
        return RowSchedule(self.total_events, [], [
            ControlEvent(0, "xpic", XPIC_PAIR_MUX if self.pairs else XPIC_SOURCE, self.sender),
            ControlEvent(0, "pic", PIC_ABSOLUTE, self.dest_word),
        ])


def expected_broadcast(op: ExchangeOp, ivs, latency) -> Expected | None:
    src, dst = op.src.owner, op.dst.owner
    assert isinstance(src, BufferOp) and isinstance(dst, BufferOp)
    sender = at(op.src_tile.data, ivs)
    receivers = tuple(t for t in op.dst_tiles.tiles() if t != sender)
    if not receivers:
        return None
    source = src.address_value + at(op.src_offset.data, ivs)
    dest = dst.address_value + at(op.dst_offset.data, ivs)
    assert source % WORD == 0 and dest % WORD == 0
    # Every receiver must have the last item (sent at event items - 1) before the phase ends.
    pairs = op.pairs is not None
    items = op.word_count // 2 if pairs else op.word_count
    total = items + max(int(latency[sender, r]) for r in receivers)
    sctl = (1 if max(receivers) > sender else 0) | (2 if min(receivers) < sender else 0)
    return Expected(sender, receivers, source // WORD, dest // WORD, total,
                    sctl | (ITEMS_64_BIT if pairs else 0), pairs)


# ---- the rows the pass produced -----------------------------------------------------------


def shared_rows(module: ModuleOp) -> dict[str, list[isa.Instruction]]:
    return {op.sym_name.data: op.instructions() for op in module.ops if isinstance(op, RowOp)}


def exchanges(module: ModuleOp) -> list[ExchangeOp]:
    return [op for op in module.walk() if isinstance(op, ExchangeOp)]


def scheduled_of(op: ExchangeOp) -> ExchangeScheduleAttr:
    assert op.schedule is not None, op
    return op.schedule


def concrete_row(op: ExchangeOp, templates, symbol: str, n: int) -> list[isa.Instruction]:
    patches = [(p.instruction.data, p.field.data, p.value_list()[n])
               for p in scheduled_of(op).patches.data
               if p.row_name == symbol]
    return instantiate(templates[symbol], patches)


def slot_bytes(op: ExchangeOp, templates) -> int:
    """One slot per iteration, as long as the longest shared row, 8-byte aligned (sendpicp)."""
    longest = max(sum(i.words for i in templates[r.root_reference.data]) for r in scheduled_of(op).rows.data)
    return -(-longest * WORD // 8) * 8


def encoded_and_checked(instrs, schedule: RowSchedule, address: int) -> None:
    words = isa.encode(instrs, address)
    decoded = isa.decode(words, address)
    assert decoded == instrs
    check_row(decoded, schedule)


CASES = [
    # (lhs, rhs, element, tiles)
    ((32, 128), (128, 128), f16, 2),
    ((32, 128), (128, 128), f32, 4),
    ((16, 128), (128, 256), f16, 4),  # one output-row tile: iterations without traffic
    ((2, 1, 48, 64), (3, 64, 64), f32, 4),  # broadcast batch
    ((100, 72), (72, 40), f32, 3),  # padded extents, odd tile count
    ((256, 128), (128, 256), f16, 32),  # receivers in two columns: non-constant latency
]


@pytest.mark.parametrize("lhs, rhs, element, tiles", CASES)
def test_every_concrete_row_matches_the_schedule_rebuilt_from_the_ir(lhs, rhs, element, tiles):
    module = compiled(lhs, rhs, element, tiles)
    templates = shared_rows(module)
    latency = IPU21.latency_matrix(tiles)
    ops = exchanges(module)
    assert ops, "a multi-tile GEMM moves right-hand blocks"
    checked = 0
    for op in ops:
        symbols = scheduled_of(op).row_symbols
        sender_rows = list(scheduled_of(op).senders)
        receiver_rows = list(scheduled_of(op).receivers)
        stride = slot_bytes(op, templates)
        bounds = enclosing_bounds(op)
        for ivs in iterations(op):
            # an exchange has rows per iteration of the loops its maps read (`row_loops`)
            n = selected_iteration(bounds, list(ivs), op.row_loop_positions(len(bounds)))
            expected = expected_broadcast(op, ivs, latency)
            if expected is None:
                assert sender_rows[n] == receiver_rows[n] == -1, (op.provenance, ivs)
                continue
            assert sender_rows[n] >= 0 and receiver_rows[n] >= 0, (op.provenance, ivs)
            slot = scheduled_of(op).address + n * stride
            sender = concrete_row(op, templates, symbols[sender_rows[n]], n)
            receiver = concrete_row(op, templates, symbols[receiver_rows[n]], n)
            assert sum(i.words for i in sender) * WORD <= stride
            assert sum(i.words for i in receiver) * WORD <= stride
            encoded_and_checked(sender, expected.sender_schedule(op.word_count), slot)
            encoded_and_checked(receiver, expected.receiver_schedule(), slot)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("lhs, rhs, element, tiles", CASES)
def test_row_slots_are_disjoint_and_inside_the_code_region(lhs, rhs, element, tiles):
    module = compiled(lhs, rhs, element, tiles)
    templates = shared_rows(module)
    start, end = IPU21.code_region
    spans = []
    for op in exchanges(module):
        base = scheduled_of(op).address
        spans.append((base, base + len(iterations(op)) * slot_bytes(op, templates)))
    spans.sort()
    assert spans[0][0] >= start and spans[-1][1] <= end
    for (_, a_end), (b_start, _) in zip(spans, spans[1:]):
        assert a_end <= b_start


def test_iterations_without_receivers_have_no_rows():
    """M = 16 on 4 tiles: tile 0 is the only output-row tile; column block 0 lives there."""
    module = compiled((16, 128), (128, 256), f16, 4)
    for op in exchanges(module):
        sender = [at(op.src_tile.data, ivs) for ivs in iterations(op)]
        none = [n for n, s in enumerate(sender) if set(op.dst_tiles.tiles()) <= {s}]
        assert none == [0]
        assert scheduled_of(op).senders[0] == -1


def test_a_row_checked_against_a_wrong_schedule_is_rejected():
    """The check above can fail: the same receiver row against the wrong source tile."""
    from device.row_checker import RowMismatch

    module = compiled((32, 128), (128, 128), f16, 2)
    op = exchanges(module)[0]
    templates = shared_rows(module)
    expected = expected_broadcast(op, iterations(op)[0], IPU21.latency_matrix(2))
    receiver = concrete_row(op, templates, scheduled_of(op).rows.data[scheduled_of(op).receivers[0]]
                            .root_reference.data, 0)
    wrong = Expected(expected.sender + 1, expected.receivers, expected.source_word,
                     expected.dest_word, expected.total_events, expected.sctl)
    with pytest.raises(RowMismatch):
        check_row(receiver, wrong.receiver_schedule())


def op_count(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


def test_op_count_does_not_grow_with_tiles_on_the_large_gemm():
    """FP16 2944x1024 by 1024x1024 (does not fit on 16 tiles): 184 and 1472 tiles."""
    counts = {t: op_count(compiled((2944, 1024), (1024, 1024), f16, t)) for t in (184, 1472)}
    assert counts[184] == counts[1472], counts


def test_op_count_does_not_grow_with_tiles_on_a_small_gemm():
    counts = {t: op_count(compiled((256, 256), (256, 256), f16, t)) for t in (4, 16, 64)}
    assert len(set(counts.values())) == 1, counts


@pytest.mark.slow
def test_row_slots_overflow_the_code_region_into_memory_no_buffer_or_exchange_uses():
    """65 x 32 = 2080 blocks of 64x64 at 16 bytes of row slot each exceed the 32 KiB code
    region: the second exchange's slots go to standard memory that no buffer occupies on any
    tile, outside the memory elements of the exchanged buffers, and the GEMM still runs."""
    module = compiled((16, 4160), (4160, 2048), f16, 128)
    templates = shared_rows(module)
    buffers = [b for b in module.walk() if isinstance(b, BufferOp)]
    exchanged = {v.owner for op in exchanges(module) for v in (op.source, op.destination)}
    busy = set().union(*(IPU21.elements_of_range(b.address_value, b.byte_size + b.tail_bytes)
                         for b in exchanged))
    code_start, code_end = IPU21.code_region
    outside = 0
    for op in exchanges(module):
        start = scheduled_of(op).address
        end = start + len(iterations(op)) * slot_bytes(op, templates)
        if start >= code_start and end <= code_end:
            continue
        outside += 1
        assert code_end <= start and end <= IPU21.interleaved_start
        assert not IPU21.elements_of_range(start, end - start) & busy
        for b in buffers:
            b_end = b.address_value + b.byte_size + b.tail_bytes
            assert end <= b.address_value or b_end <= start, b.sym_name.data
    assert outside == 1
    assert run_verdict(compile_case(gemm_module([16, 4160], [4160, 2048], f16), 128)) is None


# ---- a scheduler bug is reported as an internal compiler error ---------------------------
def test_a_row_disagreeing_with_its_schedule_is_an_internal_compiler_error(monkeypatch):
    """The pass's own check catches a row builder that sends from the wrong address."""
    import passes.schedule_exchange as pass_module

    build = pass_module.sender_instructions

    def off_by_one_item(phase):  # two words: the row plan sends 64-bit items
        first, *rest = build(phase)
        return [isa.Send(first.words_m1, first.address + 2, first.sctl), *rest]

    monkeypatch.setattr(pass_module, "sender_instructions", off_by_one_item)
    with pytest.raises(PassFailedException) as info:
        compiled((32, 128), (128, 128), f16, 2)
    message = str(info.value)
    assert "schedule-exchange: internal compiler error (a bug in ipu-stack's exchange " \
           "scheduler, not in the input)" in message
    assert "tile.exchange (graph.gemm %c %b)" in message
    # the event, and both sides: what the row sends and what the schedule sends
    assert "event 0: row (send " in message
    sent = re.search(r"sends source word (0x[0-9a-f]+) but the schedule sends word "
                     r"(0x[0-9a-f]+)", message)
    assert sent is not None and int(sent[1], 16) == int(sent[2], 16) + 2
    assert f"[row: send 63, {sent[1]}, " in message and f"schedule: word {sent[2]}" in message


def test_a_row_without_a_valid_timeline_is_an_internal_compiler_error(monkeypatch):
    """A TimelineError (here PIC selector 1) from the pass's own row is a compiler bug too."""
    import passes.schedule_exchange as pass_module

    build = pass_module.receiver_instructions

    def undefined_pic_selector(phase):
        first, *rest = build(phase)
        return [isa.SendPicP(first.words_m1, first.address, first.sctl, 1, first.xpic,
                             first.pic), *rest]

    monkeypatch.setattr(pass_module, "receiver_instructions", undefined_pic_selector)
    with pytest.raises(PassFailedException) as info:
        compiled((32, 128), (128, 128), f16, 2)
    message = str(info.value)
    assert "internal compiler error" in message
    assert "PIC selector 1 is not supported" in message


def test_checked_row_reports_an_inconsistent_schedule_as_a_compiler_bug():
    from planning.exchange_rows import checked_row

    schedule = RowSchedule(8, [SendInterval(0, 10, 0x100, 1)])
    with pytest.raises(PassFailedException,
                       match=r"internal compiler error .* inconsistent row schedule: send "
                             r"interval \[0, 10\) .* ends after the schedule's 8 events"):
        checked_row([isa.Send(7, 0x100, 1)], schedule, IPU21.code_region[0], "the test row")
