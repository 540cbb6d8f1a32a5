"""The exchange fabric of the model: rows fetched from memory, latency, PIC/XPIC, losses."""


import numpy as np
import pytest
from test_device_model_support import (
    DATA,
    OUTPUT,
    ROW_SLOT,
    SLOT,
    Broadcast,
    T,
    kernel,
    receiver_row,
    sender_row,
    tensor,
)

from device.isa import encode
from device.layouts import AMP_BLOCK, pack, unpack
from device.model import ModelError, run_package
from device.package import ExchangeStep, Package

RNG = np.random.default_rng(11)
# Sender 17 sits in column 1; receivers in columns 0 and 1 at several positions.
SOURCE, RECEIVERS = 17, [0, 5, 16, 19]


def block() -> np.ndarray:
    return RNG.uniform(-2, 2, (AMP_BLOCK, AMP_BLOCK)).astype(np.float16)


def run_broadcast(bc: Broadcast, rows, value, **kwargs):
    return run_package(bc.package(rows, **kwargs), {"block": value})


def received(result, index: int) -> np.ndarray:
    return result.outputs["received"][index * AMP_BLOCK:(index + 1) * AMP_BLOCK]


def shifted_words(value: np.ndarray, skip: int) -> np.ndarray:
    """The block a receiver holds when it missed the first `skip` words (PIC kept counting
    from the slot start): the later words move up, the tail stays zero."""
    words = pack(value, "amp_right", "f16").view("<u4")
    moved = np.concatenate([words[skip:], np.zeros(skip, np.uint32)])
    return unpack(moved.view(np.uint8), value.shape, "amp_right", "f16")


def test_latency_to_the_receivers_is_not_constant():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    assert len(set(bc.latency.values())) == len(RECEIVERS)


def test_broadcast_reaches_every_receiver_with_its_own_latency():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()
    result = run_broadcast(bc, bc.scheduled_rows(), value)
    assert result.exchange_errors == []
    for index in range(len(RECEIVERS)):
        assert np.array_equal(received(result, index), value)
    events = max(bc.latency.values()) + bc.words
    assert result.cycles_by_step == [T.sync_cycles + events]


def test_rows_assuming_a_constant_latency_fail():
    # Every receiver selects at the largest latency, as a scheduler assuming one latency for
    # all would: all but the slowest receiver miss their first words.
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()
    high = max(bc.latency.values())
    rows = bc.scheduled_rows(late={r: high - bc.latency[r] for r in RECEIVERS})
    result = run_broadcast(bc, rows, value)
    for index, r in enumerate(RECEIVERS):
        skip = high - bc.latency[r]
        assert np.array_equal(received(result, index), shifted_words(value, skip))
        assert (skip == 0) == np.array_equal(received(result, index), value)


def test_receiver_selecting_too_late_misses_the_first_words():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()
    result = run_broadcast(bc, bc.scheduled_rows(late={5: 3}), value)
    assert np.array_equal(received(result, 1), shifted_words(value, 3))
    assert np.array_equal(received(result, 0), value)


def test_words_arriving_after_the_phase_end_are_lost_and_reported():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    slowest = max(RECEIVERS, key=bc.latency.get)
    value = block()
    # The slowest receiver's row is the longest; cutting it by 3 events ends the phase before
    # its last 3 words arrive.
    result = run_broadcast(bc, bc.scheduled_rows(short={slowest: 3}), value)
    assert len(result.exchange_errors) == 1
    message = result.exchange_errors[0]
    assert f"tile {slowest}: 3 word(s) from tile {SOURCE}" in message
    end = bc.latency[slowest] + bc.words - 3
    assert f"arriving at events {end}..{end + 2}" in message
    index = RECEIVERS.index(slowest)
    assert not np.array_equal(received(result, index), value)


