"""The step-wide cycle forms count what the calls tile by tile count, on whole packages.

`bench/gemm_roofline.py`'s `package_cycles` charges each kernel step through
`device.kernels.step_cycles` (the layout kernels' cycles of all the step's tiles at once,
`gather_step_cycles` / `view_step_cycles`). On packages of several kinds (GEMM row, grid and
K-split plans, a layout chain of transposes, reshapes, slices and a concat, a causal layer
with blocked attention and an unmasked one, a repeat), compiled for a few tiles, every step's cycles must be
exactly:

- what the device model charges it when it runs the package (batched forms), and again with
  every batched form removed (each call's own implementation, tile by tile);
- the maximum over its tiles of a reference written here from the geometry alone, without the
  model's box code: the intersection of the two shard boxes and the logical extent for a
  `gather_shard`, `index_views.view_moves` for a view kernel, the one-shard form from the
  tile's source for a round kernel (`gather_round`, `gather_view_round`), `kernel_cycles`
  for the rest.
"""

from __future__ import annotations

import collections
import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from e2e_support import ROW_PLANS, gemm_module

from device.index_views import view_moves
from device.kernel_abi import split_view_words
from device.kernels import RECORDS, get_kernel, kernel_cycles, step_cycles
from device.model import run_package
from device.model.cycles import gather_moved_cycles, view_moved_cycles
from device.model.host import values_of_stored
from device.package import KernelStep, executed_count, flat_steps
from device.shard_geometry import DescriptorError, decode_descriptors
from device.target import IPU21
from frontend.builder import GraphBuilder, f16, f32
from frontend.models import BERT_BASE, BERT_BASE_STACK, GPT2_SMALL, build_model, tiny
from interpreters.graph import find_function
from tools.ipu_run import compile_module
from tools.run_io import random_inputs

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from gemm_roofline import package_cycles

T = IPU21


def layout_chain():
    """Transpose, reshape, slice and concat: view_shard and gather_view steps, with gathers
    between the re-tilings."""
    g = GraphBuilder("layouts")
    x = g.input([48, 40], f32, name="x")
    y = g.input([10, 192], f32, name="y")
    t = g.transpose(x, [1, 0])  # [40, 48]
    r = g.reshape(t, [10, 192])
    s = g.slice(r, [0, 0], [10, 96])
    c = g.concat([s, g.slice(y, [0, 96], [10, 192])], axis=1)
    g.output(g.add(c, y))
    return g.build()


# a causal layer with blocked attention and head-split gathers; an unmasked one with attention
# in one kernel
GPT2_LAYER = replace(GPT2_SMALL, name="gpt2-128", seq=128, d_model=128, heads=2, mlp=256)
BERT_LAYER = replace(BERT_BASE, name="bert-64", seq=64, d_model=128, heads=4, mlp=256)


def repeat_stack():
    return build_model(tiny(BERT_BASE_STACK, layers=3))


# (name, module builder, tiles, catalog, kernel symbols the package must have)
CASES = [
    ("gemm rows", lambda: gemm_module((200, 192), (192, 130), f16), 8, ROW_PLANS, {"convert_shard"}),
    ("gemm grid", lambda: gemm_module((256, 256), (256, 256), f16), 16,
     ("amp_gemm_f16_grid",), set()),
    ("gemm ksplit", lambda: gemm_module((128, 256), (256, 256), f16), 16,
     ("amp_gemm_f16_ksplit",), {"add"}),
    ("layouts", layout_chain, 6, (), {"gather_view", "view_shard"}),
    ("gpt2 layer", lambda: build_model(GPT2_LAYER), 32, (),
     {"gather_round", "gather_view_round", "view_shard", "layer_norm", "gelu",
      "attention_block_f16_init", "attention_merge", "attention_finish_f16"}),
    ("bert layer", lambda: build_model(BERT_LAYER), 32, (),
     {"gather_shard", "view_shard", "attention"}),
    ("repeat", repeat_stack, 8, (), {"gather_shard"}),
]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def compiled(request):
    _, build, tiles, catalog, symbols = request.param
    module = build()
    func = find_function(module.clone(), None)
    arrays = random_inputs(func, 0)
    package = compile_module(module, tiles, "pad", with_assembly=False, catalog=catalog)
    feeds = {t.name: values_of_stored(t, a) for t, a in zip(package.inputs, arrays, strict=True)}
    return package, feeds, symbols


