"""Moving the words of one exchange phase: pieces of consecutive words, copied as blocks.

A piece (`Pieces`, one entry per piece) is what the fabric accepted for one receiver from one
source between two of the receiver's PIC controls: `count` words read from consecutive
source words and stored to consecutive target words, arriving `width` words per event on
consecutive events (width 1: 32-bit words; width 2: 64-bit items through the pair mux, word
i of a piece arriving at `arrival + i // width`). When no
piece reads a word another piece writes and no two pieces write one word, the order of the
phase cannot matter and each set of pieces with the same source block and target address
is one 2-D block copy over its receivers. Otherwise the phase is replayed word by word in
event order (sends read first at each event, then arrivals store; L >= 1, so a word is always
read before it is stored; both words of an item are read and stored at the item's events),
and of several stores to one word the latest arrival wins.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from device.model.memory import TileMemory
from device.target import WORD_BYTES


@dataclass
class Pieces:
    """All int64 arrays of one length; word addresses are absolute (byte address / 4)."""

    receiver: np.ndarray
    source: np.ndarray
    arrival: np.ndarray  # event of the first word
    count: np.ndarray  # words (a multiple of `width`)
    source_word: np.ndarray  # source word address of the first word
    delay: np.ndarray  # L(source, receiver): a word sent at event t arrives at t + delay
    pic_value: np.ndarray  # word address the PIC control in force set
    pic: np.ndarray  # index of that PIC control in the receiver's row: words stored since
    # the control count up from its value
    width: np.ndarray  # words per event: 1 (32-bit words) or 2 (64-bit items, pair mux)
    target_word: np.ndarray | None = None  # word address the first word is stored at

    @classmethod
    def concatenate(cls, parts: list[Pieces]) -> Pieces:
        names = [f.name for f in fields(cls) if f.name != "target_word"]
        if not parts:
            return cls(*(np.zeros(0, np.int64) for _ in names))
        return cls(*(np.concatenate([getattr(p, n) for p in parts]) for n in names))

    @property
    def targets(self) -> np.ndarray:
        """`target_word`, once `with_targets` has set it (every use comes after)."""
        assert self.target_word is not None, "Pieces.with_targets() not called"
        return self.target_word

    def _take(self, index: np.ndarray) -> Pieces:
        names = [f.name for f in fields(self) if f.name != "target_word"]
        target = None if self.target_word is None else self.target_word[index]
        return Pieces(**{n: getattr(self, n)[index] for n in names}, target_word=target)

    def sorted_by_arrival(self) -> Pieces:
        """Per receiver in arrival order (a receiver's pieces never overlap in time)."""
        return self._take(np.lexsort((self.arrival, self.receiver)))

    @property
    def events(self) -> np.ndarray:
        """Events each piece spans (items it stores)."""
        return self.count // self.width

    def with_targets(self) -> Pieces:
        """Target words: the PIC value plus the words stored since that PIC control, which
        pieces (in arrival order) of one receiver and control share."""
        before = np.cumsum(self.count) - self.count  # words in earlier pieces
        if self.count.size == 0:
            self.target_word = self.pic_value.copy()
            return self
        new_control = np.r_[True, (self.receiver[1:] != self.receiver[:-1])
                            | (self.pic[1:] != self.pic[:-1])]
        control_start = np.maximum.accumulate(np.where(new_control, before, 0))
        self.target_word = self.pic_value + before - control_start
        return self

    def trimmed(self, low: np.ndarray, high: np.ndarray) -> Pieces:
        """Keep words low .. high - 1 of each piece (whole items: multiples of its width);
        drop pieces left empty."""
        kept = Pieces(self.receiver, self.source, self.arrival + low // self.width, high - low,
                      self.source_word + low, self.delay, self.pic_value, self.pic,
                      self.width, self.targets + low)
        return kept._take(np.flatnonzero(kept.count > 0))

    # ---- views for the checks --------------------------------------------------------
    def written_words_per_tile(self, tiles: int, first_word: int) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest word index written on each tile (low > high: none)."""
        low = np.full(tiles, np.iinfo(np.int64).max, np.int64)
        high = np.full(tiles, -1, np.int64)
        np.minimum.at(low, self.receiver, self.targets - first_word)
        np.maximum.at(high, self.receiver, self.targets + self.count - 1 - first_word)
        return low, high

    def incoming_writes(self, tile: int) -> dict[int, int]:
        """{arrival event: byte address stored} of `tile`'s words (of an item's first word)."""
        mine = np.flatnonzero(self.receiver == tile)
        writes: dict[int, int] = {}
        targets = self.targets
        for k in mine.tolist():
            n, width = int(self.count[k]), int(self.width[k])
            events = range(int(self.arrival[k]), int(self.arrival[k]) + n // width)
            addresses = range(int(targets[k]) * WORD_BYTES,
                              (int(targets[k]) + n) * WORD_BYTES, width * WORD_BYTES)
            writes.update(zip(events, addresses, strict=True))
        return writes


# ---- hazards -----------------------------------------------------------------------------
def _overlapping_writes(tile: np.ndarray, start: np.ndarray, count: np.ndarray) -> bool:
    order = np.lexsort((start, tile))
    tile, start, end = tile[order], start[order], start[order] + count[order]
    return bool(np.any((tile[1:] == tile[:-1]) & (start[1:] < end[:-1])))


def _reads_written_words(pieces: Pieces, span: int) -> bool:
    """Whether some piece reads a word that some piece writes (writes do not overlap)."""
    write_start = pieces.receiver * span + pieces.targets
    order = np.argsort(write_start)
    write_start, write_end = write_start[order], write_start[order] + pieces.count[order]
    read_start = pieces.source * span + pieces.source_word
    read_end = read_start + pieces.count
    # the first write ending after each read starts; they overlap if it starts before the
    # read ends (keys of different tiles are `span` apart, more than any word address)
    candidate = np.searchsorted(write_end, read_start, side="right")
    inside = candidate < write_start.size
    return bool(np.any(write_start[candidate[inside]] < read_end[inside]))


# ---- applying ----------------------------------------------------------------------------
def apply_pieces(memory: TileMemory, pieces: Pieces) -> int:
    """Store the phase's accepted words; returns how many were stored."""
    if pieces.count.size == 0:
        return 0
    first_word = memory.base // WORD_BYTES
    span = memory.end // WORD_BYTES + 1
    if _overlapping_writes(pieces.receiver, pieces.targets, pieces.count) or (
            _reads_written_words(pieces, span)):
        _apply_word_by_word(memory, pieces, first_word)
    else:
        _apply_blocks(memory, pieces, first_word)
    return int(pieces.count.sum())


