"""Issue 25, untrusted input (second pass): one test per defect, each a wrong verdict, a
traceback, a resource bomb or an unsafe output that the tools must now refuse or handle.

Packages are built once per module (an FP16 GEMM on 4 tiles, the FP8 MLP example on 4
tiles) and copied where a test changes them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from tools import ipu_run
from tools.ipu_run import run_main

ROOT = Path(__file__).resolve().parents[2]
GEMM = (
    "func.func @gemm(%a: tensor<64x128xf16>, %b: tensor<128x64xf16>) -> tensor<64x64xf16> {\n"
    "  %c = graph.gemm %a, %b : (tensor<64x128xf16>, tensor<128x64xf16>) -> tensor<64x64xf16>\n"
    "  func.return %c : tensor<64x64xf16>\n}\n")


def run_cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(ipu_run.app, [str(a) for a in args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def gemm_base(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("gemm")
    source = directory / "gemm.mlir"
    source.write_text(GEMM)
    assert run_main(source, tiles=4, package_dir=directory / "pkg") == 0
    return directory / "pkg"


@pytest.fixture
def gemm_package(gemm_base, tmp_path) -> Path:
    copy = tmp_path / "pkg"
    shutil.copytree(gemm_base, copy)
    return copy


# ---- 1: a package run honours --inputs, and refuses what it cannot honour ---------------------


def test_package_run_reads_inputs_archive(gemm_package, tmp_path):
    archive = tmp_path / "inputs.npz"
    np.savez(archive, a=np.zeros((64, 128), np.float16))
    status, output = run_cli(gemm_package, "--inputs", archive, "--save-outputs", tmp_path / "out")
    assert status == 0, output
    result = np.load(tmp_path / "out" / "result0.npy", allow_pickle=False)
    assert not result.any()  # a @ b with a = 0: the archive's array was used


def test_package_run_with_a_bogus_inputs_file_is_a_usage_error(gemm_package, tmp_path):
    bogus = tmp_path / "bogus.npz"
    bogus.write_bytes(b"not an archive")
    status, output = run_cli(gemm_package, "--inputs", bogus)
    assert status == 2 and "--inputs: cannot read" in output
    np.savez(bogus, nosuch=np.zeros(3))
    status, output = run_cli(gemm_package, "--inputs", bogus)
    assert status == 2 and "the function has no argument 'nosuch'" in output


@pytest.mark.parametrize("option", [["--report", "REPORT"], ["--tiles", "16"], ["--quiet", "--reference"],
                                    ["--indivisible", "pad"], ["--gemm-partials", "f32"]])
def test_package_run_refuses_options_it_cannot_honour(gemm_package, tmp_path, option):
    """Even at their default values: a flag given is a flag the user expects to matter."""
    args = [str(tmp_path / a) if a == "REPORT" else a for a in option]
    status, output = run_cli(gemm_package, *args)
    assert status == 2, output
    assert "only for a .mlir file; a package is already compiled" in output
    assert not (tmp_path / "REPORT").exists()


# ---- 2: an FP8 package is fed values and judged on q, as its .mlir run is ----------------------


@pytest.fixture(scope="module")
def fp8_base(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("fp8")
    assert run_main(ROOT / "examples" / "fp8_mlp.mlir", tiles=4, package_dir=directory / "pkg") == 0
    return directory / "pkg"


def test_an_fp8_package_passes_as_its_source_does(fp8_base, tmp_path):
    status, output = run_cli(fp8_base, "--save-outputs", tmp_path / "pkg")
    assert status == 0 and "check: PASS" in output, output
    assert run_main(ROOT / "examples" / "fp8_mlp.mlir", tiles=4, save_dir=tmp_path / "mlir") == 0
    np.testing.assert_array_equal(np.load(tmp_path / "pkg" / "result0.npy"),
                                  np.load(tmp_path / "mlir" / "result0.npy"))


# ---- 6: the package check reads the element types the package holds -----------------------------


def test_a_source_naming_another_element_type_is_refused(tmp_path):
    """An f32 package whose source.mlir says f16 would be judged with f16's tolerance."""
    source = tmp_path / "gemm32.mlir"
    source.write_text(GEMM.replace("f16", "f32"))
    assert run_main(source, tiles=4, package_dir=tmp_path / "pkg") == 0
    (tmp_path / "pkg" / "source.mlir").write_text(GEMM)
    status, output = run_cli(tmp_path / "pkg")
    assert status == 2, output
    assert "inputs[0].precision: 'f32' is not the source function's f16" in output


