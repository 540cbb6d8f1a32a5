"""ipu-objdump / ipu-as: round trips, package input, dialect printing of the same text form."""

from io import StringIO

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_isa import INSTRUCTIONS, SDK_RECEIVER_INSTRS, SDK_RECEIVER_ROW, aligned_row
from typer.testing import CliRunner
from xdsl.backend.assembly_printer import AssemblyPrinter
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from device.isa import AsmSyntaxError, Delay, DelayXpic, EncodeError, Send, SendPic, SendPicP, encode
from device.package import ExchangeStep, Package
from ipu_dialects.exchange import RowOp, SendPicPOp, op_from_isa
from tools import ipu_as, ipu_objdump
from tools.registry import make_context

runner = CliRunner()


@settings(max_examples=100, deadline=None)
@given(st.lists(INSTRUCTIONS, min_size=1, max_size=10), st.integers(0, 64).map(lambda k: 0x4C000 + 8 * k))
def test_assemble_disassemble_round_trip(instrs, base):
    words = encode(aligned_row(instrs), base)
    listing, error = ipu_objdump.disassemble(words, base)
    # every encoded row decodes; random rows may have no timeline (e.g. selector 1), but their
    # instructions are still listed in full
    assert error is None or "timeline error" in error
    assert ipu_as.assemble(listing) == words  # the listing's first address is the base


def test_cli_round_trip_of_the_sdk_receiver_row():
    dumped = runner.invoke(ipu_objdump.app, [f"{w:08x}" for w in SDK_RECEIVER_ROW])
    assert dumped.exit_code == 0, dumped.output
    assert "sendpicp 57, 0x0, 0, 0, xpic = 0x640, pic = 0x17000" in dumped.output
    assert "events [208, 266); XPIC=1600 at 208; PIC=0x17000 at 208" in dumped.output
    assembled = runner.invoke(ipu_as.app, [], input=dumped.output)
    assert assembled.exit_code == 0, assembled.output
    header, *words = assembled.output.splitlines()
    assert header == "# row at 0x0: 10 words"  # the listing's row header, kept
    assert [int(w, 16) for w in words] == SDK_RECEIVER_ROW


def test_objdump_reads_a_package_tile_image(tmp_path):
    sender = encode([Send(32, 0x14000, 1), Delay(0), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)],
                    0x4C000)
    rows = [np.array(sender, np.uint32), np.array(SDK_RECEIVER_ROW, np.uint32)]
    steps = [ExchangeStep(0x4C000, np.array([0, 1], np.int32)),
             ExchangeStep(0x4C100, np.array([-1, 1], np.int32))]
    Package("ipu21", 2, rows, steps, [], []).save(tmp_path / "pkg")
    tile0 = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"), "--tile", "0"])
    assert tile0.exit_code == 0, tile0.output
    assert tile0.output.count("# row at") == 1
    assert "0x0004c008: f54a0109 19015000  sendpicp 42, 0x14021, 1, 0" in tile0.output
    tile1 = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"), "--tile", "1"])
    assert tile1.exit_code == 0, tile1.output
    assert "# row at 0x4c000: 10 words, 266 events" in tile1.output
    assert "# row at 0x4c100: 10 words, 266 events" in tile1.output


def test_objdump_says_when_a_package_tile_has_no_rows(tmp_path):
    rows = [np.array(SDK_RECEIVER_ROW, np.uint32)]
    Package("ipu21", 3, rows, [ExchangeStep(0x4C000, np.array([0, -1, 0], np.int32))], [], []).save(
        tmp_path / "pkg")
    result = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"), "--tile", "1"])
    assert result.exit_code == 0, result.output
    assert result.output == f"# tile 1 of {tmp_path / 'pkg'} holds no exchange rows\n"


