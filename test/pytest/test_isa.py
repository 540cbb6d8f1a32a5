"""Exchange ISA: golden SDK vectors, encode/decode properties, timeline rules, memory conflicts."""

from dataclasses import fields, replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from device import isa
from device.exchange_timeline import (
    ControlEvent,
    SendInterval,
    TimelineError,
    row_timeline,
)
from device.isa import (
    DecodeError,
    Delay,
    DelayPic,
    DelayXpic,
    EncodeError,
    Send,
    SendOff,
    SendPic,
    SendPicP,
    decode,
    encode,
)
from device.memory_conflicts import FETCH, SEND_READ, WRITE, find_conflicts, incoming_writes
from device.target import IPU21

SDK_SENDPICP = [0xF54A0109, 0x19015000]
SDK_RECEIVER_ROW = [
    0x64000082, 0x40A00032,
    0xF6600000, 0x03014048,
    0xF6600000, 0x03095000,
    0xF6600000, 0x04016000,
    0xF7200000, 0x19017000,
]
SDK_RECEIVER_INSTRS = [
    DelayXpic(0, 0, 130),
    Delay(50),
    SendPicP(51, 0, 0, 0, 192, 0x14048),
    SendPicP(51, 0, 0, 0, 194, 0x15000),
    SendPicP(51, 0, 0, 0, 256, 0x16000),
    SendPicP(57, 0, 0, 0, 0x640, 0x17000),
]


# ---- golden vectors -------------------------------------------------------------------
def test_sdk_sendpicp_decodes_to_the_spec_operands():
    (instr,) = decode(SDK_SENDPICP)
    assert instr == SendPicP(42, 0x14021, 1, 0, xpic=0x640, pic=0x15000)
    assert isa.format_instruction(instr) == "sendpicp 42, 0x14021, 1, 0, xpic = 0x640, pic = 0x15000"
    assert instr.words == 2 and instr.events == 43


def test_sdk_sendpicp_encodes_to_the_sdk_words():
    assert encode([SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)]) == SDK_SENDPICP


def test_sdk_sendpicp_after_33_word_send_continues_the_message():
    # The spec: it follows an initial send from 0x14000 which has already sent 33 words.
    timeline = row_timeline([Send(32, 0x14000, 1), Delay(0), *decode(SDK_SENDPICP)])
    assert timeline.sends == [
        SendInterval(0, 33, 0x14000, 1),
        SendInterval(34, 43, 0x14021, 1),
    ]
    assert timeline.controls == [
        ControlEvent(34, "xpic", 0, 0x640),
        ControlEvent(34, "pic", 0, 0x15000),
    ]


def test_sdk_receiver_row_round_trips():
    assert decode(SDK_RECEIVER_ROW) == SDK_RECEIVER_INSTRS
    assert encode(SDK_RECEIVER_INSTRS) == SDK_RECEIVER_ROW


def test_sdk_receiver_row_events():
    timeline = row_timeline(SDK_RECEIVER_ROW)
    # delayxpic: 1 event [0, 1), control at its terminal event 0;
    # delay 50: 51 events [1, 52); four sendpicp windows of 52, 52, 52, 58 events.
    assert [(s.start_event, s.end_event) for s in timeline.spans] == [
        (0, 1), (1, 52), (52, 104), (104, 156), (156, 208), (208, 266),
    ]
    assert timeline.total_events == 266
    assert timeline.sends == []  # receiver-only: directionless sendpicp sends nothing
    assert timeline.controls == [
        ControlEvent(0, "xpic", 0, 130),
        ControlEvent(52, "xpic", 0, 192), ControlEvent(52, "pic", 0, 0x14048),
        ControlEvent(104, "xpic", 0, 194), ControlEvent(104, "pic", 0, 0x15000),
        ControlEvent(156, "xpic", 0, 256), ControlEvent(156, "pic", 0, 0x16000),
        ControlEvent(208, "xpic", 0, 0x640), ControlEvent(208, "pic", 0, 0x17000),
    ]
    arrays = timeline.event_arrays()
    assert arrays.source.shape == (266,) and (arrays.source == -1).all()


