"""Builders for hand-made packages used by the device-model tests (no tests here)."""

from __future__ import annotations

import numpy as np

from device.isa import Delay, DelayPic, DelayXpic, Send, SendOff, encode
from device.layouts import AMP_BLOCK, block_bytes
from device.package import ExchangeStep, HostTensor, KernelStep, Package
from device.target import IPU21

T = IPU21
ROW_SLOT = T.memory_base  # exchange rows live at the bottom of memory (the code region)
# First byte of the element after the code region's: exchanged data shares no memory
# element with the rows (instruction fetch and send reads would contend).
DATA = T.element_of(T.code_region[1] - 1).end
SLOT = DATA + 0x10000  # receive slot on every receiver
OUTPUT = T.interleaved_start  # AMP outputs live in interleaved memory, apart from the left stream


def tensor(name, shape, precision, order, padded, tiles, addresses, origins, scale=0):
    return HostTensor(name, tuple(shape), precision, order, tuple(padded),
                      np.asarray(tiles, np.int32), np.asarray(addresses, np.int64),
                      np.asarray(origins, np.int64).reshape(len(tiles), len(shape)), scale)


def kernel(symbol, tiles, pointers, scalars=()):
    return KernelStep(symbol, np.asarray(tiles, np.int32),
                      np.asarray(pointers, np.int64).reshape(len(tiles), -1), tuple(scalars))


def sender_row(address: int, words: int, sctl: int = 3) -> list:
    """Send `words` words from byte `address`, starting at event 0."""
    first = min(words, 64)
    row = [Send(first - 1, address // 4, sctl)]
    if words > first:
        row.append(SendOff(words - first - 1, 0, sctl))
    return row


def receiver_row(source: int, address: int, select_at: int, total_events: int,
                 pic: int | None = None) -> list:
    """PIC = `address` at event 0, XPIC = `source` at event `select_at` (>= 1), then wait until
    `total_events`."""
    pic_word = address // 4 if pic is None else pic
    row = [DelayPic(0, 0, pic_word)]
    if select_at > 1:
        row.append(Delay(select_at - 2))
    row.append(DelayXpic(0, 0, source))
    remaining = total_events - (select_at + 1)
    if remaining > 0:
        row.append(Delay(remaining - 1))
    return row


class Broadcast:
    """One f16 64x64 block on `source`, broadcast to `receivers`' SLOT in one phase."""

    def __init__(self, tiles: int, source: int, receivers: list[int], precision="f16",
                 data: int = DATA):
        self.tiles, self.source, self.receivers = tiles, source, receivers
        self.data = data  # where the block lives on the source tile
        self.precision = precision
        self.words = block_bytes(precision) // 4
        self.latency = {r: T.latency(source, r) for r in receivers}

    def scheduled_rows(self, late=None, short=None, pic=None, xpic=None):
        """Rows as scheduled; per-receiver overrides: select `late` by n events, end `short` by
        n events, a different `pic` word address or `xpic` source."""
        late, short, pic, xpic = late or {}, short or {}, pic or {}, xpic or {}
        rows = {self.source: sender_row(self.data, self.words)}
        for r in self.receivers:
            lat = self.latency[r]
            rows[r] = receiver_row(xpic.get(r, self.source), SLOT, lat + late.get(r, 0),
                                   lat + self.words - short.get(r, 0), pic.get(r))
        return rows

    def package(self, rows: dict[int, list], extra_steps=(), package_cls=Package) -> Package:
        encoded = [np.asarray(encode(instrs, ROW_SLOT), np.uint32) for instrs in rows.values()]
        row_id = np.full(self.tiles, -1, np.int32)
        for index, tile in enumerate(rows):
            row_id[tile] = index
        block = (AMP_BLOCK, AMP_BLOCK)
        inputs = [tensor("block", block, self.precision, "amp_right", block, [self.source], [self.data],
                         [(0, 0)])]
        n = len(self.receivers)
        outputs = [tensor("received", (n * AMP_BLOCK, AMP_BLOCK), self.precision, "amp_right",
                          block, self.receivers, [SLOT] * n,
                          [(i * AMP_BLOCK, 0) for i in range(n)])]
        steps = [ExchangeStep(ROW_SLOT, row_id, "broadcast"), *extra_steps]
        return package_cls("ipu21", self.tiles, encoded, steps, inputs, outputs)


def required_kernel(monkeypatch, symbol: str = "future_kernel"):
    """Register a `Required` kernel (ABI fixed, no implementation) for this test only: every
    real entry is Implemented, but the checks that refuse a Required symbol stay tested."""
    from device.kernel_abi import REQUIRED, KernelAbi
    from device.kernels import KERNELS

    abi = KernelAbi(symbol, ("out", "src"), ("words",), "void", "none", REQUIRED, "test only")
    monkeypatch.setitem(KERNELS, symbol, abi)
    return abi
