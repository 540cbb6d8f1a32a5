"""Random whole programs through the compiler and the device model, against the reference.

Each case is a random graph of 2-10 ops over every op kind (gemm with transpose flags and
batch broadcasting, broadcasting add, gelu, causal/unmasked attention, layer norm, slice,
concat, repeat), one element type per program (f32, f16 or FP8 with power-of-two scales), on
a random tile count. The draw is not shaped by what the compiler does well (issue 24): values
feed several consumers, FP8 scales range over most of the format's (so results saturate or
fall into the subnormals, and GEMM results go far beyond FP16's range), operands of an add
or a concat have different scales, repeats carry up to three values and yield them permuted,
duplicated or unchanged, and FP8 repeat bodies have attention and narrow shapes. It is
compiled with the default pipeline and run on the device model; the verdict is:

- PASS: the model's results match the NumPy reference: ipu-run's check, or, for a case
  whose answer is ill-conditioned, every element within twice its rounding spread (the
  reference evaluated with every rounding one step off and every GEMM sum off by its error
  bound: `interpreters.graph.rounding_spread`; counted as `spread`);
- FAIL: they do not, or the model reports an error (a compiler or model bug);
- DIAGNOSTIC: the compiler refused the program with a diagnostic (fine when it cannot fit);
- CRASH: any other exception (a bug).

    python bench/differential.py --cases 300 --seed 0        # prints the counts
"""

from __future__ import annotations

import argparse
import random
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
from xdsl.dialects.builtin import Float8E4M3FNUZType, ModuleOp, f16, f32
from xdsl.utils.exceptions import PassFailedException, VerifyException

from frontend.builder import GraphBuilder, GraphValue
from ipu_dialects.graph import Fp8ScaleAttr

ELEMENTS = {"f32": f32, "f16": f16, "f8": Float8E4M3FNUZType()}
TILE_CHOICES = (1, 2, 3, 4, 7, 16, 64)


@dataclass
class Program:
    module: ModuleOp
    tiles: int
    description: str


