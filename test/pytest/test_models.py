"""The transformer models of `frontend/models.py` (what `bench/models.py` measures), at the
small size of `tiny`: each compiles and PASSes on the device model against the NumPy reference;
the real sizes build and have the shapes and MAC counts of GPT-2-small and BERT."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.func import FuncOp

from frontend.models import (
    BERT_BASE,
    BERT_BASE_B8,
    BERT_BASE_SPLIT,
    BERT_BASE_STACK,
    BERT_LARGE,
    GPT2_SMALL,
    GPT2_STACK,
    MODELS,
    build_model,
    layer_weights,
    matrix_macs,
    tiny,
)
from frontend.run import compile_and_run
from ipu_dialects.graph import AttentionOp, GemmOp, RepeatOp

ROOT = Path(__file__).resolve().parents[2]


def function(module) -> FuncOp:
    return next(op for op in module.ops if isinstance(op, FuncOp))


@pytest.mark.parametrize("config", [GPT2_SMALL, BERT_BASE, BERT_BASE_B8, BERT_BASE_SPLIT,
                                    GPT2_STACK, BERT_BASE_STACK], ids=lambda c: c.name)
def test_tiny_models_pass_on_the_device_model(config):
    small = tiny(config)
    result = compile_and_run(build_model(small), tiles=8)
    assert result.passed, (small.name, result.max_rel_error)
    assert result.cycles > 0 and not result.summary["exchange_errors"]


def test_a_stack_is_one_repeat_with_per_layer_weight_sequences():
    small = tiny(GPT2_STACK)
    assert small.layers == 2
    func = function(build_model(small))
    (repeat,) = [op for op in func.body.block.ops if isinstance(op, RepeatOp)]
    assert repeat.count.value.data == 2
    assert len(repeat.sequences) == len(layer_weights(small))
    assert [a.type.get_shape()[0] for a in func.args[1:]] == [2] * len(layer_weights(small))
    # the body is one layer: the ops of the single-layer program (and a yield)
    layer = function(build_model(tiny(GPT2_SMALL)))
    body_ops = [op.name for op in repeat.body.block.ops]
    assert body_ops[:-1] == [op.name for op in layer.body.block.ops][:-1]


@pytest.mark.parametrize("config", list(MODELS.values()), ids=lambda c: c.name)
def test_real_sizes_build_with_their_matrix_products(config):
    """The counted MACs are those of the built graph: every gemm's M.K.N and attention's two
    products, a repeat body counted once per layer."""
    func = function(build_model(config))
    macs = 0
    for op in func.walk():
        count = 1
        parent = op.parent_op()
        while parent is not None and not isinstance(parent, FuncOp):
            if isinstance(parent, RepeatOp):
                count *= parent.count.value.data
            parent = parent.parent_op()
        if isinstance(op, GemmOp):
            *batch, m, n = op.result.type.get_shape()
            k = op.lhs.type.get_shape()[-1]
            macs += count * math.prod(batch) * m * n * k
        elif isinstance(op, AttentionOp):
            *lead, s, d = op.query.type.get_shape()
            keys = op.key.type.get_shape()[-2]
            macs += count * 2 * math.prod(lead) * s * keys * d
    assert macs == matrix_macs(config)


def test_the_real_sizes_are_those_of_the_models():
    # GPT-2-small: 7.08M weights per layer in the matrices (14 MB in FP16)
    matrices = sum(s[0] * s[1] for _, s in layer_weights(GPT2_SMALL) if len(s) == 2)
    assert matrices == 4 * 768 * 768 + 2 * 768 * 3072
    x = function(build_model(BERT_BASE_B8)).args[0]
    assert x.type.get_shape() == (8, 384, 768)
    assert (BERT_LARGE.d_model, BERT_LARGE.heads, BERT_LARGE.mlp, BERT_LARGE.seq) == (1024, 16, 4096, 384)
    assert GPT2_SMALL.causal and not BERT_BASE.causal


@pytest.mark.slow  # two fresh compile processes
def test_the_bench_prints_a_row_per_case_and_a_diagnostic_line_not_a_traceback():
    """bench/models.py at the tiny size: a compiled row, with its device-model run."""
    command = [sys.executable, str(ROOT / "bench" / "models.py"), "--tiny", "--json", "--run",
               "--cases", "gpt2-small", "--tiles", "4"]
    rows = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    (row,) = rows
    assert row["status"] == "compiled" and row["run"] == "PASS", row
    assert row["cycles"] == row["model_cycles"] > row["roofline"] > 0
    assert row["peak_bytes"] > 0 and row["ops"] > 0 and row["compile_seconds"] > 0
    assert row["ratio"] == pytest.approx(row["cycles"] / row["roofline"])


@pytest.mark.slow  # three fresh compile processes
def test_a_repeated_row_gives_the_median_of_its_compiles():
    command = [sys.executable, str(ROOT / "bench" / "models.py"), "--tiny", "--json",
               "--cases", "bert-base", "--tiles", "4", "--repeat", "3"]
    (row,) = json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)
    runs = row["compile_runs"]
    assert len(runs) == 3 and runs == sorted(runs) and runs[0] > 0
    assert row["compile_seconds"] == runs[1]


@pytest.mark.slow
def test_a_failing_case_prints_its_diagnostic():
    """BERT-large on one tile does not fit: the row is the diagnostic's first line."""
    command = [sys.executable, str(ROOT / "bench" / "models.py"), "--cases", "bert-large",
               "--tiles", "1"]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    assert "Traceback" not in done.stdout + done.stderr
    (line,) = done.stdout.splitlines()[1:]
    assert "diagnostic: " in line, line