def test_objdump_file_input_and_usage_errors(tmp_path):
    path = tmp_path / "row.hex"
    path.write_text("# the SDK sendpicp\nf54a0109 0x19015000\n")
    result = runner.invoke(ipu_objdump.app, ["--file", str(path)])
    assert result.exit_code == 0 and "sendpicp 42, 0x14021, 1, 0" in result.output
    result = runner.invoke(ipu_objdump.app, ["zz"])
    assert result.exit_code == 1 and "'zz' is not a hexadecimal word" in result.output
    result = runner.invoke(ipu_objdump.app, [])
    assert result.exit_code == 2 and "give exactly one of" in result.output


# ---- whole package tiles: ipu-as reads a multi-row listing row by row --------------------
# Tile 1 holds two rows; the second starts on an odd word (0x4c104), so its sendpicp is
# aligned (0x4c108) only when that row is placed at its own header's address: joined after
# the 10-word first row it would start at 0x4c02c.
ODD_ROW = [Delay(2), SendPicP(3, 0, 0, 0, 1, 0x15000), Delay(4)]


def two_row_package(path):
    sender = encode([Send(32, 0x14000, 1), Delay(0), SendPicP(42, 0x14021, 1, 0, 0x640, 0x15000)],
                    0x4C000)
    rows = [np.array(sender, np.uint32), np.array(SDK_RECEIVER_ROW, np.uint32),
            np.array(encode(ODD_ROW, 0x4C104), np.uint32)]
    steps = [ExchangeStep(0x4C000, np.array([0, 1], np.int32)),
             ExchangeStep(0x4C104, np.array([-1, 2], np.int32))]
    Package("ipu21", 2, rows, steps, [], []).save(path)
    return Package.load(path)


def test_ipu_as_assembles_a_package_tile_listing_row_by_row(tmp_path):
    package = two_row_package(tmp_path / "pkg")
    listing = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"), "--tile", "1"])
    assert listing.exit_code == 0, listing.output
    rows = ipu_as.assemble_rows(listing.output)
    assert [(base, words) for base, words, _ in rows] == [
        (address, [int(w) for w in words]) for address, words in package.tile_image(1)
    ]
    assert [base for base, _, _ in rows] == [0x4C000, 0x4C104]
    # joining the rows (the old behaviour) misplaces the second row's sendpicp
    joined = "\n".join(line for line in listing.output.splitlines() if "# row at" not in line)
    with pytest.raises(EncodeError, match="line .*not 8-byte aligned"):
        ipu_as.assemble(joined, 0x4C000)


def test_package_tile_round_trips_listing_words_listing(tmp_path):
    two_row_package(tmp_path / "pkg")
    for tile in (0, 1):
        listing = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"),
                                                  "--tile", str(tile)])
        assert listing.exit_code == 0, listing.output
        words = runner.invoke(ipu_as.app, [], input=listing.output)
        assert words.exit_code == 0, words.output
        assert words.output.count("# row at") == listing.output.count("# row at")
        again = runner.invoke(ipu_objdump.app, ["--file", "-"], input=words.output)
        assert again.exit_code == 0, again.output
        assert again.output == listing.output
        # and words -> listing -> words
        words_again = runner.invoke(ipu_as.app, [], input=again.output)
        assert words_again.output == words.output


def test_ipu_as_row_header_errors_name_the_line():
    with pytest.raises(AsmSyntaxError, match="line 3: the row at 0x4c008 has no instructions"):
        ipu_as.assemble_rows("# row at 0x4c000: 1 words\ndelay 0\n# row at 0x4c008: 1 words\n")
    with pytest.raises(AsmSyntaxError, match="line 1: row address 0x4c002 is not 4-byte aligned"):
        ipu_as.assemble_rows("# row at 0x4c002: 1 words\ndelay 0\n")
    with pytest.raises(EncodeError, match="line 5: sendpicp .* byte address 0x4c00c"):
        ipu_as.assemble_rows("# row at 0x4c000: 1 words\ndelay 0\n# row at 0x4c008: 3 words\n"
                             "delay 0\nsendpicp 0, 0, 0, 0, xpic = 1, pic = 2\n")
    two = "# row at 0x0: 1 words\ndelay 0\n# row at 0x8: 1 words\ndelay 1\n"
    result = runner.invoke(ipu_as.app, ["--address", "0x4c000"], input=two)
    assert result.exit_code == 1 and "cannot place 2 rows" in result.output