class Generator:
    """Builds one random program with a seeded `random.Random`."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.kind = rng.choice(list(ELEMENTS))
        self.g = GraphBuilder("case")
        self.pool: list[GraphValue] = []
        self.inputs = 0
        self.ops: list[str] = []

    # ---- values -----------------------------------------------------------------------
    def extent(self) -> int:
        return self.rng.choice((1, 2, 3, 8, 16, 17, 32, 48, 64, 70, 96, 128))

    def scale(self) -> int | None:
        """An FP8 scale: near the inputs' magnitudes half of the time, else anywhere in most
        of the format's range (saturating and subnormal results included)."""
        if self.kind != "f8":
            return None
        if self.rng.random() < 0.5:
            return self.rng.choice((-4, -3, -2, -1, 0))
        return self.rng.randint(-24, 24)

    def new_input(self, shape: list[int], scale: int | None = None) -> GraphValue:
        self.inputs += 1
        scale = self.scale() if scale is None else scale
        value = self.g.input(shape, ELEMENTS[self.kind], name=f"in{self.inputs}",
                             **({"scale": scale} if self.kind == "f8" else {}))
        self.pool.append(value)
        return value

    @staticmethod
    def shape(value: GraphValue) -> list[int]:
        return list(value.type.get_shape())

    def pick(self, min_rank: int = 1) -> GraphValue:
        fitting = [v for v in self.pool if len(self.shape(v)) >= min_rank]
        if not fitting:
            return self.new_input([self.extent() for _ in range(max(min_rank, 2))])
        return self.rng.choice(fitting)

    def result_scale(self) -> dict:
        return {"scale": self.scale()} if self.kind == "f8" else {}

    # ---- ops --------------------------------------------------------------------------
    def gemm(self) -> GraphValue:
        a = self.pick(2)
        m, k = self.shape(a)[-2:]
        transpose_lhs = self.rng.random() < 0.2
        if transpose_lhs:
            k, m = m, k
        n = self.extent()
        transpose_rhs = self.rng.random() < 0.3
        a_batch = self.shape(a)[:-2]
        batch = self.rng.choice(([], [], [1], a_batch[-1:], [2] if not a_batch else a_batch))
        b_shape = batch + ([n, k] if transpose_rhs else [k, n])
        square = self.shape(a) == b_shape and self.rng.random() < 0.5
        b = a if square else self.new_input(b_shape)
        self.ops.append(f"gemm{'T' if transpose_lhs else ''}{'T' if transpose_rhs else ''}")
        return self.g.gemm(a, b, transpose_lhs, transpose_rhs, **self.gemm_scale(a, b))

    def gemm_scale(self, a: GraphValue, b: GraphValue) -> dict:
        """An FP8 GEMM result scale: drawn as any other, or (a third of the time) at the
        top of the format's range, above the operands' product scale, where the results
        lie far beyond FP16."""
        if self.kind != "f8" or self.rng.random() < 0.67:
            return self.result_scale()
        top = self.value_scale(a)["scale"] + self.value_scale(b)["scale"] + 10
        return {"scale": max(-31, min(31, top + self.rng.randint(-4, 4)))}

    def add(self) -> GraphValue:
        a = self.pick()
        shape = self.shape(a)
        choice = self.rng.random()
        same = [v for v in self.pool if self.shape(v) == shape and v is not a]
        if choice < 0.3 and same:
            b = self.rng.choice(same)
        elif choice < 0.4:
            b = a  # one value, two operands
        elif choice < 0.7:  # a broadcast operand: some axes 1, maybe a lower rank
            rank = self.rng.randint(1, len(shape))
            tail = shape[len(shape) - rank:]
            b = self.new_input([e if self.rng.random() < 0.5 else 1 for e in tail])
        else:
            b = self.new_input(shape)
        if self.rng.random() < 0.5:
            a, b = b, a
        self.ops.append("add")
        return self.g.add(a, b, **self.result_scale())

    def gelu(self) -> GraphValue:
        # every other gelu in its tanh form, chosen without the rng: a seed's graph is otherwise
        # the one it was before the tanh form existed
        tanh = len(self.ops) % 2 == 1
        self.ops.append("gelu_tanh" if tanh else "gelu")
        return self.g.gelu(self.pick(), approximate="tanh" if tanh else None,
                           **self.result_scale())

    def attention(self) -> GraphValue:
        heads = self.rng.choice((1, 2, 3))
        batch = self.rng.choice(([], [2]))
        seq, dim = self.rng.choice((1, 8, 16, 33, 64)), self.rng.choice((2, 8, 16, 32, 64))
        causal = self.rng.random() < 0.5
        kv_seq = seq if causal else self.rng.choice((seq, 8, 40))
        q = self.new_input(batch + [heads, seq, dim])
        k = self.new_input(batch + [heads, kv_seq, dim])
        v = self.new_input(batch + [heads, kv_seq, dim])
        scale = None if self.rng.random() < 0.5 else self.rng.choice((0.1, 0.25))
        self.ops.append("attention" + ("C" if causal else ""))
        result_scale = self.scale() if self.kind == "f8" else None
        return self.g.attention(q, k, v, causal, scale, result_scale=result_scale)

    def layer_norm(self) -> GraphValue:
        x = self.pick()
        width = self.shape(x)[-1]
        gamma, beta = self.new_input([width]), self.new_input([width])
        self.pool.remove(gamma)
        self.pool.remove(beta)
        self.ops.append("layer_norm")
        return self.g.layer_norm(x, gamma, beta, **self.result_scale())

    def slice(self) -> GraphValue:
        x = self.pick()
        starts, ends, steps = [], [], []
        for extent in self.shape(x):
            start = self.rng.randrange(extent)
            end = self.rng.randint(start + 1, extent)
            starts.append(start)
            ends.append(end)
            steps.append(self.rng.choice((1, 1, 2)))
        self.ops.append("slice")
        return self.g.slice(x, starts, ends, steps)

    def concat(self) -> GraphValue:
        """Pool values (or new inputs, at their own scales) joined along one axis."""
        x = self.pick()
        shape = self.shape(x)
        axis = self.rng.randrange(len(shape))
        parts = [x]
        for _ in range(self.rng.randint(1, 2)):
            fitting = [v for v in self.pool if len(self.shape(v)) == len(shape) and all(
                e == f for i, (e, f) in enumerate(zip(self.shape(v), shape)) if i != axis)]
            if fitting and self.rng.random() < 0.5:
                parts.append(self.rng.choice(fitting))
            else:
                part = list(shape)
                part[axis] = self.extent()
                parts.append(self.new_input(part))
        self.ops.append("concat")
        return self.g.concat(parts, axis)

    # ---- repeats ----------------------------------------------------------------------
    def value_scale(self, value: GraphValue) -> dict:
        """The FP8 scale of `value` as a result scale: a body keeps its carried type."""
        encoding = value.type.encoding
        return {"scale": encoding.exponent.data if isinstance(encoding, Fp8ScaleAttr) else 0} \
            if self.kind == "f8" else {}

    def repeat(self) -> GraphValue:
        """A repeat carrying one to three values of one type (a pool value, possibly twice,
        and new inputs), with a weight invariant and a bias sequence (per iteration: a
        vector, or a sequence for an inner repeat). The body computes from the first
        carried value 1-4 shape-keeping ops (gemm by the weight, add of the bias or of the
        carried value, gelu, self-attention when the value has heads, and once a nested
        repeat), usually ending in a layer norm, and yields into each slot that result, a
        carried argument (permuted, duplicated or unchanged) or the sum of two."""
        x = self.pick(2)
        shape = self.shape(x)
        count, inner = self.rng.choice((1, 2, 3, 5)), self.rng.choice((None, None, 2, 3))
        scale = self.value_scale(x).get("scale")
        carried = [x]
        for _ in range(self.rng.choice((0, 0, 1, 2))):
            carried.append(x if self.rng.random() < 0.3 else self.new_input(shape, scale=scale))
        weight = self.new_input([shape[-1], shape[-1]])
        bias_shape = self.rng.choice(([shape[-1]], [1, shape[-1]]))
        bias = self.new_input([count] + ([inner] if inner else []) + bias_shape)
        gamma, beta = self.new_input([shape[-1]]), self.new_input([shape[-1]])
        for value in (weight, bias, gamma, beta):
            self.pool.remove(value)  # used by the body only
        for value in carried[1:]:
            if value is not x and value in self.pool:
                self.pool.remove(value)
        self.ops.append(f"repeat{count}" + (f"x{inner}" if inner else "")
                        + (f"c{len(carried)}" if len(carried) > 1 else "") + "(")

        def body(args, invariants, slices):
            h, nested = args[0], inner
            vector = None if inner else slices[0]
            for _ in range(self.rng.randint(1, 4)):
                h = self.body_op(h, args[0], invariants[0], vector,
                                 (nested, slices[0]) if nested else None)
                nested = None if self.ops[-1] == "repeat" else nested
            if self.rng.random() < 0.8:
                # a layer norm ends most layers, as in a transformer: without it the carried
                # values grow or shrink geometrically with the count
                self.ops.append("layer_norm")
                h = self.g.layer_norm(h, invariants[1], invariants[2], **self.value_scale(h))
            yields = [h] + [self.yielded(args, h) for _ in args[1:]]
            if len(args) > 1 and self.rng.random() < 0.3:
                yields[0] = self.yielded(args, h)
            return yields

        results = self.g.repeat(count, body, carried, [weight, gamma, beta], [bias])
        self.ops.append(")")
        return self.rng.choice(results)

    def yielded(self, args: list[GraphValue], h: GraphValue) -> GraphValue:
        """What a carried slot takes: the body's result, a carried argument or a sum of two."""
        choice = self.rng.random()
        if choice < 0.5:
            self.ops.append("yield_arg")
            return self.rng.choice(args)
        if choice < 0.75:
            self.ops.append("yield_sum")
            return self.g.add(self.rng.choice(args), self.rng.choice(args),
                              **self.value_scale(h))
        return h

    def body_op(self, h: GraphValue, start: GraphValue, weight: GraphValue, bias: GraphValue | None,
                nested: tuple[int, GraphValue] | None) -> GraphValue:
        """One op of a repeat's body; `nested`: (count, sequence) of an inner repeat."""
        keep = self.value_scale(h)
        choices = ["gemm", "residual", "gelu"] + ([] if bias is None else ["bias"])
        if len(self.shape(h)) >= 3 and self.shape(h)[-2] > 1:
            choices.append("attention")
        if nested:
            choices += ["repeat", "repeat"]
        choice = self.rng.choice(choices)
        self.ops.append(choice)
        if choice == "gemm":
            return self.g.gemm(h, weight, **keep)
        if choice == "bias":
            assert bias is not None
            return self.g.add(h, bias, **keep)
        if choice == "residual":
            return self.g.add(h, start, **keep)
        if choice == "attention":
            return self.g.attention(h, h, h, self.rng.random() < 0.5, None,
                                    **({"result_scale": keep["scale"]} if keep else {}))
        if choice == "repeat":
            assert nested is not None

            def inner_body(carried, invariants, slices):
                y = self.g.add(carried[0], slices[0], **keep)
                return [self.g.gelu(y, **keep) if self.rng.random() < 0.5 else y]

            return self.g.repeat(nested[0], inner_body, [h], [], [nested[1]])[0]
        return self.g.gelu(h, **keep)

    def build(self) -> Program:
        self.new_input([self.extent(), self.extent()])
        makers = (self.gemm, self.add, self.gelu, self.attention, self.repeat,
                  self.layer_norm, self.slice, self.concat)
        for _ in range(self.rng.randint(2, 10)):
            self.pool.append(self.rng.choice(makers)())
        last = self.pool[-1]
        outputs = [last]
        extra = self.rng.random()
        if extra < 0.15:
            outputs.append(self.pool[0])  # return an argument
        elif extra < 0.25:
            outputs.append(last)  # the same value twice
        elif extra < 0.4:
            outputs.append(self.rng.choice(self.pool))
        self.g.output(*outputs)
        tiles = self.rng.choice(TILE_CHOICES)
        return Program(self.g.build(), tiles, f"{self.kind} tiles={tiles} {' '.join(self.ops)}")