# ---- hand-derived golden words: every layout, every field non-zero and asymmetric --------
# Each word is computed by hand from the spec's formulas (exchange-isa.md, "Recovered
# encodings"), not by the encoder; the arithmetic is in the comment. Fields are chosen so that
# moving or swapping any field (or the two halves of sendoff's words-1) changes the word.
GOLDEN = [
    # delay(0x5a5a5): 0x40a00000 | (0x5a5a5 & 0x7ffff) = 0x40a5a5a5
    (Delay(events_m1=0x5A5A5), [0x40A5A5A5]),
    # delaypic(0x5a, 1, 0x2d2d3): 0x60000000 | ((0x5a << 19) & 0x03f80000 = 0x02d00000)
    #   | ((1 << 18) & 0x00040000 = 0x00040000) | (0x2d2d3 & 0x3ffff) = 0x62d6d2d3
    (DelayPic(events_m1=0x5A, selector=1, value=0x2D2D3), [0x62D6D2D3]),
    # delayxpic(0xa5c, 1, 0x1b3c): 0x64000000 | ((0xa5c << 14) & 0x03ffc000 = 0x02970000)
    #   | ((1 << 13) & 0x2000 = 0x2000) | (0x1b3c & 0x1fff) = 0x66973b3c
    (DelayXpic(events_m1=0xA5C, selector=1, value=0x1B3C), [0x66973B3C]),
    # send(0x2b, 0x1a5c3, 2): 0x78000000 | ((0x2b << 21) & 0x07e00000 = 0x05600000)
    #   | ((0x1a5c3 << 3) & 0x001ffff8 = 0x000d2e18) | 2 = 0x7d6d2e1a
    (Send(words_m1=0x2B, address=0x1A5C3, sctl=2), [0x7D6D2E1A]),
    # sendoff(0xc5d, 0x5b3, 3): 3166 words; low half 0xc5d & 0x3f = 0x1d, high half
    #   0xc5d >> 6 = 0x31. 0x70000000 | ((0xc5d << 21) & 0x07e00000 = 0x1d << 21 = 0x03a00000)
    #   | (((0xc5d >> 6) << 14) & 0x000fc000 = 0x31 << 14 = 0x000c4000)
    #   | ((0x5b3 << 3) & 0x00003ff8 = 0x2d98) | 3 = 0x73ac6d9b
    (SendOff(words_m1=0xC5D, delta=0x5B3, sctl=3), [0x73AC6D9B]),
    # sendpic(0x15, 0, 0x1a2b): 0x70100000 | (0x15 << 21 = 0x02a00000) | (0 << 18) | 0x1a2b
    #   = 0x72b01a2b
    (SendPic(words_m1=0x15, selector=0, value=0x1A2B), [0x72B01A2B]),
    # sendpic(0x2a, 1, 0xc3d): 0x70100000 | (0x2a << 21 = 0x05400000) | (1 << 18 = 0x00040000)
    #   | 0xc3d = 0x75540c3d
    (SendPic(words_m1=0x2A, selector=1, value=0xC3D), [0x75540C3D]),
    # sendpic(0x33, 2, 0x3c5a7): 0x70100000 | (0x33 << 21 = 0x06600000) | (2 << 18 = 0x00080000)
    #   | 0x3c5a7 = 0x767bc5a7
    (SendPic(words_m1=0x33, selector=2, value=0x3C5A7), [0x767BC5A7]),
    # sendpic(0x0e, 3, 0x21f0e): 0x70100000 | (0x0e << 21 = 0x01c00000) | (3 << 18 = 0x000c0000)
    #   | 0x21f0e = 0x71de1f0e
    (SendPic(words_m1=0x0E, selector=3, value=0x21F0E), [0x71DE1F0E]),
    # sendpicp(0x1d, 0x2c4b7, 1, pic_selector 1, xpic 0x2a6b, pic 0x1f3c5):
    #   prefix 0xf0000000 | ((1 << 27) & 0x08000000 = 0x08000000) | (0x1d << 21 = 0x03a00000)
    #   | ((0x2c4b7 << 3) & 0x001ffff8 = 0x001625b8) | 1 = 0xfbb625b9;
    #   inline (0x2a6b << 18 = 0xa9ac0000) | 0x1f3c5 = 0xa9adf3c5.
    #   xpic 0x2a6b has bit 13 set (XPIC selector 1): the ISA carries all 14 bits, only the
    #   timeline rejects the undefined selector.
    (SendPicP(words_m1=0x1D, address=0x2C4B7, sctl=1, pic_selector=1, xpic=0x2A6B,
              pic=0x1F3C5), [0xFBB625B9, 0xA9ADF3C5]),
]


