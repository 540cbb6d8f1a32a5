"""ipu-objdump / ipu-as: round trips, package input, dialect printing of the same text form."""

from io import StringIO

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner
from xdsl.backend.assembly_printer import AssemblyPrinter
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from device.isa import Delay, DelayXpic, Send, SendPic, SendPicP, encode
from device.package import ExchangeStep, Package
from ipu_dialects import get_all_dialects
from ipu_dialects.exchange import RowOp, SendPicPOp, op_from_isa
from test_isa import INSTRUCTIONS, SDK_RECEIVER_INSTRS, SDK_RECEIVER_ROW, aligned_row
from tools import ipu_as, ipu_objdump

runner = CliRunner()


@settings(max_examples=100, deadline=None)
@given(st.lists(INSTRUCTIONS, min_size=1, max_size=10), st.integers(0, 64).map(lambda k: 0x4C000 + 8 * k))
def test_assemble_disassemble_round_trip(instrs, base):
    words = encode(aligned_row(instrs), base)
    listing, error = ipu_objdump.disassemble(words, base)
    assert error is None
    assert ipu_as.assemble(listing) == words  # the listing's first address is the base


def test_cli_round_trip_of_the_sdk_receiver_row():
    dumped = runner.invoke(ipu_objdump.app, [f"{w:08x}" for w in SDK_RECEIVER_ROW])
    assert dumped.exit_code == 0, dumped.output
    assert "sendpicp 57, 0x0, 0, 0, xpic = 0x640, pic = 0x17000" in dumped.output
    assert "events [208, 266); XPIC=1600 at 208; PIC=0x17000 at 208" in dumped.output
    assembled = runner.invoke(ipu_as.app, [], input=dumped.output)
    assert assembled.exit_code == 0, assembled.output
    assert [int(w, 16) for w in assembled.output.split()] == SDK_RECEIVER_ROW


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


def test_objdump_file_input_and_usage_errors(tmp_path):
    path = tmp_path / "row.hex"
    path.write_text("# the SDK sendpicp\nf54a0109 0x19015000\n")
    result = runner.invoke(ipu_objdump.app, ["--file", str(path)])
    assert result.exit_code == 0 and "sendpicp 42, 0x14021, 1, 0" in result.output
    result = runner.invoke(ipu_objdump.app, ["zz"])
    assert result.exit_code == 1 and "'zz' is not a hexadecimal word" in result.output
    result = runner.invoke(ipu_objdump.app, [])
    assert result.exit_code == 1 and "give exactly one of" in result.output


# ---- the dialect prints and builds the same instructions --------------------------------
def parse_module(text: str) -> ModuleOp:
    ctx = Context()
    for name, factory in get_all_dialects().items():
        ctx.register_dialect(name, factory)
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
    from device.isa import AsmSyntaxError
    from tools.ipu_as import assemble

    # e.g. the `.exchange_rows` section of -t ipu-asm: labels and `.word` directives only
    with pytest.raises(AsmSyntaxError, match="no exchange instructions in the input"):
        assemble(".Lx0_send.0:\n    .word 0x7febc041  # send 63, 0x17808, 1\n")
