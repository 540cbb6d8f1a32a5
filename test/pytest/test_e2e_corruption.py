"""The device model is not fooled: one corrupted word, address or control value makes a run FAIL.

Each test takes a correctly compiled GEMM package, first shows that it PASSes, then changes ONE
thing and shows that the run fails: the outputs no longer match the NumPy reference, the model
reports exchange errors, or it stops with a `ModelError` (`e2e_support.run_verdict`).

Row corruptions go through the tile images: the corrupted row is added to the package and
only one tile, in one exchange step, is pointed at it, so exactly one word of one tile's
image changes (checked). The model fetches rows from tile memory, so this is the word it runs.
The row checker (`device.row_checker.check_row`) rejects the same corrupted words against the
schedule `planning.exchange_rows.plan_broadcast` builds for that broadcast.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import numpy as np
import pytest
from e2e_support import ROW_PLANS, CompiledCase, compile_case, gemm_module, run_verdict

from device import isa
from device.exchange_timeline import row_timeline
from device.package import ExchangeStep, KernelStep, Package
from device.row_checker import RowMismatch, RowSchedule, check_row
from device.target import IPU21
from frontend.builder import f16, f32
from planning.exchange_rows import plan_broadcast

# M = 32 rows on two output-row tiles of four (the row plan): some broadcasts have one
# receiver only, so that receiver's row is the longest of its phase (a shorter delay then
# shortens the phase). The grid plan's concurrent groups have their own tests below.
SHAPE = ([32, 128], [128, 128])
TILES = 4


@pytest.fixture(scope="module", params=["f16", "f32"])
def case(request) -> CompiledCase:
    element_type = {"f16": f16, "f32": f32}[request.param]
    compiled = compile_case(gemm_module(*SHAPE, element_type), TILES, seed=3, catalog=ROW_PLANS)
    assert run_verdict(compiled) is None  # the uncorrupted package PASSes
    return compiled


# ---- finding the broadcast to corrupt ----------------------------------------------------

def decoded(package: Package, step: ExchangeStep, tile: int) -> list[isa.Instruction]:
    return isa.decode(package.rows[int(step.row_id[tile])].tolist(), step.row_address)


def is_sender(instrs: list[isa.Instruction]) -> bool:
    return any(isinstance(i, isa.Send) for i in instrs)


@dataclass
class Broadcast:
    step_index: int
    step: ExchangeStep
    sender: int
    receiver: int

    def row(self, package: Package, tile: int) -> np.ndarray:
        return package.rows[int(self.step.row_id[tile])]


def single_receiver_broadcast(package: Package) -> Broadcast:
    """The first exchange step with one sending tile and one receiving tile."""
    for index, step in enumerate(package.steps):
        if not isinstance(step, ExchangeStep):
            continue
        tiles = np.flatnonzero(step.row_id >= 0).tolist()
        senders = [t for t in tiles if is_sender(decoded(package, step, t))]
        receivers = [t for t in tiles if t not in senders]
        if len(senders) == 1 and len(receivers) == 1:
            return Broadcast(index, step, senders[0], receivers[0])
    raise AssertionError("the package has no single-receiver broadcast to corrupt")


def schedule_of(package: Package, broadcast: Broadcast) -> tuple[RowSchedule, RowSchedule]:
    """(sender, receiver) schedules, as `schedule-exchange` plans this broadcast."""
    sends = row_timeline(broadcast.row(package, broadcast.sender).tolist(),
                         broadcast.step.row_address).sends
    (select,) = decoded(package, broadcast.step, broadcast.receiver)[:1]
    assert isinstance(select, isa.SendPicP)
    phase = plan_broadcast(broadcast.sender, (broadcast.receiver,),
                           sum(s.words for s in sends), sends[0].address * 4, select.pic * 4,
                           IPU21.latency_matrix(package.tiles), pairs=sends[0].width == 2)
    return phase.sender_schedule(), phase.receiver_schedule()


# ---- corrupting one thing ------------------------------------------------------------------

def with_row_on_one_tile(package: Package, step_index: int, tile: int,
                         words: list[int]) -> Package:
    """A copy where only `tile`, only in step `step_index`, runs `words` instead of its row."""
    corrupted = copy.deepcopy(package)
    corrupted.rows.append(np.asarray(words, dtype=np.uint32))
    corrupted.steps[step_index].row_id[tile] = len(corrupted.rows) - 1
    return corrupted


def image_words(package: Package, tile: int) -> dict[int, int]:
    words = {}
    for address, segment in package.tile_image(tile):
        words.update({address + 4 * i: int(w) for i, w in enumerate(segment)})
    return words


def image_differences(original: Package, corrupted: Package) -> list[tuple[int, int]]:
    """(tile, byte address) of every tile-image word that differs."""
    differences = []
    for tile in range(original.tiles):
        before, after = image_words(original, tile), image_words(corrupted, tile)
        differences += [(tile, a) for a in sorted(before.keys() | after.keys())
                        if before.get(a) != after.get(a)]
    return differences


def field_bit_flip(instrs: list[isa.Instruction], position: int, field: str, bit: int,
                   base_address: int) -> tuple[int, int]:
    """(word index in the row, xor mask) that flips `bit` of `field` of instruction `position`:
    found by encoding, so the test does not restate the bit layout."""
    instr = instrs[position]
    flipped = replace(instr, **{field: getattr(instr, field) ^ (1 << bit)})
    offset = len(isa.encode(instrs[:position], base_address))
    at = base_address + 4 * offset
    masks = [(offset + i, a ^ b) for i, (a, b) in
             enumerate(zip(isa.encode([instr], at), isa.encode([flipped], at), strict=True))
             if a != b]
    assert len(masks) == 1 and bin(masks[0][1]).count("1") == 1, masks
    return masks[0]


def flip_field_bit(package: Package, broadcast: Broadcast, tile: int, kind: type, field: str,
                   bit: int | None = None) -> list[int]:
    """The tile's row words with one bit of `field` of its first `kind` instruction flipped
    (default bit: the lowest set bit, so counts and addresses get smaller)."""
    instrs = decoded(package, broadcast.step, tile)
    position = next(i for i, instr in enumerate(instrs) if isinstance(instr, kind))
    value = getattr(instrs[position], field)
    if bit is None:
        assert value > 0
        bit = (value & -value).bit_length() - 1
    index, mask = field_bit_flip(instrs, position, field, bit, broadcast.step.row_address)
    words = broadcast.row(package, tile).tolist()
    words[index] ^= mask
    return words


def reencoded_receiver(package: Package, broadcast: Broadcast, **changes) -> list[int]:
    """The receiver's row with its `sendpicp` fields changed, decoded and encoded again."""
    instrs = decoded(package, broadcast.step, broadcast.receiver)
    position = next(i for i, instr in enumerate(instrs) if isinstance(instr, isa.SendPicP))
    instrs[position] = replace(instrs[position], **changes)
    return isa.encode(instrs, broadcast.step.row_address)