def test_golden_words_cover_every_instruction_with_every_field_non_zero():
    assert {type(instr) for instr, _ in GOLDEN} == set(isa.INSTRUCTION_CLASSES)
    assert {i.selector for i, _ in GOLDEN if isinstance(i, SendPic)} == {0, 1, 2, 3}
    for instr, _ in GOLDEN:  # (sendpic selector 0 is the one field that must be zero)
        nonzero = [f.name for f in fields(instr) if not (isinstance(instr, SendPic)
                                                         and f.name == "selector")]
        assert all(getattr(instr, name) != 0 for name in nonzero), instr
    (sendoff,) = [i for i, _ in GOLDEN if isinstance(i, SendOff)]
    assert sendoff.events >= 65 and sendoff.words_m1 >> 6 != sendoff.words_m1 & 0x3F


@pytest.mark.parametrize("instr, words", GOLDEN, ids=lambda x: getattr(x, "mnemonic", None))
def test_golden_encode(instr, words):
    assert encode([instr]) == words


@pytest.mark.parametrize("instr, words", GOLDEN, ids=lambda x: getattr(x, "mnemonic", None))
def test_golden_decode(instr, words):
    assert decode(words) == [instr]


def test_golden_sendoff_halves_land_at_their_bits():
    (word,) = encode([SendOff(0xC5D, 0x5B3, 3)])
    assert (word >> 21) & 0x3F == 0x1D  # low six bits of words - 1
    assert (word >> 14) & 0x3F == 0x31  # high six bits of words - 1


# ---- encoder diagnostics ----------------------------------------------------------------
@pytest.mark.parametrize(
    "instr, field, value, hi",
    [
        (Delay(1 << 19), "events_m1", 1 << 19, "0x7ffff"),
        (DelayPic(128, 0, 0), "events_m1", 128, "0x7f"),
        (DelayXpic(0, 0, 0x2000), "value", 0x2000, "0x1fff"),
        (Send(0, 0, 8), "sctl", 8, "0x7"),
        (SendOff(0, 2048, 1), "delta", 2048, "0x7ff"),
        (SendPic(0, 0, 0x2000), "value", 0x2000, "0x1fff"),
        (SendPicP(0, 0, 1, 0, 0x4000, 0), "xpic", 0x4000, "0x3fff"),
        (Send(-1, 0, 1), "words_m1", -1, "0x3f"),
    ],
)
def test_encode_rejects_out_of_range_fields(instr, field, value, hi):
    with pytest.raises(EncodeError) as info:
        encode([instr])
    message = str(info.value)
    assert instr.mnemonic in message and f"'{field}' = {value}" in message and hi in message


def test_encode_rejects_misaligned_sendpicp():
    with pytest.raises(EncodeError, match=r"byte address 0x4c004, which is not 8-byte aligned"):
        encode([Delay(0), SendPicP(0, 0, 0, 0, 1, 2)], base_address=0x4C000)
    assert len(encode([Delay(0), SendPicP(0, 0, 0, 0, 1, 2)], base_address=0x4C004)) == 3


# ---- decoder diagnostics ----------------------------------------------------------------
@pytest.mark.parametrize(
    "words, base, index, reason",
    [
        ([0x00000000], 0, 0, "unknown opcode"),
        ([0x40B00000], 0, 0, "unknown opcode"),  # 0x40.. but not the delay prefix
        ([0x68000000], 0, 0, "unknown opcode"),
        ([0x40A00000, 0xF54A0109, 0x19015000], 0, 1, "not 8-byte aligned"),
        ([0xF54A0109, 0x19015000], 4, 0, "not 8-byte aligned"),
        ([0x40A00000, 0x40A00000, 0xF54A0109], 0, 2, "missing its inline word"),
        ([0x70102000], 0, 0, "reserved bits set"),  # sendpic XPIC value > 13 bits
    ],
)
def test_decode_errors_name_index_word_and_reason(words, base, index, reason):
    with pytest.raises(DecodeError) as info:
        decode(words, base_address=base)
    assert info.value.index == index
    assert info.value.word == words[index]
    assert reason in info.value.reason