def round_source(named, tile: int) -> int:
    """The source tile of a round kernel's call on `tile`: the group whose window, counted
    from first_dest modulo the groups' whole period, holds the tile."""
    offset = (tile - named["first_dest"]) % (named["groups"] * named["dest_step"])
    return named["first_source"] + named["source_step"] * (offset // named["dest_step"])


ROUND_FORMS = {"gather_round": "gather_shard", "gather_view_round": "gather_view"}


def reference_call_cycles(symbol: str, scalars, tile: int) -> int:
    """One call's cycles from its geometry, tile by tile, without the model's box code."""
    named, words = get_kernel(symbol).split_scalars(scalars)
    if symbol in ROUND_FORMS:  # its one-shard form from the tile's source, and the choice
        source = round_source(named, tile)
        if source == tile and not named["takes_own"]:  # it takes its own shard later
            if symbol == "gather_round":
                nothing = gather_moved_cycles(0, *decode_descriptors(words, 2), T)
            else:
                nothing = view_moved_cycles(0, *split_view_words(words)[:2], T)
            return nothing + T.round_select_cycles
        plain = ROUND_FORMS[symbol]
        return reference_call_cycles(plain, [source, *words], tile) + T.round_select_cycles
    if symbol == "gather_shard":
        out, staged = decode_descriptors(words, 2)
        boxes = (staged.shard_box(named["source_tile"]), out.shard_box(tile),
                 ((0,) * out.rank, out.shape))
        extent = [max(0, min(b[1][axis] for b in boxes) - max(b[0][axis] for b in boxes))
                  for axis in range(out.rank)]
        return gather_moved_cycles(math.prod(extent), out, staged, T)
    if symbol in ("gather_view", "view_shard"):
        out, src, view = split_view_words(words)
        source = named.get("source_tile", tile)
        moved, _, _ = view_moves(view, out, out.shard_box(tile), src, src.shard_box(source))
        return view_moved_cycles(moved[0].size, out, src, T)
    return kernel_cycles(symbol, scalars, tile, T)


def kernel_steps(package):
    return [(i, s) for i, s in enumerate(package.executed()) if isinstance(s, KernelStep)]


def test_the_packages_have_the_steps_they_are_chosen_for(compiled):
    package, _, symbols = compiled
    kinds = collections.Counter(s.symbol for _, s in kernel_steps(package) if np.size(s.tiles) > 1)
    assert symbols <= set(kinds), kinds
    assert sum(kinds.values()) > 0


def test_the_repeat_runs_its_body_more_than_once():
    package = compile_module(repeat_stack(), 8, "pad", with_assembly=False)
    assert executed_count(package.steps) > len(list(flat_steps(package.steps)))


def test_package_cycles_are_the_models_run_cycles_batched_and_tile_by_tile(monkeypatch,
                                                                           compiled):
    package, feeds, _ = compiled
    static = package_cycles(package)
    assert run_package(package, feeds).cycles_by_step == static
    with monkeypatch.context() as patch:
        for symbol, record in list(RECORDS.items()):
            patch.setitem(RECORDS, symbol, replace(record, batched=None))
        assert run_package(package, feeds).cycles_by_step == static


def test_each_step_is_its_slowest_tile_by_the_reference(compiled):
    package, _, _ = compiled
    static = package_cycles(package)
    references: dict[tuple, int] = {}
    for index, step in kernel_steps(package):
        tiles = np.asarray(step.tiles).reshape(-1).tolist()
        key = (step.symbol, tuple(step.scalars), tuple(tiles))
        if key not in references:
            references[key] = max(reference_call_cycles(step.symbol, step.scalars, tile)
                                  for tile in tiles)
        assert static[index] == references[key], (index, step.symbol, step.provenance)
        if len(tiles) > 1:  # one tile's call is the step-wide form on that tile
            tile = tiles[len(tiles) // 2]
            assert kernel_cycles(step.symbol, step.scalars, tile, T) == reference_call_cycles(
                step.symbol, step.scalars, tile)


def test_a_view_step_with_a_tile_outside_raises_the_per_call_error():
    package = compile_module(layout_chain(), 6, "pad", with_assembly=False)
    views = [s for _, s in kernel_steps(package) if s.symbol in ("gather_view", "view_shard")]
    assert views
    for step in views:
        outside = package.tiles + 3
        tiles = [*np.asarray(step.tiles).reshape(-1).tolist(), outside]
        with pytest.raises(DescriptorError, match=f"tile {outside} holds no shard"):
            kernel_cycles(step.symbol, step.scalars, outside, T)
        with pytest.raises(DescriptorError, match=f"tile {outside} holds no shard"):
            step_cycles(step.symbol, step.scalars, tiles, T)