def test_a_source_naming_another_fp8_scale_is_refused(fp8_base, tmp_path):
    shutil.copytree(fp8_base, tmp_path / "pkg")
    source = tmp_path / "pkg" / "source.mlir"
    source.write_text(source.read_text().replace("#graph.fp8_scale<-3>", "#graph.fp8_scale<-2>"))
    status, output = run_cli(tmp_path / "pkg")
    assert status == 2, output
    assert "outputs[0].scale: -3 is not the source function's FP8 scale -2" in output


def test_every_example_package_matches_its_source(tmp_path):
    from tools.run_package import load_checked

    for example in ("gemm_f16", "gemm_f32_batched", "mlp_f16", "fp8_mlp", "nested_repeat_f16"):
        assert run_main(ROOT / "examples" / f"{example}.mlir", tiles=4,
                        package_dir=tmp_path / example, reference=False) == 0
        load_checked(tmp_path / example)


# ---- 4: rows read at the exchange level are checked against their schedule ---------------------


@pytest.fixture(scope="module")
def scheduled_gemm() -> str:
    """The example f16 GEMM after ipu-pipeline on 2 tiles, as ipu-opt prints it (its loop over
    K has rows with per-iteration patches)."""
    import io

    from xdsl.printer import Printer

    from passes.ipu_pipeline import IpuPipelinePass
    from tools.ipu_run import make_context
    from tools.source_locations import parse_located_module

    example = ROOT / "examples" / "gemm_f16.mlir"
    module = parse_located_module(make_context(), example.read_text(), str(example))
    IpuPipelinePass(tiles=2).apply(make_context(), module)
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def ipu_opt(capsys, path, *args) -> tuple[int, str, str]:
    from tools.ipu_opt import IpuOptMain

    try:
        IpuOptMain(args=[str(path), *args]).run()
        code = 0
    except SystemExit as exited:
        code = exited.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def unpatched_send(text: str) -> tuple[str, str]:
    """An `exchange.send` line of a row no #tile.patch changes, and that line with its source
    address one word on."""
    import re

    patched = set(re.findall(r"#tile.patch<@(\w+), 0, \"address\"", text))
    for row, body in re.findall(r"exchange.row @(\w+) [^{]*\{\n(.*?)\n  \}", text, re.S):
        if row in patched:
            continue
        if match := re.search(r"exchange.send (\d+), (0x[0-9a-f]+), (\d+)", body):
            address = int(match.group(2), 16)
            return match.group(0), match.group(0).replace(match.group(2), hex(address + 4))
    raise AssertionError("no unpatched send")


@pytest.mark.parametrize("emitter", ["ipu-rows", "ipu-asm"])
def test_an_edited_send_address_is_refused_before_emitting(scheduled_gemm, tmp_path, capsys, emitter):
    line, edited = unpatched_send(scheduled_gemm)
    path = tmp_path / "edited.mlir"
    path.write_text(scheduled_gemm.replace(line, edited, 1))
    code, out, err = ipu_opt(capsys, path, "-t", emitter)
    assert code == 1 and out == "", err
    assert "error: package: tile.exchange (graph.gemm %c %b): row @" in err
    assert "sends source word" in err and "but the schedule sends word" in err
    path.write_text(scheduled_gemm)  # unedited, the same text emits
    code, out, err = ipu_opt(capsys, path, "-t", emitter)
    assert code == 0 and out, err


