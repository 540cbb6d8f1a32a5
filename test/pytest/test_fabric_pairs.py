"""64-bit items and the pair mux in the device model's exchange fabric.

Tiles 2i and 2i + 1 are a pair and share their two incoming buses. A tile whose XPIC selects
a source through the pair mux (selector 1) stores that source's 64-bit items (sctl bit 2) two
words per event at PIC, PIC + 1; its own mux (selector 0) takes 32-bit words. The rows here
are built by hand and one phase runs through `run_exchange_phase`.
"""

from __future__ import annotations

import numpy as np

from device.isa import Delay, Send, SendPicP, encode
from device.model.fabric import run_exchange_phase
from device.model.memory import TileMemory
from device.model.run import load_images
from device.package import ExchangeStep, Package
from device.target import IPU21

T = IPU21
TILES = 8
ROW_SLOT = T.memory_base
DATA = T.element_of(T.code_region[1] - 1).end // 4  # first data word, apart from the rows
SRC = DATA  # where every tile keeps the words it sends (even: 8-byte aligned)
DEST = DATA + 0x4000  # where receivers store them (another memory element)
WINDOW = 0x40
LATENCY = T.latency_matrix(TILES)
UP, DOWN, BOTH, WIDE = 1, 2, 3, 4  # sctl: directions, 64-bit items


def sender(items: int, sctl: int, after: int = 0, address: int = SRC) -> list:
    """Send `items` items from `address` starting at event `after`."""
    return ([Delay(after - 1)] if after else []) + [Send(items - 1, address, sctl)]


def receiver(source: int, dest: int, events: int, pair: bool = True) -> list:
    """Select `source` (through the pair mux unless `pair` is false) and PIC = `dest` at
    event 0; the row lasts `events` events."""
    xpic = (1 << 13 if pair else 0) | source
    row = [SendPicP(0, 0, 0, 0, xpic, dest)]
    return row + ([Delay(events - 2)] if events > 1 else [])


def phase(rows: dict[int, list]):
    """Run one phase of `rows` on memory where tile t holds words t << 16 | k at SRC + k
    (and zeros at DEST); returns (memory before, memory after, outcome)."""
    encoded: list[np.ndarray] = []
    row_id = np.full(TILES, -1, np.int32)
    for tile, row in rows.items():
        row_id[tile] = len(encoded)
        encoded.append(np.asarray(encode(row, ROW_SLOT), np.uint32))
    step = ExchangeStep(ROW_SLOT, row_id)
    package = Package(T.name, TILES, encoded, [step], [], [])
    memory = TileMemory(T, TILES)
    load_images(memory, package)
    for tile in range(TILES):
        memory.write_words(tile, SRC * 4, (tile << 16 | np.arange(WINDOW)).astype(np.uint32))
    before = np.stack([memory.words(t).copy() for t in range(TILES)])
    outcome = run_exchange_phase(memory, package, step, "step 0", T)
    after = np.stack([memory.words(t) for t in range(TILES)])
    return before, after, outcome


def at(word: int) -> int:
    return word - T.memory_base // 4


def sent(tile: int, words: int, first: int = 0) -> np.ndarray:
    return (tile << 16 | np.arange(first, first + words)).astype(np.uint32)


def stored(after: np.ndarray, tile: int, words: int, dest: int = DEST) -> np.ndarray:
    return after[tile, at(dest):at(dest) + words]


def changed_tiles(before: np.ndarray, after: np.ndarray) -> list[int]:
    return [t for t in range(TILES) if not np.array_equal(before[t], after[t])]


# ---- a pair receives a broadcast at double rate ------------------------------------------
def test_a_pair_and_a_lone_pair_mux_receive_64_bit_items():
    items = 12
    receivers = (2, 3, 5)  # 2 and 3 are a pair; 5 listens alone (4 is idle)
    rows = {0: sender(items, UP | WIDE)}
    rows |= {r: receiver(0, DEST, items + int(LATENCY[0, r])) for r in receivers}
    before, after, outcome = phase(rows)
    assert outcome.errors == []
    assert outcome.events == items + int(LATENCY[0, 5])  # words / 2 + latency
    assert outcome.stored_words == 2 * items * len(receivers)
    for r in receivers:
        np.testing.assert_array_equal(stored(after, r, 2 * items), sent(0, 2 * items))
        assert stored(after, r, 2 * items + 1)[-1] == 0  # nothing past the items
    assert changed_tiles(before, after) == list(receivers)


