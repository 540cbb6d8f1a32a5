"""The row checker names the first disagreement between a row and its schedule."""

import pytest
from xdsl.utils.exceptions import DiagnosticException

from device.exchange_timeline import ControlEvent, SendInterval, row_timeline
from device.isa import Delay, DelayPic, DelayXpic, Send, SendOff, SendPic, SendPicP, encode
from device.row_checker import RowMismatch, RowSchedule, ScheduleError, check_row, find_mismatch

SDK_RECEIVER_ROW = [
    0x64000082, 0x40A00032,
    0xF6600000, 0x03014048,
    0xF6600000, 0x03095000,
    0xF6600000, 0x04016000,
    0xF7200000, 0x19017000,
]

# A sender that also receives: 33 words from 0x14000, then 43 more continuing the message
# while the receiving side switches to source 0x640 / pointer 0x15000 at event 33.
SENDER_ROW = [Send(32, 0x14000, 1), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)]


def sender_schedule(**changes):
    schedule = dict(
        total_events=76,
        sends=[SendInterval(0, 76, 0x14000, 1)],
        controls=[ControlEvent(33, "xpic", 0, 0x640), ControlEvent(33, "pic", 0, 0x15000)],
    )
    schedule.update(changes)
    return RowSchedule(**schedule)


def receiver_schedule():
    return RowSchedule(266, [], [
        ControlEvent(0, "xpic", 0, 130),
        ControlEvent(52, "xpic", 0, 192), ControlEvent(52, "pic", 0, 0x14048),
        ControlEvent(104, "xpic", 0, 194), ControlEvent(104, "pic", 0, 0x15000),
        ControlEvent(156, "xpic", 0, 256), ControlEvent(156, "pic", 0, 0x16000),
        ControlEvent(208, "xpic", 0, 1600), ControlEvent(208, "pic", 0, 0x17000),
    ])


def mismatch(row, schedule) -> RowMismatch:
    with pytest.raises(RowMismatch) as info:
        check_row(row, schedule)
    return info.value


def test_matching_rows_pass_as_instructions_and_as_words():
    check_row(SENDER_ROW, sender_schedule())
    check_row(encode(SENDER_ROW, 0x4C004), sender_schedule(), base_address=0x4C004)
    check_row(SDK_RECEIVER_ROW, receiver_schedule())
    assert find_mismatch(SDK_RECEIVER_ROW, receiver_schedule()) is None


def test_row_mismatch_is_an_xdsl_diagnostic():
    assert issubclass(RowMismatch, DiagnosticException)


def test_wrong_source_address():
    row = [Send(32, 0x14000, 1), SendPicP(42, 0x14022, 1, 0, 0x640, 0x15000)]
    error = mismatch(row, sender_schedule())
    assert (error.event, error.kind) == (33, "source-address")
    assert "sends source word 0x14022 but the schedule sends word 0x14021" in str(error)
    assert str(error).startswith("event 33:")


def test_sendpic_where_a_sendpicp_restart_was_needed():
    # The schedule's message resumes at 0x14100 after a gap; a sendpic just continues.
    row = [Send(32, 0x14000, 1), SendPic(42, 2, 0x15000)]
    schedule = RowSchedule(
        76,
        [SendInterval(0, 33, 0x14000, 1), SendInterval(33, 43, 0x14100, 1)],
        [ControlEvent(33, "pic", 0, 0x15000)],
    )
    error = mismatch(row, schedule)
    assert (error.event, error.kind) == (33, "restart-needed")
    assert "continues the outgoing stream at word 0x14021" in str(error)
    assert "restart from an absolute address (sendpicp or send) was needed" in str(error)
    # the same with sendoff whose delta misses the schedule's address
    error = mismatch([Send(32, 0x14000, 1), SendOff(42, 0x10, 1)], RowSchedule(76, schedule.sends))
    assert (error.event, error.kind) == (33, "restart-needed")