def test_wrong_pic_value_moves_the_data():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()
    result = run_broadcast(bc, bc.scheduled_rows(pic={16: SLOT // 4 + 16}), value)
    index = RECEIVERS.index(16)
    words = pack(value, "amp_right", "f16").view("<u4")
    expected = np.concatenate([np.zeros(16, np.uint32), words[:-16]])
    assert np.array_equal(received(result, index),
                          unpack(expected.view(np.uint8), value.shape, "amp_right", "f16"))


def test_pic_outside_memory_is_an_exchange_error():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    result = run_broadcast(bc, bc.scheduled_rows(pic={16: T.memory_end // 4 - 8}), block())
    assert any("tile 16:" in e and "outside tile memory" in e for e in result.exchange_errors)


def test_wrong_xpic_value_receives_nothing():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()
    # Tile 16 selects tile 0, which sends nothing in this phase.
    result = run_broadcast(bc, bc.scheduled_rows(xpic={16: 0}), value)
    assert not received(result, RECEIVERS.index(16)).any()
    assert np.array_equal(received(result, RECEIVERS.index(19)), value)


def test_direction_bits_limit_the_receivers():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    rows = bc.scheduled_rows()
    rows[SOURCE] = sender_row(DATA, bc.words, sctl=1)  # towards higher tile ids only
    result = run_broadcast(bc, rows, block())
    for index, r in enumerate(RECEIVERS):
        assert received(result, index).any() == (r > SOURCE)


class CorruptedImage(Package):
    """A package whose loader image of one tile differs from its row table."""

    corrupt_tile = -1
    corrupt = staticmethod(lambda words: words)

    def tile_image(self, tile):
        segments = super().tile_image(tile)
        if tile != self.corrupt_tile:
            return segments
        return [(address, self.corrupt(words.copy())) for address, words in segments]


def corrupted(bc, tile, change):
    cls = type("Corrupted", (CorruptedImage,), {"corrupt_tile": tile,
                                                "corrupt": staticmethod(change)})
    return bc.package(bc.scheduled_rows(), package_cls=cls)


def test_corrupted_row_word_in_the_image_changes_the_result():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value = block()

    def bump_pic(words):  # word 0 is the receiver's delaypic: its value is the PIC
        words[0] += 32
        return words

    result = run_package(corrupted(bc, 19, bump_pic), {"block": value})
    assert not np.array_equal(received(result, RECEIVERS.index(19)), value)
    assert np.array_equal(received(result, RECEIVERS.index(0)), value)


def test_undecodable_row_word_in_the_image_is_an_error():
    bc = Broadcast(20, SOURCE, RECEIVERS)

    def garbage(words):
        words[0] = 0x00000000
        return words

    with pytest.raises(ModelError, match=r"tile 5: the exchange row fetched from 0x4c000 .*"
                                         r"unknown opcode"):
        run_package(corrupted(bc, 5, garbage), {"block": block()})


def test_relay_reads_words_received_in_the_same_phase():
    # Tile 0 sends to tile 1; tile 1 forwards its slot to tile 2 as the words arrive. The
    # words arrive intact, but tile 1 reads and writes its slot's element in the same events:
    # send-read/write contention, reported even though the row's code is elsewhere.
    words = 256
    l01, l12 = T.latency(0, 1), T.latency(1, 2)
    start = l01 + 1  # word i is in tile 1's slot from event l01 + i on; sent at l01 + 1 + i
    relay = receiver_row(0, SLOT, l01, start)
    relay += [*sender_row(SLOT, words, sctl=1)]
    total = start + words + l12
    rows = {0: sender_row(DATA, words, sctl=1), 1: relay,
            2: receiver_row(1, SLOT, start + l12, total)}
    encoded = [np.asarray(encode(r, ROW_SLOT), np.uint32) for r in rows.values()]
    shape = (1, words)
    value = RNG.uniform(-1, 1, shape).astype(np.float32)
    package = Package(
        "ipu21", 3, encoded, [ExchangeStep(ROW_SLOT, np.array([0, 1, 2], np.int32))],
        [tensor("x", shape, "f32", "row_major", shape, [0], [DATA], [(0, 0)])],
        [tensor("y", shape, "f32", "row_major", shape, [2], [SLOT], [(0, 0)])],
    )
    result = run_package(package, {"x": value})
    assert np.array_equal(result.outputs["y"], value)
    assert len(result.exchange_errors) == 1
    error = result.exchange_errors[0]
    assert error.startswith("step 0: tile 1: memory-element contention: event ")
    assert f"send-read at {SLOT:#x}, write at {SLOT + 4:#x}" in error


def test_exchange_then_gemm_on_the_received_block():
    bc = Broadcast(20, SOURCE, RECEIVERS)
    value, left = block(), RNG.uniform(-1, 1, (16, AMP_BLOCK)).astype(np.float16)
    rows = bc.scheduled_rows()
    out_at = OUTPUT
    gemm = kernel("amp_gemm_f16_init", [5], [out_at, DATA, SLOT], [16])
    package = bc.package(rows, extra_steps=[gemm])
    package.inputs.append(tensor("left", (16, AMP_BLOCK), "f16", "amp_left", (16, AMP_BLOCK),
                                 [5], [DATA], [(0, 0)]))
    package.outputs.append(tensor("out", (16, AMP_BLOCK), "f16", "amp_output",
                                  (16, AMP_BLOCK), [5], [out_at], [(0, 0)]))
    result = run_package(package, {"block": value, "left": left})
    expected = (left.astype(np.float32) @ value.astype(np.float32)).astype(np.float16)
    assert np.array_equal(result.outputs["out"], expected)
    phase = T.sync_cycles + max(bc.latency.values()) + bc.words
    assert result.cycles_by_step == [phase, T.amp_cycles(16 * AMP_BLOCK * AMP_BLOCK, "f16")]
    assert result.cycles == sum(result.cycles_by_step)


def test_a_64_tile_phase_of_2048_words_reaches_every_receiver():
    bc = Broadcast(64, 40, [t for t in range(64) if t != 40])
    value = block()
    package = bc.package(bc.scheduled_rows())
    result = run_package(package, {"block": value})
    assert result.exchange_errors == []
    for receiver in range(63):
        assert np.array_equal(received(result, receiver), value)


def test_pic_change_takes_effect_at_its_own_event():
    # Tile 1 receives 32 words from tile 0; a sendpicp at the arrival event of word 8 moves
    # the PIC: words 0-7 land at A, words 8-31 at B.
    from device.isa import Delay, DelayPic, DelayXpic, SendPicP

    words, lat = 32, T.latency(0, 1)
    a_at, b_at = SLOT, SLOT + 0x1000
    receiver = [DelayPic(0, 0, a_at // 4), DelayXpic(lat - 1, 0, 0), Delay(5), Delay(0),
                SendPicP(words - 9, 0, 0, 0, 0, b_at // 4)]
    rows = [sender_row(DATA, words, sctl=1), receiver]
    encoded = [np.asarray(encode(r, ROW_SLOT), np.uint32) for r in rows]
    value = RNG.uniform(-1, 1, (1, words)).astype(np.float32)
    package = Package(
        "ipu21", 2, encoded, [ExchangeStep(ROW_SLOT, np.array([0, 1], np.int32))],
        [tensor("x", (1, words), "f32", "row_major", (1, words), [0], [DATA], [(0, 0)])],
        [tensor("head", (1, 8), "f32", "row_major", (1, 8), [1], [a_at], [(0, 0)]),
         tensor("tail", (1, 24), "f32", "row_major", (1, 24), [1], [b_at], [(0, 0)])],
    )
    result = run_package(package, {"x": value})
    assert result.exchange_errors == []
    assert np.array_equal(result.outputs["head"], value[:, :8])
    assert np.array_equal(result.outputs["tail"], value[:, 8:])
    assert result.cycles_by_step == [T.sync_cycles + lat + words]


def test_a_send_from_the_code_rows_memory_element_is_reported_as_contention():
    # The block sits right after the code region, in the element the rows are fetched from:
    # the sender's `send` is fetched at event 0, when it also reads the block's first word.
    in_code_element = T.code_region[1]
    assert T.element_of(in_code_element) == T.element_of(ROW_SLOT)
    bc = Broadcast(4, 0, [1, 2, 3], data=in_code_element)
    result = run_package(bc.package(bc.scheduled_rows()), {"block": block()})
    assert any("tile 0: memory-element contention: event 0: element 0 is hit by fetch at "
               f"{ROW_SLOT:#x}, send-read at {in_code_element:#x}" in e
               for e in result.exchange_errors), result.exchange_errors
    well_placed = Broadcast(4, 0, [1, 2, 3])
    assert run_package(well_placed.package(well_placed.scheduled_rows()),
                       {"block": block()}).exchange_errors == []