def test_each_item_arrives_at_its_send_event_plus_the_latency():
    # One event shorter than the slowest arrival: that receiver's last item is lost.
    items = 12
    latency = int(LATENCY[0, 5])
    rows = {0: sender(items, UP | WIDE), 5: receiver(0, DEST, items + latency - 1)}
    _, after, outcome = phase(rows)
    assert outcome.events == items + latency - 1
    assert outcome.errors == [
        f"step 0: tile 5: 2 word(s) from tile 0 arriving at events {items + latency - 1}.."
        f"{items + latency - 1}, at or after the phase end (event {items + latency - 1}), "
        f"were lost"]
    np.testing.assert_array_equal(stored(after, 5, 2 * items),
                                  np.r_[sent(0, 2 * items - 2), [0, 0]])


def test_items_follow_both_directions_from_a_sender_in_the_middle():
    items, source = 9, 4
    receivers = (1, 2, 3, 6, 7)
    rows = {source: sender(items, BOTH | WIDE)}
    rows |= {r: receiver(source, DEST, items + int(LATENCY[source, r])) for r in receivers}
    before, after, outcome = phase(rows)
    assert outcome.errors == []
    assert outcome.events == items + int(LATENCY[source, 1])
    for r in receivers:
        np.testing.assert_array_equal(stored(after, r, 2 * items), sent(source, 2 * items))
    assert changed_tiles(before, after) == list(receivers)


def test_one_direction_reaches_one_side_only():
    items, source = 9, 4
    rows = {source: sender(items, DOWN | WIDE)}
    rows |= {r: receiver(source, DEST, items + int(LATENCY[source, r])) for r in (2, 3, 6, 7)}
    before, after, outcome = phase(rows)
    assert outcome.errors == []
    assert changed_tiles(before, after) == [2, 3]


def test_a_received_item_can_be_sent_on_in_the_same_phase():
    # Tile 2 stores tile 0's items over its own send buffer, then sends them on to tile 4:
    # the words reach tile 4 only if both words of each item are stored at its arrival.
    items = 6
    relay_at = items + int(LATENCY[0, 2])
    rows = {0: sender(items, UP | WIDE),
            2: receiver(0, SRC, relay_at) + sender(items, UP | WIDE),
            4: receiver(2, DEST, relay_at + items + int(LATENCY[2, 4]))}
    _, after, outcome = phase(rows)
    assert outcome.errors == []
    np.testing.assert_array_equal(stored(after, 2, 2 * items, SRC), sent(0, 2 * items))
    np.testing.assert_array_equal(stored(after, 4, 2 * items), sent(0, 2 * items))


# ---- faults ------------------------------------------------------------------------------
def test_64_bit_items_at_the_own_mux_are_reported_and_dropped():
    items = 8
    rows = {2: sender(items, UP | WIDE), 5: receiver(2, DEST, 20, pair=False)}
    before, after, outcome = phase(rows)
    first = int(LATENCY[2, 5])
    assert outcome.errors == [
        f"step 0: tile 5: 8 64-bit item(s) from tile 2 arriving at events {first}.."
        f"{first + items - 1} reached its own mux (XPIC selector 0): 64-bit items need the "
        f"pair mux (XPIC selector 1); dropped"]
    assert outcome.stored_words == 0
    assert changed_tiles(before, after) == []


def test_32_bit_words_at_the_pair_mux_are_reported_and_dropped():
    words = 8
    rows = {2: sender(words, UP), 5: receiver(2, DEST, 20)}
    before, after, outcome = phase(rows)
    first = int(LATENCY[2, 5])
    assert outcome.errors == [
        f"step 0: tile 5: 8 32-bit word(s) from tile 2 arriving at events {first}.."
        f"{first + words - 1} reached its pair mux (XPIC selector 1): 32-bit words need the "
        f"own mux (XPIC selector 0); dropped"]
    assert outcome.stored_words == 0
    assert changed_tiles(before, after) == []


def test_a_32_bit_program_still_stores_through_the_own_mux():
    words = 8
    rows = {2: sender(words, UP), 5: receiver(2, DEST, 20, pair=False)}
    before, after, outcome = phase(rows)
    assert outcome.errors == []
    np.testing.assert_array_equal(stored(after, 5, words), sent(2, words))
    assert changed_tiles(before, after) == [5]


def test_a_pair_mux_tile_and_its_partner_storing_from_another_source_conflict():
    items = 8
    rows = {0: sender(items, UP | WIDE), 1: sender(items, UP),
            2: receiver(0, DEST, 20), 3: receiver(1, DEST, 20, pair=False)}
    _, after, outcome = phase(rows)
    first = max(int(LATENCY[0, 2]), int(LATENCY[1, 3]))
    overlap = min(items + int(LATENCY[0, 2]), items + int(LATENCY[1, 3])) - first
    assert outcome.errors == [
        f"step 0: tile 2: incoming-bus conflict with its pair tile 3 at event {first}: tile 2 "
        f"takes 64-bit items from tile 0 on both buses while tile 3 stores 32-bit words from "
        f"tile 1 ({overlap} event(s) in conflict)"]
    # reported, not dropped: both tiles stored what their muxes took
    np.testing.assert_array_equal(stored(after, 2, 2 * items), sent(0, 2 * items))
    np.testing.assert_array_equal(stored(after, 3, items), sent(1, items))