def test_wrong_direction():
    row = [Send(32, 0x14000, 2), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)]
    error = mismatch(row, sender_schedule())
    assert (error.event, error.kind) == (0, "direction")
    assert "in direction 2 but the schedule sends it in direction 1" in str(error)


def test_words_sent_where_the_schedule_sends_nothing_and_vice_versa():
    row = [Send(32, 0x14000, 1), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)]
    quiet = sender_schedule(sends=[SendInterval(0, 33, 0x14000, 1)])
    error = mismatch(row, quiet)
    assert (error.event, error.kind) == (33, "extra-send")
    assert "but the schedule sends nothing" in str(error)
    directionless = [Send(32, 0x14000, 1), SendPicP(42, 0, 0, 0, 0x640, 0x15000)]
    error = mismatch(directionless, sender_schedule())
    assert (error.event, error.kind) == (33, "missing-send")


def test_control_one_event_late_and_early():
    late = [DelayXpic(0, 0, 130), Delay(51), *row_timeline(SDK_RECEIVER_ROW).instructions[2:]]
    error = mismatch(late, receiver_schedule())
    assert (error.event, error.kind) == (52, "control-late")
    assert str(error) == (
        "event 52: schedule expects XPIC=192 but the row sets it at event 53 (1 event late)"
    )
    early = [DelayXpic(0, 0, 130), Delay(49), *row_timeline(SDK_RECEIVER_ROW).instructions[2:]]
    error = mismatch(early, receiver_schedule())
    assert (error.event, error.kind) == (51, "control-early")
    assert "row sets XPIC=192 but the schedule expects it at event 52 (1 event early)" in str(error)


def test_wrong_control_value():
    row = [Send(32, 0x14000, 1), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15008)]
    error = mismatch(row, sender_schedule())
    assert (error.event, error.kind) == (33, "control-value")
    assert "row sets PIC=0x15008 but the schedule expects PIC=0x15000" in str(error)
    assert error.row and error.schedule


def test_missing_and_extra_controls():
    schedule = sender_schedule(controls=[ControlEvent(33, "xpic", 0, 0x640)])
    error = mismatch(SENDER_ROW, schedule)
    assert (error.event, error.kind) == (33, "extra-control")
    schedule = sender_schedule(controls=[*sender_schedule().controls, ControlEvent(50, "pic", 0, 7)])
    error = mismatch(SENDER_ROW, schedule)
    assert (error.event, error.kind) == (50, "missing-control")


def test_total_length_mismatch():
    error = mismatch(SENDER_ROW + [Delay(3)], sender_schedule())
    assert (error.event, error.kind) == (76, "length")
    assert "row spans 80 events but the schedule spans 76" in str(error)
    # a shorter row: the schedule still sends after the row ends
    error = mismatch([Send(32, 0x14000, 1)], RowSchedule(76, [SendInterval(0, 76, 0x14000, 1)]))
    assert (error.event, error.kind) == (33, "length")


def test_first_disagreement_wins():
    # wrong direction at event 0 and a wrong control value at event 33: event 0 is reported
    row = [Send(32, 0x14000, 3), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15008)]
    assert mismatch(row, sender_schedule()).event == 0


# ---- PIC early and late: delaypic (terminal event) and sendpicp (first event) ------------
# delay [0, 1), delaypic 4 [1, 6) with its PIC at the terminal event 5, delay 1 [6, 8).
PIC_SCHEDULE = RowSchedule(8, [], [ControlEvent(5, "pic", 0, 0x300)])


def test_delaypic_row_matching_its_terminal_event_passes():
    check_row([Delay(0), DelayPic(4, 0, 0x300), Delay(1)], PIC_SCHEDULE)


def test_delaypic_pic_one_event_late():
    error = mismatch([Delay(0), DelayPic(5, 0, 0x300), Delay(0)], PIC_SCHEDULE)
    assert (error.event, error.kind) == (5, "control-late")
    assert str(error) == (
        "event 5: schedule expects PIC=0x300 but the row sets it at event 6 (1 event late)"
    )
    assert (error.row, error.schedule) == ("PIC=0x300 at event 6", "PIC=0x300 at event 5")