def generate(seed: int) -> Program:
    return Generator(random.Random(seed)).build()


def verdict(program: Program, seed: int = 0) -> tuple[str, str]:
    """(PASS|FAIL|DIAGNOSTIC|CRASH, detail) of one program; a PASS by the rounding spread
    (an ill-conditioned answer) has the detail "spread"."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "test" / "pytest"))
    from e2e_support import compile_case, run_verdict

    try:
        case = compile_case(program.module, program.tiles, seed=seed)
    except (PassFailedException, VerifyException) as error:
        return "DIAGNOSTIC", str(error).splitlines()[0]
    except Exception:
        return "CRASH", traceback.format_exc(limit=3)
    try:
        failure = run_verdict(case)
        if failure is not None and failure.startswith("outputs differ"):
            if within_rounding_spread(program, case, seed):
                return "PASS", "spread"
    except Exception:
        return "CRASH", traceback.format_exc(limit=3)
    return ("PASS", "") if failure is None else ("FAIL", failure)


def within_rounding_spread(program: Program, case, seed: int) -> bool:
    """Is every element of every result within twice its rounding spread of the reference
    (non-finite elements equal to it)? The tolerance of an ill-conditioned answer, derived
    from the computation rather than from the precision alone."""
    from device.model import run_package
    from device.model.host import stored_of_values
    from interpreters.graph import find_function, rounding_spread
    from tools.ipu_run import random_inputs
    from tools.run_io import within_spread

    arrays = random_inputs(find_function(program.module), seed)
    spreads = rounding_spread(program.module, arrays)
    outcome = run_package(case.package, case.feeds)
    results = [stored_of_values(t, outcome.outputs[t.name]) for t in case.package.outputs]
    for got, want, spread in zip(results, case.expected, spreads, strict=True):
        got64, want64 = np.asarray(got, np.float64), np.asarray(want, np.float64)
        finite = np.isfinite(got64) & np.isfinite(want64)
        same = (got64 == want64) | (np.isnan(got64) & np.isnan(want64))
        if not np.all(finite | same):
            return False
        if not within_spread(np.abs(got64 - want64)[finite], spread[finite]):
            return False
    return True


OP_KINDS = ("gemm", "add", "gelu", "gelu_tanh", "attention", "layer_norm", "slice", "concat", "repeat",
            "yield_arg", "yield_sum")


def op_kinds(description: str) -> set[str]:
    """The op kinds a program's description names (`gemmT`, `attentionC`, `repeat3x2(`)."""
    words = description.split()[2:]
    return {kind for kind in OP_KINDS for word in words if word.startswith(kind)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    by_kind: dict[str, Counter[str]] = {}
    by_op: dict[str, Counter[str]] = {}
    start = time.perf_counter()
    for index in range(args.cases):
        seed = args.seed + index
        try:
            program = generate(seed)
        except Exception:
            counts["CRASH"] += 1
            print(f"case {seed}: generator crash\n{traceback.format_exc(limit=3)}")
            continue
        result, detail = verdict(program, seed)
        counts[result] += 1
        counts["spread"] += detail == "spread"
        kind = program.description.split()[0]
        by_kind.setdefault(kind, Counter())[result] += 1
        for op in op_kinds(program.description):
            by_op.setdefault(op, Counter())[result] += 1
        if args.verbose or result in ("FAIL", "CRASH"):
            print(f"case {seed} [{program.description}]: {result} {detail}", flush=True)
    elapsed = time.perf_counter() - start
    print(" ".join(f"{k}={counts[k]}" for k in ("PASS", "FAIL", "DIAGNOSTIC", "CRASH")),
          f"(of the PASSes {counts['spread']} by the rounding spread; {args.cases} cases, "
          f"{elapsed:.0f} s)")
    for title, table in (("precision", by_kind), ("op", by_op)):
        for name in sorted(table):
            row = table[name]
            print(f"  {title} {name}: " + " ".join(f"{k}={row[k]}" for k in
                                                   ("PASS", "FAIL", "DIAGNOSTIC", "CRASH")))
    return 1 if counts["FAIL"] or counts["CRASH"] else 0


if __name__ == "__main__":
    sys.exit(main())