def test_sendpic_and_sendoff_are_told_apart_by_bit_20():
    assert decode([0x70100000]) == [SendPic(0, 0, 0)]
    assert decode([0x70000000]) == [SendOff(0, 0, 0)]
    # sendoff's split words field: low 6 bits at 21..26, high 6 at 14..19 (never bit 20).
    (word,) = encode([SendOff(0xFFF, 0, 0)])
    assert word == 0x70000000 | (0x3F << 21) | (0x3F << 14) and not word & (1 << 20)


# ---- properties -------------------------------------------------------------------------
def bits(n):
    return st.integers(0, (1 << n) - 1)


def sendpic_strategy():
    return st.integers(0, 3).flatmap(
        lambda sel: st.builds(SendPic, bits(6), st.just(sel), bits(13 if sel < 2 else 18))
    )


INSTRUCTIONS = st.one_of(
    st.builds(Delay, bits(19)),
    st.builds(DelayPic, bits(7), bits(1), bits(18)),
    st.builds(DelayXpic, bits(12), bits(1), bits(13)),
    st.builds(Send, bits(6), bits(18), bits(3)),
    st.builds(SendOff, bits(12), bits(11), bits(3)),
    sendpic_strategy(),
    st.builds(SendPicP, bits(6), bits(18), bits(3), bits(1), bits(14), bits(18)),
)


def aligned_row(instrs):
    """Insert a `delay 0` before any sendpicp that would start on an odd word."""
    row, words = [], 0
    for instr in instrs:
        if isinstance(instr, SendPicP) and words % 2:
            row.append(Delay(0))
            words += 1
        row.append(instr)
        words += instr.words
    return row


@settings(max_examples=400, deadline=None)
@given(INSTRUCTIONS)
def test_encode_then_decode_is_identity_per_instruction(instr):
    words = encode([instr])
    assert len(words) == instr.words
    assert all(0 <= w <= 0xFFFFFFFF for w in words)
    assert decode(words) == [instr]


@settings(max_examples=150, deadline=None)
@given(st.lists(INSTRUCTIONS, max_size=12), st.integers(0, 0x4000).map(lambda k: 0x4C000 + 8 * k))
def test_encode_then_decode_is_identity_per_row(instrs, base):
    row = aligned_row(instrs)
    words = encode(row, base)
    assert decode(words, base) == row
    assert encode(decode(words, base), base) == words


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_field_one_past_its_range_and_negative_is_rejected(data):
    instr = data.draw(INSTRUCTIONS)
    name = data.draw(st.sampled_from([f.name for f in fields(instr)]))
    _, hi = isa.field_range(type(instr), name, instr)
    for bad in (hi + 1, -1):
        with pytest.raises(EncodeError, match=f"{instr.mnemonic} .*'{name}' = {bad} is out of"):
            isa.encode_one(replace(instr, **{name: bad}))


@pytest.mark.parametrize(
    "cls, name",
    [(cls, name) for cls in isa.INSTRUCTION_CLASSES for name in isa.FIELD_BITS[cls]],
)
def test_each_field_of_each_instruction_has_its_spec_width(cls, name):
    """Every (instruction, field) pair, not a sample: max accepted, max + 1 and -1 rejected."""
    base = {f: 0 for f in isa.FIELD_BITS[cls]}
    if cls is SendPic and name == "value":
        base["selector"] = 2  # the full 18-bit PIC form; the XPIC form is pinned below
    _, hi = isa.field_range(cls, name, cls(**base))
    assert hi == (1 << isa.FIELD_BITS[cls][name]) - 1
    assert decode(encode([cls(**{**base, name: hi})])) == [cls(**{**base, name: hi})]
    for bad in (hi + 1, -1):
        with pytest.raises(EncodeError, match=f"'{name}' = {bad} is out of range"):
            encode([cls(**{**base, name: bad})])