def test_an_edited_patch_value_is_refused(scheduled_gemm, tmp_path, capsys):
    import re

    match = re.search(r"(#tile.patch<@\w+, 0, \"address\", array<i64: )(\d+)", scheduled_gemm)
    assert match is not None
    text = scheduled_gemm.replace(match.group(0), match.group(1) + str(int(match.group(2)) + 4), 1)
    path = tmp_path / "edited.mlir"
    path.write_text(text)
    code, _, err = ipu_opt(capsys, path, "-t", "ipu-rows")
    assert code == 1 and "in (iteration, group) 0: event 0:" in err, err


def test_a_delay_shortened_by_one_event_is_refused(scheduled_gemm, tmp_path, capsys):
    import re

    match = re.search(r"exchange.delay (\d+)", scheduled_gemm)
    assert match is not None
    path = tmp_path / "edited.mlir"
    path.write_text(scheduled_gemm.replace(match.group(0), f"exchange.delay {int(match.group(1)) - 1}", 1))
    code, _, err = ipu_opt(capsys, path, "-t", "ipu-rows")
    assert code == 1 and "but the schedule spans" in err, err


def test_rows_changed_after_schedule_exchange_in_process_are_checked(scheduled_gemm):
    """The in-memory record of checked rows holds only while nothing they derive from changes."""
    from xdsl.dialects.builtin import IntegerAttr, i64
    from xdsl.utils.exceptions import PassFailedException

    from ipu_dialects.tile import BufferOp
    from passes.ipu_pipeline import IpuPipelinePass
    from tools.ipu_run import make_context
    from tools.package_writer import build_package
    from tools.source_locations import parse_located_module

    module = parse_located_module(make_context(), GEMM, "gemm.mlir")
    IpuPipelinePass(tiles=2).apply(make_context(), module)
    build_package(module, with_assembly=False)
    buffer = next(b for b in module.walk() if isinstance(b, BufferOp) and b.sym_name.data == "b")
    buffer.properties["address"] = IntegerAttr(buffer.address_value + 8, i64)
    with pytest.raises(PassFailedException, match="sends source word"):
        build_package(module, with_assembly=False)


def scheduled_exchanges(text: str):
    """`text` parsed, and its `tile.exchange`s (parsed text: none is recorded as checked, so
    the package writer rechecks each one's rows)."""
    from xdsl.parser import Parser

    from ipu_dialects.tile import ExchangeOp
    from tools.ipu_run import make_context

    module = Parser(make_context(), text).parse_module()
    return module, [op for op in module.walk() if isinstance(op, ExchangeOp)]


def recheck_failure(module) -> str:
    from xdsl.utils.exceptions import PassFailedException

    from tools.package_writer import build_package

    with pytest.raises(PassFailedException) as failure:
        build_package(module, with_assembly=False)
    message = str(failure.value)
    assert message.startswith("package: tile.exchange (graph.gemm %c %b): "), message
    assert message.endswith("the exchange rows are not the ones its schedule needs (edited by "
                            "hand? schedule-exchange builds them)"), message
    return message