def test_two_pair_mux_tiles_of_a_pair_with_different_sources_both_conflict():
    items = 8
    rows = {0: sender(items, UP | WIDE), 6: sender(items, DOWN | WIDE),
            4: receiver(0, DEST, 20), 5: receiver(6, DEST, 20)}
    _, _, outcome = phase(rows)
    assert len(outcome.errors) == 2
    assert outcome.errors[0].startswith("step 0: tile 4: incoming-bus conflict with its pair "
                                        "tile 5 at event 10: tile 4 takes 64-bit items from "
                                        "tile 0 on both buses while tile 5 stores 64-bit items "
                                        "from tile 6")
    assert outcome.errors[1].startswith("step 0: tile 5: incoming-bus conflict with its pair "
                                        "tile 4 at event 10: tile 5 takes 64-bit items from "
                                        "tile 6 on both buses while tile 4 stores 64-bit items "
                                        "from tile 0")


def test_a_pair_taking_turns_on_its_buses_does_not_conflict():
    # Tile 1 starts sending once tile 0's items have all reached tile 2.
    items = 8
    after_items = items + int(LATENCY[0, 2]) - int(LATENCY[1, 3])
    rows = {0: sender(items, UP | WIDE), 1: sender(items, UP, after=after_items),
            2: receiver(0, DEST, 30), 3: receiver(1, DEST, 30, pair=False)}
    _, after, outcome = phase(rows)
    assert outcome.errors == []
    np.testing.assert_array_equal(stored(after, 2, 2 * items), sent(0, 2 * items))
    np.testing.assert_array_equal(stored(after, 3, items), sent(1, items))
    # one event earlier, the last item and the first word share the event
    rows[1] = sender(items, UP, after=after_items - 1)
    _, _, outcome = phase(rows)
    assert len(outcome.errors) == 1
    assert f"at event {items + int(LATENCY[0, 2]) - 1}:" in outcome.errors[0]
    assert "(1 event(s) in conflict)" in outcome.errors[0]


def test_an_odd_pic_at_the_pair_mux_is_reported_and_dropped():
    items = 4
    rows = {0: sender(items, UP | WIDE), 5: receiver(0, DEST + 1, 20)}
    before, after, outcome = phase(rows)
    first = int(LATENCY[0, 5])
    assert outcome.errors == [
        f"step 0: tile 5: 4 64-bit item(s) from tile 0 arriving at events {first}.."
        f"{first + items - 1} meet an odd PIC through the pair mux, first word address "
        f"{DEST + 1:#x} (byte {(DEST + 1) * 4:#x}): 64-bit items are 8-byte aligned; dropped"]
    assert changed_tiles(before, after) == []


def test_64_bit_items_lost_at_the_phase_end_count_words():
    items = 10
    rows = {0: sender(items, UP | WIDE), 3: receiver(0, DEST, items)}
    _, after, outcome = phase(rows)
    latency = int(LATENCY[0, 3])
    assert outcome.events == items
    assert outcome.errors == [
        f"step 0: tile 3: {2 * latency} word(s) from tile 0 arriving at events {items}.."
        f"{items + latency - 1}, at or after the phase end (event {items}), were lost"]
    kept = 2 * (items - latency)
    np.testing.assert_array_equal(stored(after, 3, kept), sent(0, kept))
    assert not stored(after, 3, 2 * items)[kept:].any()


def test_a_64_bit_send_read_and_an_incoming_write_in_one_element_contend():
    # Tile 2 sends 64-bit items from SRC while it stores tile 0's items in the same element.
    items = 12
    near = SRC + 0x100
    assert T.element_of(near * 4) == T.element_of(SRC * 4)
    rows = {0: sender(items, UP | WIDE),
            2: [SendPicP(items - 1, SRC, UP | WIDE, 0, 1 << 13 | 0, near), Delay(20)]}
    _, after, outcome = phase(rows)
    first = int(LATENCY[0, 2])
    element = T.element_of(SRC * 4).index
    assert len(outcome.errors) == 1
    assert outcome.errors[0].startswith(
        f"step 0: tile 2: memory-element contention: event {first}: element {element} is hit "
        f"by send-read at {(SRC + 2 * first) * 4:#x}, write at {near * 4:#x} (and "
        f"{items - first - 1} more)")
    np.testing.assert_array_equal(stored(after, 2, 2 * items, near), sent(0, 2 * items))