def test_sendpic_xpic_value_is_13_bits():
    assert encode([SendPic(0, 1, 0x1FFF)]) == [0x70100000 | (1 << 18) | 0x1FFF]
    with pytest.raises(EncodeError, match="an XPIC immediate in sendpic is 13 bits"):
        encode([SendPic(0, 1, 0x2000)])


@pytest.mark.parametrize(
    "instr, field, shown",
    [
        (Delay(True), "events_m1", "True"),
        (Send(0, 1.5, 1), "address", "1.5"),
        (SendPicP(0, 0, 0, 0, "1", 0), "xpic", "'1'"),
        (DelayPic(0, False, 0), "selector", "False"),
    ],
)
def test_encode_rejects_non_integer_fields(instr, field, shown):
    with pytest.raises(EncodeError) as info:
        encode([instr])
    assert f"{instr.mnemonic} " in str(info.value)
    assert f"field '{field}' = {shown} is not an integer" in str(info.value)


def test_numpy_integer_fields_encode_as_their_values():
    # a uint8 shifted left by 19 would wrap to zero if the encoder kept NumPy types
    assert encode([DelayPic(np.uint8(0x5A), np.int64(1), np.uint32(0x2D2D3))]) == [0x62D6D2D3]


@pytest.mark.parametrize(
    "words, index, reason",
    [
        ([1.5], 0, "1.5 is not an integer word (a float)"),
        ([True], 0, "True is not an integer word (a bool)"),
        (["40a00000"], 0, "'40a00000' is not an integer word (a str)"),
        ([0xF54A0109, 2.0], 1, "2.0 is not an integer word (a float)"),
        ([0x40A00000, None], 1, "None is not an integer word"),
    ],
)
def test_decode_rejects_non_integer_words(words, index, reason):
    with pytest.raises(DecodeError) as info:
        decode(words)
    assert info.value.index == index and reason in str(info.value)
    assert str(info.value).startswith(f"word {index} (")


def test_decode_accepts_numpy_words():
    assert decode(np.array([0xFBB625B9, 0xA9ADF3C5], np.uint32)) == [GOLDEN[-1][0]]


@pytest.mark.slow
def test_a_million_random_words_decode_or_raise_decode_error():
    rng = np.random.default_rng(20240521)
    count = 1_000_000
    firsts = rng.integers(0, 1 << 32, size=count, dtype=np.uint64).tolist()
    seconds = rng.integers(0, 1 << 32, size=count, dtype=np.uint64).tolist()
    decoded = failed = 0
    for first, second in zip(firsts, seconds):
        try:
            instrs = decode([first, second], 0x4C000)
        except DecodeError:
            failed += 1
            continue
        decoded += 1
        # whatever decodes re-encodes to the same words
        assert encode(instrs, 0x4C000) == [first, second][: sum(i.words for i in instrs)]
    assert decoded + failed == count
    assert decoded > 0 and failed > 0


# ---- timeline rules ---------------------------------------------------------------------
def test_controls_at_terminal_event_for_delays_and_first_event_for_sends():
    timeline = row_timeline([
        Send(0, 0x100, 1),  # event 0
        DelayPic(4, 0, 0x2000),  # events 1..5, PIC at 5
        DelayXpic(2, 0, 7),  # events 6..8, XPIC at 8
        SendPic(3, 2, 0x3000),  # events 9..12, PIC at 9
        SendPic(1, 0, 9),  # events 13..14, XPIC at 13
    ])
    assert timeline.controls == [
        ControlEvent(5, "pic", 0, 0x2000),
        ControlEvent(8, "xpic", 0, 7),
        ControlEvent(9, "pic", 0, 0x3000),
        ControlEvent(13, "xpic", 0, 9),
    ]
    assert timeline.total_events == 15