def test_rows_edited_in_process_past_the_verifier_are_rechecked(scheduled_gemm):
    """What the `tile.exchange` verifier refuses in text (a row no exchange.row defines, a
    schedule of the wrong length for its loops) the package writer still refuses when a
    Python flow edits a verified module; what `#tile.schedule` alone refuses (selections or
    a patch of different lengths) a Python flow cannot build at all."""
    from xdsl.dialects.builtin import ArrayAttr, SymbolRefAttr, i32
    from xdsl.utils.exceptions import VerifyException

    from ipu_dialects.shared_attrs import dense_ints
    from ipu_dialects.tile import RowPatchAttr

    def renamed(patch, row):
        return RowPatchAttr(row, patch.instruction.data, patch.field.data, patch.value_list())

    def shortened(patch):
        return RowPatchAttr(patch.row_name, patch.instruction.data, patch.field.data,
                            patch.value_list()[:-1])

    module, exchanges = scheduled_exchanges(scheduled_gemm)
    schedule = exchanges[0].schedule
    assert schedule is not None and schedule.row_symbols == ["x0_send", "x0_receive"]
    exchanges[0].properties["schedule"] = schedule.changed(
        rows=ArrayAttr([SymbolRefAttr("x0_send"), SymbolRefAttr("x9")]),
        patches=ArrayAttr([renamed(p, "x9") if p.row_name == "x0_receive" else p
                           for p in schedule.patches.data]))
    assert "no exchange.row @x9;" in recheck_failure(module)

    module, exchanges = scheduled_exchanges(scheduled_gemm)
    looped = next(op for op in exchanges
                  if op.schedule is not None and op.schedule.entry_count == 4)
    schedule = looped.schedule
    assert schedule is not None
    with pytest.raises(VerifyException, match="sender_rows has 3 entries and receiver_rows 4"):
        schedule.changed(sender_rows=dense_ints(i32, schedule.senders[:3]))
    looped.properties["schedule"] = schedule.changed(
        sender_rows=dense_ints(i32, schedule.senders[:3]),
        receiver_rows=dense_ints(i32, schedule.receivers[:3]),
        patches=ArrayAttr([shortened(p) for p in schedule.patches.data]))
    assert ("sender_rows and receiver_rows have 3 entries for 4 (iteration, group)s"
            in recheck_failure(module))

    module, exchanges = scheduled_exchanges(scheduled_gemm)
    looped = next(op for op in exchanges if op.schedule is not None and op.schedule.patches.data)
    schedule = looped.schedule
    assert schedule is not None
    first, *rest = schedule.patches.data
    with pytest.raises(VerifyException, match=(
            f"#tile.schedule: the patch of @{first.row_name} instruction "
            f"{first.instruction.data} field '{first.field.data}' has "
            f"{len(first.values) - 1} values, but sender_rows has {len(first.values)} entries")):
        schedule.changed(patches=ArrayAttr([shortened(first), *rest]))


def test_an_exchange_without_traffic_given_rows_is_refused(tmp_path, capsys):
    """On 2 tiles the one output-row tile already holds columns 0 and 1 of B: those iterations
    move nothing (-1 in sender_rows/receiver_rows). Given rows, or traffic given no rows,
    the package writer refuses the exchange."""
    import io
    import re

    from xdsl.printer import Printer

    from passes.ipu_pipeline import IpuPipelinePass
    from tools.ipu_run import make_context
    from tools.source_locations import parse_located_module

    text = GEMM.replace("64x128", "16x128").replace("128x64", "128x256").replace(
        "64x64", "16x256")
    module = parse_located_module(make_context(), text, "gemm.mlir")
    IpuPipelinePass(tiles=2, catalog=("amp_gemm_f16_r16",)).apply(make_context(), module)
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    scheduled = stream.getvalue()
    match = re.search(r"sender_rows = \[-1, -1, 0, 0\], receiver_rows = \[-1, -1, 1, 1\]",
                      scheduled)
    assert match is not None, scheduled
    for rows, error in (
        ("sender_rows = [0, -1, 0, 0], receiver_rows = [1, -1, 1, 1]",
         "(iteration, group) 0 has no receiver, but rows to run"),
        ("sender_rows = [-1, -1, -1, 0], receiver_rows = [-1, -1, -1, 1]",
         "(iteration, group) 2 sends to 1 tile(s) but its row indices (-1, -1) are not rows "
         "of the exchange"),
    ):
        path = tmp_path / "edited.mlir"
        path.write_text(scheduled.replace(match.group(0), rows, 1))
        code, out, err = ipu_opt(capsys, path, "-t", "ipu-rows")
        assert code == 1 and out == "" and error in err, err


# ---- 5: tracebacks ----------------------------------------------------------------------------