def test_the_device_models_descriptor_cache_decodes_as_before_and_still_rejects():
    """device.model.kernel_shards caches decoded descriptors and shard boxes (a large model's
    run was mostly re-decoding them): the same geometries, and a bad descriptor raises on
    every call, not only the first."""
    from device.model.kernel_shards import decoded, shard_box
    from device.shard_geometry import DescriptorError, ShardGeometry, decode_descriptors

    geometry = ShardGeometry((64, 96), (1, 1), (4, 2), (False, False), group=8, precision="f16")
    words = (*geometry.encode(), *geometry.encode())
    assert decoded(words, 2) == tuple(decode_descriptors(words, 2)) == (geometry, geometry)
    assert decoded(words, 2) is decoded(words, 2)
    assert [shard_box(geometry, t) for t in range(8)] == [geometry.shard_box(t) for t in range(8)]
    for _ in range(2):
        with pytest.raises(DescriptorError):
            decoded(words[:-1], 2)
        with pytest.raises(DescriptorError):
            shard_box(geometry, 8)


def test_a_failed_check_says_whether_the_program_is_ill_conditioned():
    """bench/models.py's verdict on a fixed-tolerance FAIL (PASS-spread or FAIL): the reference's own rounding spread,
    and whether the answer is within twice it at every element. An answer one spread off
    everywhere is within; one with a single element moved by the largest magnitude is not."""
    sys.path.insert(0, str(ROOT / "bench"))
    from models import conditioning

    from interpreters.graph import rounding_spread, run_function
    from tools.run_io import random_inputs

    source = build_model(tiny(GPT2_SMALL, seq=16, d_model=32, mlp=64))
    func = function(source)
    arrays = random_inputs(func, 0)
    (want,) = run_function(source, arrays, func.sym_name.data)
    (spread,) = rounding_spread(source, arrays, func.sym_name.data, runs=4)
    (given,) = rounding_spread(source, arrays, func.sym_name.data, runs=4, reference=[want])
    np.testing.assert_array_equal(given, spread)  # the reference it was given is the one it runs
    near = np.asarray(want, np.float64) + 0.5 * spread
    within, note = conditioning(source, arrays, func.sym_name.data, [near], [want])
    assert within and "every element within 2x its spread" in note, note
    far = np.asarray(want, np.float64).copy()
    far.flat[7] += np.abs(far).max()
    within, note = conditioning(source, arrays, func.sym_name.data, [far], [want])
    assert not within and "NOT within" in note and "rounding spread up to" in note, note