# ---- row corruptions ---------------------------------------------------------------------

# Bit 1, not bit 0, of source addresses: a 64-bit stream (pair broadcast) must stay at an
# even word address to have a timeline at all; one item (two words) off still sends wrong data.
def corrupt_send_address(package, broadcast):
    return broadcast.sender, flip_field_bit(package, broadcast, broadcast.sender, isa.Send,
                                            "address", bit=1)


def corrupt_sendoff_delta(package, broadcast):
    return broadcast.sender, flip_field_bit(package, broadcast, broadcast.sender, isa.SendOff,
                                            "delta", bit=1)


def corrupt_delay_count(package, broadcast):
    return broadcast.receiver, flip_field_bit(package, broadcast, broadcast.receiver, isa.Delay,
                                              "events_m1")


def corrupt_pic(package, broadcast):
    (select,) = decoded(package, broadcast.step, broadcast.receiver)[:1]
    return broadcast.receiver, reencoded_receiver(package, broadcast, pic=select.pic ^ 1)


def corrupt_xpic(package, broadcast):
    # another tile that exists but sends nothing in this phase
    other = next(t for t in range(package.tiles) if t not in (broadcast.sender, broadcast.receiver))
    (select,) = decoded(package, broadcast.step, broadcast.receiver)[:1]
    mux = select.xpic & ~0x1FFF  # the selector bit (own mux or pair mux) stays
    return broadcast.receiver, reencoded_receiver(package, broadcast, xpic=mux | other)


ROW_CORRUPTIONS = {
    "send-address": corrupt_send_address,
    "sendoff-delta": corrupt_sendoff_delta,
    "delay-count": corrupt_delay_count,
    "sendpicp-pic": corrupt_pic,
    "sendpicp-xpic": corrupt_xpic,
}