def test_delaypic_pic_one_event_early():
    error = mismatch([Delay(0), DelayPic(3, 0, 0x300), Delay(2)], PIC_SCHEDULE)
    assert (error.event, error.kind) == (4, "control-early")
    assert str(error) == (
        "event 4: row sets PIC=0x300 but the schedule expects it at event 5 (1 event early)"
    )


def sendpicp_pic_schedule() -> RowSchedule:
    """15 words from 0x100; XPIC=7 at event 10 and PIC=0x300 at event 11."""
    return RowSchedule(15, [SendInterval(0, 15, 0x100, 1)],
                       [ControlEvent(10, "xpic", 0, 7), ControlEvent(11, "pic", 0, 0x300)])


def test_sendpicp_pic_one_event_late():
    # the sendpicp sets XPIC and PIC at event 11; the schedule wants XPIC at 11 and PIC at
    # 10, so only the PIC is off (by one event, late)
    schedule = RowSchedule(15, sendpicp_pic_schedule().sends,
                           [ControlEvent(11, "xpic", 0, 7), ControlEvent(10, "pic", 0, 0x300)])
    row = [Send(10, 0x100, 1), SendPicP(3, 0x10B, 1, 0, 7, 0x300)]  # both controls at 11
    error = mismatch(row, schedule)
    assert (error.event, error.kind) == (10, "control-late")
    assert str(error) == (
        "event 10: schedule expects PIC=0x300 but the row sets it at event 11 (1 event late)"
    )


def test_sendpicp_pic_one_event_early():
    row = [Send(9, 0x100, 1), SendPicP(4, 0x10A, 1, 0, 7, 0x300)]  # both controls at 10
    error = mismatch(row, sendpicp_pic_schedule())
    assert (error.event, error.kind) == (10, "control-early")
    assert str(error) == (
        "event 10: row sets PIC=0x300 but the schedule expects it at event 11 (1 event early)"
    )


# ---- an inconsistent schedule is a diagnostic about the schedule -------------------------
@pytest.mark.parametrize(
    "schedule, message",
    [
        (RowSchedule(8, [SendInterval(0, 10, 0x100, 1)]),
         "send interval [0, 10) of 10 word(s) from 0x100 with sctl 1 ends after the "
         "schedule's 8 events"),
        (RowSchedule(8, [SendInterval(0, 4, 0x100, 1), SendInterval(3, 2, 0x200, 1)]),
         "send interval [0, 4) of 4 word(s) from 0x100 with sctl 1 overlaps send interval "
         "[3, 5)"),
        (RowSchedule(8, [SendInterval(0, 0, 0x100, 1)]), "is empty"),
        (RowSchedule(8, [SendInterval(-1, 2, 0x100, 1)]), "starts before event 0"),
        (RowSchedule(8, [SendInterval(0, 2, 0x100, 0)]), "has no direction"),
        (RowSchedule(8, [], [ControlEvent(8, "pic", 0, 1)]),
         "PIC=0x1 at event 8 is outside the schedule's 8 events"),
        (RowSchedule(8, [], [ControlEvent(2, "xpic", 0, 1), ControlEvent(2, "xpic", 0, 2)]),
         "two XPIC controls at event 2: XPIC=1 and XPIC=2"),
        (RowSchedule(8, [], [ControlEvent(2, "mux", 0, 1)]), "has kind 'mux'"),
        (RowSchedule(-1), "total_events -1 is not a non-negative integer"),
    ],
)
def test_inconsistent_schedule_is_a_schedule_error(schedule, message):
    with pytest.raises(ScheduleError) as info:
        check_row([Delay(7)], schedule)
    assert str(info.value).startswith("inconsistent row schedule: ")
    assert message in str(info.value)
    assert isinstance(info.value, DiagnosticException)
