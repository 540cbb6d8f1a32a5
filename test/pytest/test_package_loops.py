"""A structured repeat stays a loop in the package: depth costs neither IR, nor rows, nor
program steps, nor listing lines; the loop runs exactly the steps of the unrolled program."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from device.model.run import run_package
from device.package import (
    ExchangeStep,
    KernelStep,
    LoopStep,
    Package,
    PackageError,
    executed_count,
    flat_steps,
)
from device.target import IPU21
from passes.ipu_pipeline import IpuPipelinePass
from tools import package_writer
from tools.ipu_run import make_context
from tools.package_loops import loop_body
from tools.package_writer import build_package

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
from repeat_depth import compile_depth  # noqa: E402

# The loop tests below were written for the row plan's program: its repeat body has no loop
# of its own (a grid plan's panel loop would be kept as a nested loop, tested in
# test_gemm_grid.py) and runs enough steps that a 2^20-layer loop passes the step bound.
ROW_PLANS = ("amp_gemm_f32_r16", "amp_gemm_f32_r32", "amp_gemm_f32_r64")


def loop_program(depth: int):
    return compile_depth(depth, 4, ROW_PLANS)[1]


def compiled(path: str, tiles: int):
    ctx = make_context()
    module = Parser(ctx, (REPO / path).read_text(), path).parse_module()
    IpuPipelinePass(tiles=tiles).apply(ctx, module)
    return module


def loops_of(package: Package) -> list[LoopStep]:
    return [s for _, s in flat_steps(package.steps) if isinstance(s, LoopStep)]


def test_depth_changes_only_the_loop_count_and_sequence_addresses():
    small, large = (build_package(loop_program(depth)) for depth in (4, 48))
    assert [s.count for s in loops_of(small)] == [4]
    assert [s.count for s in loops_of(large)] == [48]
    assert len(small.steps) == len(large.steps) == 2
    assert len(small.rows) == len(large.rows)
    assert small.assembly.count("\n") == large.assembly.count("\n")
    assert executed_count(large.steps) - executed_count(small.steps) == 44 * executed_count(
        loops_of(small)[0].body)


def test_depth_does_not_grow_the_ir():
    texts = [str(compile_depth(depth, 4)[1]) for depth in (4, 480)]
    assert abs(len(texts[1]) - len(texts[0])) <= 0.01 * len(texts[0])
    assert "row_loops" in texts[0]  # the body's exchanges do not read the repeat's index


def executed_signature(package: Package) -> list[tuple]:
    signature = []
    for step in package.executed():
        if isinstance(step, ExchangeStep):
            signature.append(("x", step.row_address, tuple(step.row_id.tolist())))
        else:
            signature.append((step.symbol, tuple(step.tiles.tolist()),
                              tuple(map(tuple, step.pointers.tolist())), step.scalars))
    return signature


@pytest.mark.parametrize("path, tiles", [("examples/repeat_layers.mlir", 4),
                                         ("examples/nested_repeat_f16.mlir", 16)])
def test_a_kept_loop_runs_exactly_the_unrolled_steps(path, tiles, monkeypatch):
    module = compiled(path, tiles)
    folded = build_package(module, with_assembly=False)
    assert loops_of(folded), "the repeat is kept as a loop"
    monkeypatch.setattr(package_writer, "folds", lambda loop: False)
    unrolled = build_package(module, with_assembly=False)
    assert not loops_of(unrolled)
    assert executed_signature(folded) == executed_signature(unrolled)
    assert len(folded.rows) == len(unrolled.rows)


def test_nested_repeats_with_an_exchanged_weight_sequence_stay_loops():
    module = compiled("examples/nested_repeat_f16.mlir", 16)
    package = build_package(module, with_assembly=False)
    assert [s.count for s in loops_of(package)] == [3, 2]
    staging = [s for s in package.executed() if isinstance(s, KernelStep)
               and "that the exchange's rows are the same" in s.provenance]
    assert len(staging) == 3 * 2  # the inner sequence element, once per inner iteration


def small_loop_package(tmp_path: Path) -> Path:
    package = build_package(loop_program(4))
    return package.save(tmp_path / "pkg")


def test_a_saved_loop_loads_and_runs_the_same(tmp_path):
    directory = small_loop_package(tmp_path)
    package = build_package(loop_program(4))
    loaded = Package.load(directory)
    assert executed_signature(loaded) == executed_signature(package)
    rng = np.random.default_rng(0)
    inputs = {t.name: rng.standard_normal(t.shape).astype(np.float32) for t in package.inputs}
    a, b = run_package(package, inputs), run_package(loaded, inputs)
    assert a.cycles == b.cycles and not a.exchange_errors
    for x, y in zip(a.outputs.values(), b.outputs.values(), strict=True):
        np.testing.assert_array_equal(x, y)


def edit_metadata(directory: Path, edit) -> None:
    path = directory / "metadata.json"
    meta = json.loads(path.read_text())
    edit(meta)
    path.write_text(json.dumps(meta))


def nest_loop(meta: dict, count: int, *outer: int) -> None:
    """The loop's count set to `count`, and the loop wrapped in loops of counts `outer`."""
    index = loop_index(meta)
    loop = meta["steps"][index]
    loop["count"] = count
    for n in outer:
        meta["steps"].insert(index, {"kind": "loop", "count": n, "length": loop["length"] + 1,
                                     "provenance": ""})
        loop = meta["steps"][index]