def _apply_blocks(memory: TileMemory, pieces: Pieces, first_word: int) -> None:
    """One 2-D copy per (source, source block, target address) over its receivers."""
    columns = (pieces.source, pieces.source_word, pieces.count, pieces.targets)
    # sorted by the key, receivers ascending within one key (`np.unique(axis=0)`'s order
    # without its structured-array sort)
    order = np.lexsort((pieces.receiver, *columns[::-1]))
    keys = np.stack([c[order] for c in columns], axis=1)
    starts = np.flatnonzero(np.r_[True, (keys[1:] != keys[:-1]).any(axis=1)])
    bounds = np.r_[starts, order.size].tolist()
    for k, (source, source_word, count, target_word) in enumerate(keys[starts].tolist()):
        receivers = pieces.receiver[order[bounds[k]:bounds[k + 1]]]
        memory.copy_words(source, source_word - first_word, receivers,
                          target_word - first_word, count)


def _apply_word_by_word(memory: TileMemory, pieces: Pieces, first_word: int) -> None:
    word_of_piece = np.repeat(np.arange(pieces.count.size), pieces.count)
    offset = np.arange(word_of_piece.size) - np.repeat(np.cumsum(pieces.count) - pieces.count,
                                                       pieces.count)
    receiver, source = pieces.receiver[word_of_piece], pieces.source[word_of_piece]
    arrival = pieces.arrival[word_of_piece] + offset // pieces.width[word_of_piece]
    send_event = arrival - pieces.delay[word_of_piece]
    source_index = pieces.source_word[word_of_piece] + offset - first_word
    target_index = pieces.targets[word_of_piece] + offset - first_word
    read_keys = source * memory.words_per_tile + source_index
    write_keys = receiver * memory.words_per_tile + target_index
    if np.isin(read_keys, write_keys).any():
        _apply_in_event_order(memory, receiver, arrival, source, source_index, send_event,
                              target_index)
        return
    # No word is read from a location this phase writes: every read sees the memory as it
    # was at the phase start. Several stores to one location: the latest arrival wins.
    values = memory.gather_words(source, source_index)
    order = np.lexsort((arrival, write_keys))  # by location, then arrival
    last_of_location = np.r_[write_keys[order][1:] != write_keys[order][:-1], True]
    final = order[last_of_location]
    memory.scatter_words(receiver[final], target_index[final], values[final])


def _apply_in_event_order(memory, receiver, arrival, source, source_index, send_event,
                          target_index) -> None:
    values = np.zeros(arrival.size, dtype=np.uint32)
    by_send = np.argsort(send_event, kind="stable")
    by_arrival = np.argsort(arrival, kind="stable")
    sorted_send, sorted_arrival = send_event[by_send], arrival[by_arrival]
    for event in np.unique(np.concatenate([send_event, arrival])).tolist():
        lo, hi = np.searchsorted(sorted_send, [event, event + 1])
        if hi > lo:
            reads = by_send[lo:hi]
            values[reads] = memory.gather_words(source[reads], source_index[reads])
        lo, hi = np.searchsorted(sorted_arrival, [event, event + 1])
        if hi > lo:
            writes = by_arrival[lo:hi]
            memory.scatter_words(receiver[writes], target_index[writes], values[writes])