@pytest.mark.parametrize("name", sorted(ROW_CORRUPTIONS))
def test_one_corrupted_row_word_fails_the_run(case, name):
    assert run_verdict(case) is None
    broadcast = single_receiver_broadcast(case.package)
    tile, words = ROW_CORRUPTIONS[name](case.package, broadcast)
    corrupted = with_row_on_one_tile(case.package, broadcast.step_index, tile, words)
    (difference,) = image_differences(case.package, corrupted)  # exactly one word, one tile
    assert difference[0] == tile
    verdict = run_verdict(case, corrupted)
    assert verdict is not None, f"{name}: the corrupted package still passes"


@pytest.mark.parametrize("name", sorted(ROW_CORRUPTIONS))
def test_row_checker_rejects_the_corrupted_row(case, name):
    broadcast = single_receiver_broadcast(case.package)
    sender_schedule, receiver_schedule = schedule_of(case.package, broadcast)
    schedule = {broadcast.sender: sender_schedule, broadcast.receiver: receiver_schedule}
    address = broadcast.step.row_address
    tile, words = ROW_CORRUPTIONS[name](case.package, broadcast)
    check_row(broadcast.row(case.package, tile).tolist(), schedule[tile], address)  # accepted
    with pytest.raises(RowMismatch):
        check_row(words, schedule[tile], address)


def test_delay_corruption_loses_words(case):
    """A shorter receiver row ends the phase before the last words arrive: reported."""
    assert run_verdict(case) is None
    broadcast = single_receiver_broadcast(case.package)
    tile, words = corrupt_delay_count(case.package, broadcast)
    corrupted = with_row_on_one_tile(case.package, broadcast.step_index, tile, words)
    verdict = run_verdict(case, corrupted)
    assert verdict is not None and verdict.startswith("exchange errors"), verdict


# ---- address corruptions -----------------------------------------------------------------

def first_gemm_step(package: Package) -> int:
    return next(i for i, s in enumerate(package.steps)
                if isinstance(s, KernelStep) and s.symbol.startswith("amp_gemm"))


def corrupt_kernel_right_pointer(package: Package) -> Package:
    corrupted = copy.deepcopy(package)
    step = corrupted.steps[first_gemm_step(corrupted)]
    step.pointers[0, 2] += IPU21.pace_alignment  # right: still aligned, one pace further
    return corrupted


def corrupt_kernel_out_pointer(package: Package) -> Package:
    corrupted = copy.deepcopy(package)
    step = corrupted.steps[first_gemm_step(corrupted)]
    step.pointers[-1, 0] += IPU21.pace_alignment
    return corrupted


def corrupt_input_shard_address(package: Package) -> Package:
    corrupted = copy.deepcopy(package)
    corrupted.inputs[0].addresses[-1] += IPU21.pace_alignment
    return corrupted


def corrupt_output_shard_address(package: Package) -> Package:
    corrupted = copy.deepcopy(package)
    corrupted.outputs[0].addresses[0] += IPU21.pace_alignment
    return corrupted


def corrupt_row_address_to_next_slot(package: Package) -> Package:
    """The first exchange step's rows move to the next exchange step's slot. A row address is
    both where the image puts the step's rows and where tiles fetch them, so the change is
    caught where two different rows now share one slot (moving to a free slot would be a
    harmless relocation, not a corruption)."""
    corrupted = copy.deepcopy(package)
    first, second = [s for s in corrupted.steps if isinstance(s, ExchangeStep)][:2]
    assert first.row_address != second.row_address
    first.row_address = second.row_address
    return corrupted


def corrupt_row_address_by_one_word(package: Package) -> Package:
    """The first exchange step's slot moves by one word: its rows overlap their neighbours or
    put a receiver's two-word `sendpicp` off its 8-byte boundary."""
    corrupted = copy.deepcopy(package)
    first = next(s for s in corrupted.steps if isinstance(s, ExchangeStep))
    first.row_address += 4
    return corrupted


ADDRESS_CORRUPTIONS = {
    "kernel-right-pointer": corrupt_kernel_right_pointer,
    "kernel-out-pointer": corrupt_kernel_out_pointer,
    "input-shard-address": corrupt_input_shard_address,
    "output-shard-address": corrupt_output_shard_address,
    "exchange-row-address-next-slot": corrupt_row_address_to_next_slot,
    "exchange-row-address-plus-word": corrupt_row_address_by_one_word,
}


@pytest.mark.parametrize("name", sorted(ADDRESS_CORRUPTIONS))
def test_one_corrupted_address_fails_the_run(case, name):
    assert run_verdict(case) is None
    corrupted = ADDRESS_CORRUPTIONS[name](case.package)
    verdict = run_verdict(case, corrupted)
    assert verdict is not None, f"{name}: the corrupted package still passes"
    assert run_verdict(case) is None  # the copy was corrupted, not the original
