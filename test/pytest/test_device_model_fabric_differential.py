"""The vectorized fabric against a word-by-word, event-by-event simulation of the same rules.

Random rows on a few tiles send and receive within one small window of memory, so that
phases relay words they received, store twice to one word, lose words at the phase end,
store before any PIC or outside tile memory: every path of `device.model.fabric` and
`device.model.fabric_words` runs. With `wide`, rows also send 64-bit items and select
through the pair mux (width mismatches, odd PICs, bus conflicts of a pair). The simulation below is written from the fabric rules in
the `device.model.fabric` docstring (one event at a time, sends read before arrivals store)
and shares only the row semantics (`row_timeline`) with the model.
"""

from __future__ import annotations

import numpy as np
import pytest

from device.exchange_timeline import PIC, XPIC, row_timeline
from device.isa import Delay, DelayPic, DelayXpic, Send, SendOff, SendPic, SendPicP, encode
from device.model.fabric import run_exchange_phase
from device.model.memory import TileMemory
from device.model.run import check_images_intact, load_images
from device.package import ExchangeStep, Package
from device.target import IPU21

T = IPU21
TILES = 6
ROW_SLOT = T.memory_base
WINDOW = T.element_of(T.code_region[1] - 1).end // 4  # first data word (apart from the rows)
WINDOW_WORDS = 48
LAST_WORD = T.memory_end // 4 - 1