def test_stream_rules_send_sendoff_sendpic_sendpicp():
    timeline = row_timeline([
        Send(3, 0x100, 1),  # words 0x100..0x103 at events 0..3
        SendOff(1, 4, 2),  # skips 4 words after the last sent: 0x108, 0x109, direction 2
        SendPic(2, 2, 0x50),  # continues: 0x10a..0x10c, inherits sctl 2
        Delay(1),  # events 9..10: nothing
        SendPicP(1, 0x200, 3, 0, 1, 0x60),  # restart at 0x200 (events 11..12)
        SendPicP(0, 0x999, 0, 0, 2, 0x70),  # directionless: no send, stream untouched
        SendOff(0, 0, 1),  # continues after 0x201: 0x202
    ])
    assert timeline.sends == [
        SendInterval(0, 4, 0x100, 1),
        SendInterval(4, 2, 0x108, 2),
        SendInterval(6, 3, 0x10A, 2),
        SendInterval(11, 2, 0x200, 3),
        SendInterval(14, 1, 0x202, 1),
    ]
    arrays = timeline.event_arrays()
    assert arrays.source.tolist() == [
        0x100, 0x101, 0x102, 0x103, 0x108, 0x109, 0x10A, 0x10B, 0x10C, -1, -1,
        0x200, 0x201, -1, 0x202,
    ]
    assert arrays.sctl.tolist() == [1, 1, 1, 1, 2, 2, 2, 2, 2, 0, 0, 3, 3, 0, 1]


def test_directionless_send_advances_time_and_cursor_without_sending():
    timeline = row_timeline([Send(2, 0x40, 0), SendOff(0, 0, 1)])
    assert timeline.sends == [SendInterval(3, 1, 0x43, 1)]
    assert timeline.total_events == 4


@pytest.mark.parametrize(
    "row, message",
    [
        ([SendOff(0, 0, 1)], "sendoff continues the outgoing stream but no send has started one"),
        ([Delay(3), SendPic(0, 2, 0)], "sendpic continues the outgoing stream but no send"),
        ([Send(0, 1, 5)], "reads word address 0x1, which is odd: 64-bit items are 8-byte aligned"),
        ([SendPicP(0, 3, 5, 0, 0, 0)], "reads word address 0x3, which is odd"),
        ([Send(0, 2, 5), SendOff(0, 1, 5)], "reads word address 0x5, which is odd"),
        ([DelayPic(0, 1, 3)], "PIC selector 1 is not supported"),
        ([Send(0, 0, 1), SendPic(0, 3, 3)], "PIC selector 1 is not supported"),
        ([SendPicP(0, 0, 1, 1, 0, 0)], "PIC selector 1 is not supported"),
    ],
)
def test_timeline_rejects_undefined_rows(row, message):
    with pytest.raises(TimelineError, match=message):
        row_timeline(row)


def test_64_bit_items_send_two_words_per_event():
    # 3 items from word 0x40, then 2 more continuing the stream: 10 words on 5 events.
    timeline = row_timeline([Send(2, 0x40, 5), SendOff(1, 0, 5), Delay(0)])
    assert timeline.sends == [SendInterval(0, 6, 0x40, 5), SendInterval(3, 4, 0x46, 5)]
    assert [s.events for s in timeline.sends] == [3, 2]
    assert timeline.total_events == 6
    assert timeline.event_arrays().source.tolist() == [0x40, 0x42, 0x44, 0x46, 0x48, -1]


def test_the_pair_mux_is_xpic_selector_1():
    timeline = row_timeline([DelayXpic(0, 1, 3), SendPicP(0, 0, 0, 0, 0x2000 | 7, 0x10)])
    assert [(c.kind, c.selector, c.value) for c in timeline.controls] == [
        ("xpic", 1, 3), ("xpic", 1, 7), ("pic", 0, 0x10)]