def write_deep_repeat(path: Path, depth: int) -> Path:
    t = "tensor<16x16xf16>"
    lines = [f"func.func @deep(%x0: {t}, %w: {t}) -> {t} {{"]
    previous = "%x0"
    for d in range(depth):
        weight = "%w" if d == 0 else f"%w{d - 1}"
        lines.append(f"%r{d} = graph.repeat 1 carried(%c{d} = {previous} : {t}) "
                     f"invariant(%w{d} = {weight} : {t}) {{")
        previous = f"%c{d}"
    lines += [f"%y = graph.gemm {previous}, %w{depth - 1} : ({t}, {t}) -> {t}", f"graph.yield %y : {t}"]
    for d in reversed(range(depth)):
        if d < depth - 1:
            lines.append(f"graph.yield %r{d + 1} : {t}")
        lines.append(f"}} -> {t}")
    lines += [f"func.return %r0 : {t}", "}"]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("old, new, messages", [
    ("64 x 1 pad], replication = 1, group = 2, interleaved",
     "64 x 1 pad, 1 x 1 pad], replication = 1, group = 2, interleaved",
     ["@c: the format of tensor<256x192xf16", "has 3 blocks for a rank-2 tensor"]),
    ("tail 16", "tail 4294967295",
     ["@a: 81920 bytes and an access tail of 4294967295 exceed the 638976 bytes of tile memory"]),
    # @a's 81920 bytes placed 32 KiB before the end of tile memory
    ("address 0x54000", "address 0xe0000",
     ["@a: [0xe0000, 0xf4010) (with its access tail) is outside tile memory [0x4c000, 0xe8000)"]),
])
def test_tile_buffers_the_writer_cannot_use_are_verifier_errors(scheduled_gemm, tmp_path, capsys,
                                                                 old, new, messages):
    assert old in scheduled_gemm
    path = tmp_path / "edited.mlir"
    path.write_text(scheduled_gemm.replace(old, new, 1))
    code, _, err = ipu_opt(capsys, path, "-t", "ipu-rows")
    assert code == 1 and "error: tile.buffer @" in err, err
    assert all(message in err for message in messages), err


def test_a_repeat_nest_deeper_than_numpy_dimensions(tmp_path):
    path = write_deep_repeat(tmp_path / "deep.mlir", 33)
    status, output = run_cli(path, "--tiles", "2")
    assert status == 0 and "check: PASS" in output, output


@pytest.mark.parametrize("text, message", [
    ("repeat150", "brackets nested more than 128 deep (MAX_NESTING, device/limits.py)"),
    ("func.func @f() attributes {x = " + "[" * 5000 + "]" * 5000 + "} {\n  func.return\n}\n",
     "brackets nested more than 128 deep"),
])
def test_deep_nesting_is_a_parse_error(tmp_path, capsys, text, message):
    path = tmp_path / "deep.mlir"
    if text == "repeat150":
        write_deep_repeat(path, 150)
    else:
        path.write_text(text)
    code, _, err = ipu_opt(capsys, path)
    assert code == 1 and message in err and "Traceback" not in err, err[-2000:]
    status, output = run_cli(path, "--reference")
    assert status == 2 and message in output