def random_row(rng: np.random.Generator, tile: int, wide: list[int] | None = None) -> list:
    row, started = [], False
    # wide[t]: 1 if tile t streams 64-bit items (even addresses and offsets), 0 for 32-bit
    # words throughout; an XPIC selection mostly picks the mux of its source's width
    items = 4 * wide[tile] if wide else 0
    for _ in range(int(rng.integers(1, 7))):
        kind = int(rng.integers(0, 8))
        events_m1 = int(rng.integers(0, 6))
        source = int(rng.integers(0, TILES))
        pic = int(WINDOW + rng.integers(0, WINDOW_WORDS)) if rng.random() > 0.05 else (
            LAST_WORD - int(rng.integers(0, 3)))  # sometimes runs off the end of memory
        address = int(WINDOW + rng.integers(0, WINDOW_WORDS - 8))
        sctl = int(rng.integers(1, 4))
        mux = (wide[source] ^ int(rng.random() < 0.15)) if wide else 0
        if items:
            address, sctl = address & ~1, sctl | items
            if rng.random() < 0.7:
                pic &= ~1  # mostly 8-byte aligned
        if kind == 0:
            row.append(Delay(events_m1))
        elif kind == 1:
            row.append(DelayPic(events_m1, 0, pic))
        elif kind == 2:
            row.append(DelayXpic(events_m1, mux, source))
        elif kind == 3:
            row.append(Send(int(rng.integers(0, 8)), address, sctl))
            started = True
        elif kind == 4 and started:
            row.append(SendOff(int(rng.integers(0, 8)),
                               int(rng.integers(0, 3)) & ~(items // 4), sctl))
        elif kind == 5 and started:
            selector = int(rng.integers(0, 4)) & 2  # XPIC 0 or PIC 0
            row.append(SendPic(int(rng.integers(0, 8)), selector | (0 if selector else mux),
                               pic if selector else source))
        elif kind == 6:
            if sum(i.words for i in row) % 2:  # a sendpicp starts 8-byte aligned
                row.append(Delay(0))
            row.append(SendPicP(int(rng.integers(0, 8)), address, sctl, 0,
                                mux << 13 | source, pic))
            started = True
        else:
            source = int(rng.integers(0, TILES))
            row.append(DelayXpic(events_m1, wide[source] if wide else 0, source))
    return row


def random_package(seed: int, wide: bool = False) -> Package:
    rng = np.random.default_rng(seed)
    rows, row_id = [], np.full(TILES, -1, np.int32)
    widths = rng.integers(0, 2, TILES).tolist() if wide else None
    for tile in range(TILES):
        if rng.random() < 0.85:
            row_id[tile] = len(rows)
            rows.append(np.asarray(encode(random_row(rng, tile, widths), ROW_SLOT), np.uint32))
    if rng.random() < 0.5 and row_id.max() >= 0:  # some tiles share a row
        row_id[rng.integers(0, TILES)] = row_id[row_id >= 0][0]
    return Package(T.name, TILES, rows, [ExchangeStep(ROW_SLOT, row_id)], [], [])


def filled_memory(package: Package, seed: int) -> TileMemory:
    memory = TileMemory(T, TILES)
    load_images(memory, package)
    values = np.random.default_rng(seed + 1).integers(0, 2**32, (TILES, WINDOW_WORDS + 8))
    for tile in range(TILES):
        memory.write_words(tile, WINDOW * 4, values[tile].astype(np.uint32))
    check_images_intact(memory, load_images(memory, package), "by the test's data")
    return memory


def reference_phase(memory: TileMemory, package: Package) -> tuple[int, set[str]]:
    """Stored words and the kinds of fault, simulated one event at a time."""
    step = package.steps[0]
    timelines = {t: row_timeline(list(map(int, package.rows[int(step.row_id[t])])), ROW_SLOT)
                 for t in range(TILES) if step.row_id[t] >= 0}
    phase_end = max((tl.total_events for tl in timelines.values()), default=0)
    first, end = memory.base // 4, memory.end // 4
    sending = {}  # (tile, event) -> (word address, sctl, words per item)
    for tile, tl in timelines.items():
        for s in tl.sends:
            if first <= s.address and s.address + s.words <= end:
                for k in range(s.events):
                    sending[tile, s.start_event + k] = (s.address + k * s.width, s.sctl,
                                                        s.width)
    controls = {tile: sorted((c.event, i, c.kind, c.value, c.selector)
                             for i, c in enumerate(tl.controls))
                for tile, tl in timelines.items()}
    xpic, pic = dict.fromkeys(timelines, (-1, 0)), dict.fromkeys(timelines)
    latency = T.latency_matrix(TILES)
    horizon = phase_end + int(latency.max()) + 70
    in_flight: dict[tuple[int, int], list[int]] = {}  # (source, send event) -> words read
    stores: dict[tuple[int, int], tuple[int, int]] = {}  # (tile, event) -> (source, width)
    stored, faults = 0, set()
    words = [memory.words(tile) for tile in range(TILES)]
    for event in range(horizon):
        for (tile, at), (address, _, width) in sending.items():
            if at == event:
                in_flight[tile, at] = [int(w) for w in
                                       words[tile][address - first:address - first + width]]
        for receiver in timelines:
            for at, _, kind, value, selector in controls[receiver]:
                if at == event and kind == XPIC:
                    xpic[receiver] = (value, selector)
                elif at == event and kind == PIC:
                    pic[receiver] = value
            source, mux = xpic[receiver]
            if not 0 <= source < TILES or source == receiver:
                continue
            sent = event - int(latency[source, receiver])
            if (source, sent) not in sending:
                continue
            _, sctl, width = sending[source, sent]
            if not ((sctl & 1 and receiver > source) or (sctl & 2 and receiver < source)):
                continue
            if width != 1 + mux:  # own mux: 32-bit words; pair mux: 64-bit items
                faults.add("width")
            elif event >= phase_end:
                faults.add("lost")
            elif pic[receiver] is None:
                faults.add("no PIC")
            else:
                target, pic[receiver] = pic[receiver], pic[receiver] + width
                if width == 2 and target % 2:
                    faults.add("odd PIC")
                elif first <= target < end:
                    words[receiver][target - first:target - first + width] = in_flight[
                        source, sent]
                    stored += width
                    stores[receiver, event] = (source, width)
                else:
                    faults.add("outside")
    for (receiver, event), (source, width) in stores.items():
        partner = stores.get((receiver ^ 1, event))
        if width == 2 and partner is not None and partner != (source, 2):
            faults.add("bus conflict")
    return stored, faults


FAULT_TEXT = {"lost": "were lost", "no PIC": "found no PIC", "outside": "stored outside",
              "width": "reached its", "odd PIC": "odd PIC", "bus conflict": "incoming-bus"}


@pytest.mark.parametrize("wide", [False, True], ids=["32-bit", "64-bit"])
@pytest.mark.parametrize("seed", range(120))
def test_vectorized_fabric_matches_the_event_by_event_simulation(seed, wide):
    package = random_package(seed, wide)
    model, reference = filled_memory(package, seed), filled_memory(package, seed)
    outcome = run_exchange_phase(model, package, package.steps[0], "step 0", T)
    stored, faults = reference_phase(reference, package)
    for tile in range(TILES):
        assert np.array_equal(model.words(tile), reference.words(tile)), tile
    assert outcome.stored_words == stored
    for fault, text in FAULT_TEXT.items():
        assert (fault in faults) == any(text in e for e in outcome.errors), (fault, outcome.errors)