def loop_index(meta: dict) -> int:
    return next(i for i, s in enumerate(meta["steps"]) if s["kind"] == "loop")


@pytest.mark.parametrize("edit, message", [
    (lambda m: m["steps"][loop_index(m)].update(length=10**4),
     "ends past its enclosing body"),
    (lambda m: m["steps"][loop_index(m)].update(count=0), ".count: 0 is outside [1, 1048576]"),
    (lambda m: nest_loop(m, 1, *[1] * 128), "a loop nested 129 deep (at most 128: MAX_LOOP_DEPTH, device/limits.py)"),
    (lambda m: m["steps"][loop_index(m)].pop("length"), "missing key 'length'"),
])
def test_malformed_loops_are_package_errors(tmp_path, edit, message):
    directory = small_loop_package(tmp_path)
    edit_metadata(directory, edit)
    started = time.perf_counter()
    with pytest.raises(PackageError, match=re.escape(message)):
        Package.load(directory)
    assert time.perf_counter() - started < 10  # refused before the work, not after


def test_a_long_loop_is_bounded_by_estimated_model_time(tmp_path):
    """A package is bounded by what its run would cost (steps and (step, tile) pairs, loops
    unrolled), not by a step count: 65,536 iterations of this small body are minutes of
    model time, under the default bound; a caller can lower the bound, or raise it."""
    directory = small_loop_package(tmp_path)
    with np.load(directory / "program.npz", allow_pickle=False) as archive:
        strides = [k for k in archive.files if k.endswith("_pointer_strides")]
    for name in strides:  # the body's pointers stay where they are, however long the loop
        rewrite_array(directory, name, np.zeros_like)
    edit_metadata(directory, lambda m: nest_loop(m, 1 << 16))
    Package.load(directory)  # under MAX_MODEL_SECONDS
    with pytest.raises(PackageError, match=r"about \d.* s, loops unrolled \(at most 10 s"):
        Package.load(directory, max_model_seconds=10)
    edit_metadata(directory, lambda m: nest_loop(m, 1 << 20))
    started = time.perf_counter()
    with pytest.raises(PackageError, match="MAX_MODEL_SECONDS"):
        Package.load(directory)
    assert time.perf_counter() - started < 10
    Package.load(directory, max_model_seconds=float("inf"))  # a run someone means to be huge


def rewrite_array(directory: Path, name: str, change) -> None:
    path = directory / "program.npz"
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    arrays[name] = change(arrays[name])
    np.savez_compressed(path, **arrays)


def strided_step(directory: Path) -> int:
    with np.load(directory / "program.npz", allow_pickle=False) as archive:
        return next(int(k[4:].split("_")[0]) for k in archive.files
                    if k.endswith("_pointer_strides") and archive[k].any())


def test_a_stride_that_walks_out_of_memory_is_a_package_error(tmp_path):
    directory = small_loop_package(tmp_path)
    index = strided_step(directory)
    # a stride of half the SRAM (within the stride bound): the loop's later iterations leave memory
    rewrite_array(directory, f"step{index}_pointer_strides",
                  lambda a: a * (IPU21.sram_bytes // 2 // int(np.abs(a).max())))
    with pytest.raises(PackageError, match=rf"member 'step{index}_pointers': pointer '\w+' \(\+\d+ bytes\) "
                                           r"0x[0-9a-f]+ \(entry \d+\) is outside"):
        Package.load(directory)


def test_missing_strides_are_a_package_error(tmp_path):
    directory = small_loop_package(tmp_path)
    index = strided_step(directory)
    path = directory / "program.npz"
    with np.load(path, allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files if k != f"step{index}_pointer_strides"}
    np.savez_compressed(path, **arrays)
    with pytest.raises(PackageError, match=f"step{index}_pointer_strides"):
        Package.load(directory)


def test_iterations_that_differ_are_an_internal_error_not_a_wrong_loop():
    a = KernelStep("copy_words", np.array([0], np.int32), np.array([[0x60000, 0x50000]]), (4,), "p")
    b = KernelStep("copy_words", np.array([0], np.int32), np.array([[0x60000, 0x50000]]), (8,), "p")
    with pytest.raises(PassFailedException, match="internal compiler error .* the loop 'L' was "
                                                  "judged to repeat the same steps, but the kernel "
                                                  "call 'p' differs between iterations 0 and 1"):
        loop_body([a], [b], "L")
