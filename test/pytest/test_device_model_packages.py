"""Whole compiled packages run with the batched kernel forms and without them: the same
outputs (bit for bit), the same cycles step by step, the same exchange errors.

The batched forms (`Kernel.batched`: the GEMMs, `copy_words`, `gather_shard`, `gather_round`,
`gather_view`, `gather_view_round`, `view_shard`) are what makes a whole-chip layer run in minutes; test_device_model_batched.py
compares them step by step on made-up memory, this file on the steps a compiled transformer
layer really has (the gathers of its re-tilings, the index views of its head split)."""

from __future__ import annotations

import collections
from dataclasses import replace

import numpy as np
import pytest

from device.kernels import RECORDS, kernel_cycles, step_cycles
from device.model import run_package
from device.model.host import values_of_stored
from device.package import KernelStep
from device.target import IPU21
from frontend.models import GPT2_SMALL, build_model
from interpreters.graph import find_function
from tools.ipu_run import compile_module
from tools.run_io import random_inputs

pytestmark = pytest.mark.slow  # a 128-tile compile and a tile-by-tile run: about 10 s

# A GPT-2-shaped layer small enough to run tile by tile in seconds, large enough that its
# plan has gather_round and gather_view_round steps on many tiles.
SMALL_LAYER = replace(GPT2_SMALL, name="gpt2-128", seq=128, d_model=128, heads=2, mlp=512)


@pytest.fixture(scope="module")
def compiled():
    module = build_model(SMALL_LAYER)
    func = find_function(module.clone(), None)
    arrays = random_inputs(func, 0)
    package = compile_module(module, 128, "pad", with_assembly=False)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    return package, feeds


def test_the_layer_has_batched_layout_steps(compiled):
    package, _ = compiled
    kinds = collections.Counter(s.symbol for s in package.executed()
                                if isinstance(s, KernelStep) and np.size(s.tiles) > 1)
    assert kinds["gather_round"] > 100 and kinds["gather_view_round"] > 0, kinds


def test_a_layer_runs_the_same_with_and_without_the_batched_forms(monkeypatch, compiled):
    package, feeds = compiled
    fell_back = collections.Counter()
    for symbol, record in list(RECORDS.items()):
        if record.batched is not None:
            def counted(batch, run=record.batched, symbol=symbol):
                cycles = run(batch)
                fell_back[symbol] += cycles is None
                return cycles

            monkeypatch.setitem(RECORDS, symbol, replace(record, batched=counted))
    batched = run_package(package, feeds)
    assert not any(fell_back.values()), fell_back
    with monkeypatch.context() as patch:
        for symbol, record in list(RECORDS.items()):
            patch.setitem(RECORDS, symbol, replace(record, batched=None))
        per_tile = run_package(package, feeds)
    assert batched.cycles_by_step == per_tile.cycles_by_step
    assert batched.exchange_errors == per_tile.exchange_errors == []
    assert batched.outputs.keys() == per_tile.outputs.keys()
    for name, values in batched.outputs.items():
        assert np.array_equal(values, per_tile.outputs[name], equal_nan=True), name


def test_step_cycles_are_what_the_model_charges_each_step(compiled):
    package, feeds = compiled
    result = run_package(package, feeds)
    kernel_steps = [(index, step) for index, step in enumerate(package.executed())
                    if isinstance(step, KernelStep)]
    for index, step in kernel_steps:
        assert step_cycles(step.symbol, step.scalars, step.tiles, IPU21) == \
            result.cycles_by_step[index], (index, step.symbol)
    gathers = [step for _, step in kernel_steps if step.symbol == "gather_shard"][:20]
    for step in gathers:  # the step-wide form against the per-call cycle function
        assert step_cycles(step.symbol, step.scalars, step.tiles, IPU21) == max(
            kernel_cycles(step.symbol, step.scalars, tile, IPU21)
            for tile in np.asarray(step.tiles).reshape(-1).tolist())