@pytest.mark.parametrize(
    "text, line, message",
    [
        ("delay 0\nsend 042, 0, 1\n", 2, "operand 'words_m1' is not an integer: '042'"),
        ("delay 0\ndelay 0\ndelay 0x80000\n", 3, "field 'events_m1' = 524288 is out of range"),
        ("send 1, 2\n", 1, "send takes 3 operands"),
        ("# c\nsendpicp 0, 0, 0, 0, xpic 1, pic = 2\n", 2, "expected 'xpic = <integer>'"),
    ],
)
def test_every_ipu_as_error_names_its_line(text, line, message):
    result = runner.invoke(ipu_as.app, [], input=text)
    assert result.exit_code == 1
    assert result.output.startswith(f"ipu-as: line {line}: ") and message in result.output


# ---- ipu-objdump command-line diagnostics -----------------------------------------------
@pytest.mark.parametrize("tile", ["2", "9", "-1"])
def test_objdump_tile_outside_the_package_is_a_usage_error(tmp_path, tile):
    two_row_package(tmp_path / "pkg")
    result = runner.invoke(ipu_objdump.app, ["--package", str(tmp_path / "pkg"), "--tile", tile])
    assert result.exit_code == 2
    assert f"--tile {tile} is outside the package" in result.output
    assert "which has 2 tiles (0 .. 1)" in result.output


@pytest.mark.parametrize("address,message", [
    ("0x4c002", "--address: row address 0x4c002 is not a 4-byte aligned byte address"),
    ("-4", "--address: row address -0x4 is not a 4-byte aligned byte address"),
    ("x1", "--address 'x1' is not an integer"),
])
def test_ipu_as_address_follows_the_objdump_rules(address, message):
    result = runner.invoke(ipu_as.app, ["--address", address], input="delay 0\n")
    assert result.exit_code == 2
    assert result.output == f"ipu-as: {message}\n"


@pytest.mark.parametrize("address", ["0x4c002", "0x4c001", "-4"])
def test_objdump_rejects_a_misaligned_row_address(address):
    result = runner.invoke(ipu_objdump.app, ["--address", address, "40a00000"])
    assert result.exit_code == 2
    assert "is not a 4-byte aligned byte address" in result.output


def test_objdump_exits_non_zero_on_a_row_without_a_valid_timeline():
    result = runner.invoke(ipu_objdump.app, ["70000000"])
    assert result.exit_code == 1
    assert "0x00000000: 70000000           sendoff 0, 0x0, 0" in result.output  # still listed
    assert "# timeline error: sendoff 0, 0x0, 0 at event 0" in result.output
    assert ("ipu-objdump: row at 0x0: timeline error: sendoff 0, 0x0, 0 at event 0: sendoff "
            "continues the outgoing stream but no send has started one") in result.output
    # PIC selector 1 decodes (the ISA holds it) but has no defined meaning
    result = runner.invoke(ipu_objdump.app, ["f8000000", "00000000"])
    assert result.exit_code == 1
    assert "sendpicp 0, 0x0, 0, 1, xpic = 0x0, pic = 0x0" in result.output
    assert "PIC selector 1 is not supported" in result.output


# ---- the dialect prints and builds the same instructions --------------------------------
def parse_module(text: str) -> ModuleOp:
    ctx = make_context()
    return Parser(ctx, text).parse_module()


def test_row_op_instructions_and_encoding():
    row = RowOp("rx", SDK_RECEIVER_INSTRS, address=0x4C000, provenance="spec example")
    row.verify()
    assert row.instructions() == SDK_RECEIVER_INSTRS
    assert row.encode() == SDK_RECEIVER_ROW
    module = parse_module(str(ModuleOp([row])))
    (parsed,) = module.ops
    assert isinstance(parsed, RowOp) and parsed.instructions() == SDK_RECEIVER_INSTRS