def test_an_npy_header_claiming_1e12_elements(tmp_path):
    (tmp_path / "gemm.mlir").write_text(GEMM)
    header = {"descr": "<f2", "fortran_order": False, "shape": (1000000, 1000000)}
    with open(tmp_path / "a.npy", "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, header)
    status, output = run_cli(tmp_path / "gemm.mlir", "--reference", "--input", f"a={tmp_path / 'a.npy'}")
    assert status == 2 and "shape (1000000, 1000000) does not match the argument's (64, 128)" in output


def onnx_model_with(initializer):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y],
                              initializer=[initializer])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("initializer", [
    dict(name="w", data_type=99, dims=[2, 2]),  # KeyError in numpy_helper
    dict(name="w", data_type=1, dims=[2, 2]),  # dims without data: ValueError
])
def test_ipu_import_malformed_initializers(tmp_path, capsys, initializer):
    import onnx

    from tools.ipu_import import import_main

    path = tmp_path / "m.onnx"
    onnx.save(onnx_model_with(onnx.TensorProto(**initializer)), str(path))
    assert import_main(path, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert "the ONNX checker refuses the model: TensorProto (tensor name: w)" in err, err
    assert not (tmp_path / "out").exists()


# ---- 8: ipu-import runs the ONNX checker first ----------------------------------------------------


def test_ipu_import_refuses_what_the_onnx_checker_refuses(tmp_path, capsys):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from tools.ipu_import import import_main

    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    w2 = numpy_helper.from_array(np.zeros((2, 2), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    add = helper.make_node("Add", ["x", "w"], ["y"])
    cases = {
        "initializer name is not unique": helper.make_graph([add], "g", [x], [y], [w, w2]),
        "'y' has been used as output names multiple times": helper.make_graph([add, add], "g", [x], [y], [w]),
        "'x' has been used as graph input names multiple times": helper.make_graph([add], "g", [x, x], [y], [w]),
    }
    for n, (message, graph) in enumerate(cases.items()):
        path = tmp_path / f"m{n}.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
        assert import_main(path, tmp_path / f"out{n}") == 2
        assert message in capsys.readouterr().err
    (tmp_path / "empty.onnx").write_bytes(b"")
    assert import_main(tmp_path / "empty.onnx", tmp_path / "out") == 2
    assert "does not have an ir_version set properly" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


# ---- 3: resource bombs: refused before the work, naming the bound ----------------------------------


def test_a_dense_splat_claiming_a_billion_elements(tmp_path, capsys):
    path = tmp_path / "splat.mlir"
    path.write_text('func.func @f() attributes {x = dense<1> : tensor<1000000000xi8>} {\n'
                    '  func.return\n}\n')
    code, _, err = ipu_opt(capsys, path)
    assert code == 1 and "dense attribute of 1000000000 elements" in err
    assert "MAX_DENSE_ELEMENTS" in err


def loop_around_program(directory: Path, *counts: int) -> None:
    import json
    import re

    meta = json.loads((directory / "metadata.json").read_text())
    for count in counts:
        steps = meta["steps"]
        meta["steps"] = [{"kind": "loop", "count": count, "length": len(steps),
                          "provenance": ""}, *steps]
    (directory / "metadata.json").write_text(json.dumps(meta))
    with np.load(directory / "program.npz", allow_pickle=False) as archive:  # steps renumbered
        arrays = {re.sub(r"^step(\d+)_", lambda m: f"step{int(m[1]) + len(counts)}_", k): archive[k]
                  for k in archive.files}
    for name, pointers in list(arrays.items()):  # a kernel in loops has a stride per loop
        if match := re.fullmatch(r"step(\d+)_pointers", name):
            arrays[f"step{match[1]}_pointer_strides"] = np.zeros(
                (len(counts), pointers.shape[1]), np.int64)
    np.savez_compressed(directory / "program.npz", **arrays)


def test_a_package_looping_a_trillion_times(gemm_package):
    import re
    import time

    from device.package import Package, PackageError

    loop_around_program(gemm_package, 1 << 20, 1 << 20)
    started = time.perf_counter()
    with pytest.raises(PackageError, match=re.escape(
            " s: MAX_MODEL_SECONDS, device/limits.py; ipu-run --max-model-seconds raises it")):
        Package.load(gemm_package)
    assert time.perf_counter() - started < 10
    status, output = run_cli(gemm_package)
    assert status == 2 and "MAX_MODEL_SECONDS" in output and "Traceback" not in output


def test_max_model_seconds_bounds_a_package_run_only(gemm_package, tmp_path):
    loop_around_program(gemm_package, 1 << 12)  # a minute of model time: under the default
    status, output = run_cli(gemm_package, "--max-model-seconds", "1")
    assert status == 2 and "(at most 1 s: MAX_MODEL_SECONDS" in output, output
    (tmp_path / "gemm.mlir").write_text(GEMM)
    status, output = run_cli(tmp_path / "gemm.mlir", "--max-model-seconds", "1")
    assert status == 2 and "only for a package directory" in output, output
    assert "; a program compiled in this run is not held to it)" in output


def repeat_text(count: int, shape: str = "16x16") -> str:
    t = f"tensor<{shape}xf16>"
    return (f"func.func @r(%x: {t}, %w: {t}) -> {t} {{\n"
            f"  %r = graph.repeat {count} carried(%c = %x : {t}) invariant(%v = %w : {t}) {{\n"
            f"    %y = graph.gemm %c, %v : ({t}, {t}) -> {t}\n"
            f"    graph.yield %y : {t}\n"
            f"  }} -> {t}\n"
            f"  func.return %r : {t}\n}}\n")


def test_a_repeat_of_a_billion_is_refused_by_the_reference_and_the_compiler(tmp_path, capsys):
    import time

    path = tmp_path / "bomb.mlir"
    path.write_text(repeat_text(1000000000))
    started = time.perf_counter()
    status, output = run_cli(path, "--tiles", "2")
    assert status == 2 and "the iterations of a device loop: MAX_REPEAT_COUNT, device/limits.py" in output, output
    code, _, err = ipu_opt(capsys, path, "-p", "ipu-pipeline{tiles=2}", "-t", "ipu-rows")
    assert code == 1 and "MAX_LOOP_COUNT" in err and "Traceback" not in err, err[-2000:]
    assert time.perf_counter() - started < 10


def test_a_program_executing_more_than_2_15_steps_compiles_and_loads(tmp_path):
    """Real models execute tens of thousands of steps (a 12-layer stack): a package compiled
    here is not bounded by a step count, and loading it back is bounded by model time only."""
    from device.package import Package, executed_count
    from tools.ipu_run import compile_module
    from tools.run_io import parse_module

    path = tmp_path / "long.mlir"
    path.write_text(repeat_text(40000))
    status, output = run_cli(path, "--tiles", "2", "--reference")  # the reference runs it
    assert status == 0, output
    package = compile_module(parse_module(path), 2, "pad", with_assembly=False)
    executed = executed_count(package.steps)
    assert executed > 40000
    loaded = Package.load(package.save(tmp_path / "pkg"))
    assert executed_count(loaded.steps) == executed


def many_adds(count: int) -> str:
    """`count` adds of 2**27 elements: each tensor within every bound, their float64 values
    together 8 GiB and more."""
    t = "tensor<16384x8192xf16>"
    lines = [f"func.func @m(%x0: {t}) -> {t} {{"]
    lines += [f"  %x{i + 1} = graph.add %x{i}, %x{i} : ({t}, {t}) -> {t}" for i in range(count)]
    return "\n".join([*lines, f"  func.return %x{count} : {t}", "}", ""])


@pytest.mark.parametrize("text, message", [
    (repeat_text(200000, "128x128"),
     "element operations (every op once per repeat iteration; at most"),
    ("func.func @g(" + ", ".join(f"%a{i}: tensor<8192x16384xf16>" for i in range(40))
     + ") -> tensor<8192x16384xf16> {\n  func.return %a0 : tensor<8192x16384xf16>\n}\n",
     "bytes: MAX_ARGUMENT_BYTES, device/limits.py): they can never be on the device at once"),
    (many_adds(20), "MAX_REFERENCE_BYTES, device/limits.py"),
])
def test_reference_and_argument_bombs(tmp_path, text, message):
    import time

    path = tmp_path / "bomb.mlir"
    path.write_text(text)
    started = time.perf_counter()
    status, output = run_cli(path, "--reference")
    assert status == 2 and message in output and "Traceback" not in output, output
    assert time.perf_counter() - started < 10


def test_gelu_is_the_same_in_chunks():
    import math

    from device.numerics import CHUNK, gelu

    erf = np.vectorize(math.erf, otypes=[np.float64])  # the definition before chunking
    rng = np.random.default_rng(5)
    for shape in [(), (0,), (7,), (3, 5), (2, CHUNK + 3)]:
        x = rng.standard_normal(shape) * 4
        if x.size:
            x.flat[0], x.flat[-1] = -np.inf, np.inf
        with np.errstate(invalid="ignore"):
            before = 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
        before = np.where(np.isinf(x), np.maximum(x, 0.0), before)
        assert np.array_equal(gelu(x), before) and gelu(x).shape == np.shape(x)


def test_dev_zero_and_a_fifo_as_input_files(tmp_path):
    import os

    (tmp_path / "gemm.mlir").write_text(GEMM)
    os.mkfifo(tmp_path / "fifo")
    for source in ("/dev/zero", str(tmp_path / "fifo")):
        status, output = run_cli(tmp_path / "gemm.mlir", "--reference", "--input", f"a={source}")
        assert status == 2 and "not a regular file" in output, output


def test_an_npz_member_claiming_4_gib(tmp_path):
    """The member's size is read from the archive's directory, checked before decompressing."""
    import zipfile

    (tmp_path / "gemm.mlir").write_text(GEMM)
    with zipfile.ZipFile(tmp_path / "in.npz", "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("a.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(
                member, {"descr": "<f2", "fortran_order": False, "shape": (64, 128)})
            chunk = bytes(1 << 20)
            for _ in range(64):  # 64 MiB of zeros, ~64 KiB compressed
                member.write(chunk)
    status, output = run_cli(tmp_path / "gemm.mlir", "--reference", "--inputs", tmp_path / "in.npz")
    assert status == 2 and ("its 67108992 bytes exceed what an array of shape (64, 128) needs"
                            in output), output


# ---- 7: outputs: renamed into place, never through a symlink, nothing left on failure ------------


def test_outputs_never_follow_a_planted_symlink(tmp_path):
    (tmp_path / "gemm.mlir").write_text(GEMM)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "result0.npy").symlink_to(victim)
    status, output = run_cli(tmp_path / "gemm.mlir", "--reference", "--save-outputs", out)
    assert status == 0, output
    assert victim.read_text() == "keep me" and not (out / "result0.npy").is_symlink()
    (tmp_path / "linked").symlink_to(out)
    status, output = run_cli(tmp_path / "gemm.mlir", "--reference", "--save-outputs", tmp_path / "linked")
    assert status == 2 and "is a symbolic link" in output


def test_ipu_opt_keeps_the_output_file_when_parsing_fails(tmp_path, capsys):
    (tmp_path / "bad.mlir").write_text("func.func @f(\n")
    existing = tmp_path / "existing.mlir"
    existing.write_text("precious")
    code, _, _ = ipu_opt(capsys, tmp_path / "bad.mlir", "-o", str(existing))
    assert code == 1 and existing.read_text() == "precious"
    (tmp_path / "good.mlir").write_text(GEMM)
    code, _, _ = ipu_opt(capsys, tmp_path / "good.mlir", "-o", str(existing))
    assert code == 0 and "graph.gemm" in existing.read_text()


def test_a_failed_compile_leaves_no_output_directories(tmp_path):
    (tmp_path / "bad.mlir").write_text(GEMM)  # 99999 tiles: a compile diagnostic
    status, _ = run_cli(tmp_path / "bad.mlir", "--tiles", "99999", "--package", tmp_path / "pkg", "--save-outputs",
                        tmp_path / "out", "--report", tmp_path / "report")
    assert status == 2
    assert not any(p.exists() for p in (tmp_path / "pkg", tmp_path / "out", tmp_path / "report"))


def test_a_failed_package_save_is_a_diagnostic_and_leaves_nothing_half_written(tmp_path):
    (tmp_path / "gemm.mlir").write_text(GEMM)
    (tmp_path / "pkg" / "metadata.json").mkdir(parents=True)  # a directory in a file's place
    status, output = run_cli(tmp_path / "gemm.mlir", "--tiles", "4", "--package", tmp_path / "pkg")
    assert status == 2 and "--package: cannot write" in output, output
    assert sorted(p.name for p in (tmp_path / "pkg").iterdir()) == ["metadata.json"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_function_declaration_through_the_pipeline(tmp_path, capsys):
    """bench/robustness.py seed 2 found it: place-memory read the body block of a
    declaration (a ValueError traceback); a declaration has no buffers to place."""
    path = tmp_path / "declaration.mlir"
    path.write_text("func.func @g(%a: tensor<2x32x64xf32>) -> tensor<2x32x64xf32>\n")
    code, out, err = ipu_opt(capsys, path, "-p", "ipu-pipeline{tiles=2}")
    assert code == 0 and "func.func @g(tensor<2x32x64xf32>) -> tensor<2x32x64xf32>" in out, err