# ---- memory-element conflicts -----------------------------------------------------------
def test_fetch_send_read_and_write_in_one_element_conflict():
    element = IPU21.element_bytes
    base = IPU21.memory_base
    row = [Send(3, (base + 0x1000) // 4, 1), Delay(3)]
    # event 0: fetch at base, send read at base + 0x1000: same element 0.
    conflicts = find_conflicts(base, row, target=IPU21)
    assert [(c.event, c.element) for c in conflicts] == [(0, 0)]
    assert {a.kind for a in conflicts[0].accesses} == {FETCH, SEND_READ}
    # move the send source to the next element: no conflict at event 0;
    # an incoming write into that element at event 2 now meets the send read there.
    row = [Send(3, (base + element) // 4, 1), Delay(3)]
    writes = np.full(8, -1)
    writes[2] = base + element + 0x40
    writes[5] = base + 2 * element
    conflicts = find_conflicts(base, row, writes, target=IPU21)
    assert [(c.event, c.element, sorted(a.kind for a in c.accesses)) for c in conflicts] == [
        (2, 1, [SEND_READ, WRITE])
    ]


def test_fetch_happens_at_first_event_of_each_instruction():
    base = IPU21.memory_base
    row = [Delay(5), Delay(0), SendPicP(3, 0, 0, 0, 1, 0x100)]
    # writes into the code element at every event: conflicts exactly where a fetch happens
    writes = [base + 0x2000] * 11
    conflicts = find_conflicts(base, row, writes, target=IPU21)
    assert [c.event for c in conflicts] == [0, 6, 7]
    assert conflicts[2].accesses[0].nbytes == 8  # sendpicp fetches both words


def test_incoming_writes_follow_pic_and_auto_increment():
    timeline = row_timeline(SDK_RECEIVER_ROW)
    arrivals = np.zeros(timeline.total_events, dtype=bool)
    arrivals[[52, 53, 103, 104]] = True
    writes = incoming_writes(timeline.controls, arrivals, timeline.total_events)
    assert writes[52] == 4 * 0x14048 and writes[53] == 4 * 0x14049
    assert writes[103] == 4 * 0x1404A and writes[104] == 4 * 0x15000
    assert (writes >= 0).sum() == 4


# ---- diagnostics pinned in full ------------------------------------------------------------
def test_non_integer_field_names_its_python_type():
    with pytest.raises(EncodeError) as info:
        encode([Send(0, 1.5, 1)])
    assert str(info.value) == "send 0, 1.5, 1: field 'address' = 1.5 is not an integer (a float)"


def test_misaligned_sendpicp_says_how_to_fix_it():
    with pytest.raises(EncodeError) as info:
        encode([Delay(0), SendPicP(0, 0, 0, 0, 1, 2)], base_address=0x4C000)
    assert str(info.value).endswith(
        "which is not 8-byte aligned (insert a one-word instruction before it or move the row)")


def test_pic_operands_need_their_name():
    from device.isa import AsmSyntaxError, parse_instruction

    with pytest.raises(AsmSyntaxError) as info:
        parse_instruction("sendpicp 1, 2, 3, 0, 5, pic = 1")
    assert str(info.value) == ("'sendpicp 1, 2, 3, 0, 5, pic = 1': expected 'xpic = <integer>', "
                               "got '5'")


@pytest.mark.parametrize("instr, message", [
    (DelayPic(0, 1, 0), "delaypic 0, 1, 0x0: PIC selector 1 is not supported (only PIC selector 0 "
                        "is defined: absolute incoming word address)"),
])
def test_timeline_rejects_undefined_selectors(instr, message):
    with pytest.raises(TimelineError) as info:
        row_timeline([instr])
    assert str(info.value) == message


@pytest.mark.parametrize("instr", [SendPic(0, 0, 1), SendOff(0, 0, 1)])
def test_timeline_rejects_a_continuation_without_a_send(instr):
    with pytest.raises(TimelineError) as info:
        row_timeline([instr])
    assert str(info.value).endswith(
        f"at event 0: {instr.mnemonic} continues the outgoing stream but no send has started one")


def test_the_documented_field_table_is_the_field_definition():
    """`device/isa.py`'s docstring restates the widths for readers; it must not drift from the
    dataclass fields that define them (their `bits` metadata, `FIELD_BITS`)."""
    import re

    documented = {}
    for mnemonic, operands in re.findall(r"^\| `(\w+)` +\| (.+) \|$", isa.__doc__, re.M):
        documented[mnemonic] = {name: int(bits) for name, bits in re.findall(r"(\w+) \((\d+)", operands)}
    assert documented == {cls.mnemonic: isa.FIELD_BITS[cls] for cls in isa.INSTRUCTION_CLASSES}