def test_op_from_isa_and_to_isa_are_inverse():
    for instr in [*SDK_RECEIVER_INSTRS, Send(1, 2, 3), SendPic(3, 2, 0x100), DelayXpic(4, 1, 5)]:
        op = op_from_isa(instr)
        op.verify()
        assert op.to_isa() == instr


def test_assembly_printer_emits_the_spec_text_form():
    row = RowOp("rx", SDK_RECEIVER_INSTRS, address=0x4C000, provenance="spec example")
    out = StringIO()
    AssemblyPrinter(stream=out).print_module(ModuleOp([row]))
    text = out.getvalue()
    assert text.splitlines()[0].startswith("rx:") and "address 0x4c000; spec example" in text
    assert "    sendpicp 57, 0x0, 0, 0, xpic = 0x640, pic = 0x17000" in text
    assert "# f7200000 19017000" in text
    assert ipu_as.assemble(text, 0x4C000) == SDK_RECEIVER_ROW


def test_row_verifier_rejects_misaligned_sendpicp():
    row = RowOp("r", [Delay(0), SendPicP(0, 0, 1, 0, 1, 2)], address=0x4C000)
    with pytest.raises(VerifyException, match="not 8-byte aligned"):
        row.verify()


def test_instruction_verifier_names_op_field_value_and_range():
    with pytest.raises(VerifyException,
                       match=r"exchange.sendpicp: field 'xpic' = 16384 is out of range \[0, 16383\]"):
        SendPicPOp(0, 0, 1, 0, 0x4000, 0).verify()


def test_assembling_an_input_without_instructions_is_an_error():
    from tools.ipu_as import assemble

    # e.g. the `.exchange_rows` section of -t ipu-asm: labels and `.word` directives only
    with pytest.raises(AsmSyntaxError, match="no exchange instructions in the input"):
        assemble(".Lx0_send.0:\n    .word 0x7febc041  # send 63, 0x17808, 1\n")


def test_non_utf8_input_is_a_diagnostic(tmp_path):
    path = tmp_path / "bad.s"
    path.write_bytes(b"delay 0\n\xff\n")
    result = runner.invoke(ipu_as.app, [str(path)])
    assert result.exit_code == 1 and "ipu-as: the input is not UTF-8 text" in result.output
    result = runner.invoke(ipu_objdump.app, ["--file", str(path)])
    assert result.exit_code == 1 and "can't decode byte 0xff" in result.output


@pytest.mark.parametrize("text, message", [
    ("# only a comment\n", "no exchange instructions in the input (labels, directives and comments "
                           "alone assemble to nothing)"),
    ("delay 0\n# row at 0x4c008: 1 words\ndelay 1\n", "the input has 2 rows; use assemble_rows"),
])
def test_assemble_rejects_inputs_without_exactly_one_row(text, message):
    with pytest.raises(AsmSyntaxError) as info:
        ipu_as.assemble(text)
    assert str(info.value) == message


def test_objdump_tile_without_package_is_a_usage_error():
    result = CliRunner().invoke(ipu_objdump.app, ["--tile", "0", "00000000"])
    assert result.exit_code != 0
    assert "--tile needs --package" in result.output


def test_objdump_names_64_bit_items_and_the_pair_mux():
    row = [Send(3, 0x100, 5), Delay(0), SendPicP(0, 0, 0, 0, 1 << 13 | 2, 0x200)]
    listing, error = ipu_objdump.disassemble(encode(row, 0x4C000), 0x4C000)
    assert error is None
    assert "# events [0, 4); sends 8 words as 4 64-bit items from 0x100 dir 1" in listing
    assert "XPIC=2 (pair mux) at 5; PIC=0x200 at 5" in listing
    assert ipu_as.assemble(listing) == encode(row, 0x4C000)
