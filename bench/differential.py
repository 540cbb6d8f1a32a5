"""Random whole programs through the compiler and the device model, against the reference.

Each case is a random graph of 2-10 ops over every op kind (gemm with transpose flags and
batch broadcasting, broadcasting add, gelu, causal/unmasked attention), one element type per
program (f32, f16 or FP8 with power-of-two scales), on a random tile count. It is compiled
with the default pipeline and run on the device model; the verdict is:

- PASS: the model's results match the NumPy reference (ipu-run's tolerances);
- FAIL: they do not, or the model reports an error (a compiler or model bug);
- DIAGNOSTIC: the compiler refused the program with a diagnostic (fine when it cannot fit);
- CRASH: any other exception (a bug).

    python bench/differential.py --cases 300 --seed 0        # prints the counts
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
        return self.rng.choice((1, 3, 8, 16, 17, 32, 48, 64, 70, 96, 128))

    def scale(self) -> int | None:
        return self.rng.choice((-4, -3, -2)) if self.kind == "f8" else None

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
        return self.g.gemm(a, b, transpose_lhs, transpose_rhs, **self.result_scale())

    def add(self) -> GraphValue:
        a = self.pick()
        shape = self.shape(a)
        choice = self.rng.random()
        same = [v for v in self.pool if self.shape(v) == shape and v is not a]
        if choice < 0.3 and same:
            b = self.rng.choice(same)
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
        self.ops.append("gelu")
        return self.g.gelu(self.pick(), **self.result_scale())

    def attention(self) -> GraphValue:
        heads = self.rng.choice((1, 2, 3))
        batch = self.rng.choice(([], [2]))
        seq, dim = self.rng.choice((8, 16, 33, 64)), self.rng.choice((8, 16, 32, 64))
        causal = self.rng.random() < 0.5
        kv_seq = seq if causal else self.rng.choice((seq, 8, 40))
        q = self.new_input(batch + [heads, seq, dim])
        k = self.new_input(batch + [heads, kv_seq, dim])
        v = self.new_input(batch + [heads, kv_seq, dim])
        scale = None if self.rng.random() < 0.5 else self.rng.choice((0.1, 0.25))
        self.ops.append("attention" + ("C" if causal else ""))
        result_scale = {"result_scale": self.scale()} if self.kind == "f8" else {}
        return self.g.attention(q, k, v, causal, scale, **result_scale)

    # ---- repeats ----------------------------------------------------------------------
    def value_scale(self, value: GraphValue) -> dict:
        """The FP8 scale of `value` as a result scale: a body keeps its carried type."""
        encoding = value.type.encoding
        return {"scale": encoding.exponent.data if isinstance(encoding, Fp8ScaleAttr) else 0} \
            if self.kind == "f8" else {}

    def repeat(self) -> GraphValue:
        """A repeat carrying one pool value, with a weight invariant and a bias sequence
        (per iteration: a vector, or a sequence for an inner repeat), and a random body of
        1-4 shape-keeping ops: gemm by the weight, add of the bias or of the carried value
        (a residual), gelu, self-attention when the carried value has heads, and (once) a
        nested repeat."""
        x = self.pick(2)
        if self.kind == "f8" and self.shape(x)[-1] < 8:
            # FP8 layer norm over a few elements divides by a deviation of the order of FP8's
            # rounding step: an ill-conditioned program, not a test of the compiler.
            x = self.new_input([self.extent(), self.rng.choice((8, 16, 32))])
        shape = self.shape(x)
        count, inner = self.rng.choice((1, 2, 3, 5)), self.rng.choice((None, None, 2, 3))
        # A weight that keeps the carried values' magnitude (inputs are uniform in [-1, 1):
        # a dot product of n terms scales them by about 0.58 * sqrt(n) * 2**scale): repeated
        # FP8 GEMMs would otherwise shrink the values into FP8's subnormals, where one
        # rounding step is a large fraction of the largest output.
        gain = 0.58 * math.sqrt(shape[-1])
        weight = self.new_input([shape[-1], shape[-1]], scale=-max(0, round(math.log2(gain))))
        bias_shape = self.rng.choice(([shape[-1]], [1, shape[-1]]))
        bias = self.new_input([count] + ([inner] if inner else []) + bias_shape)
        gamma, beta = self.new_input([shape[-1]], scale=0), self.new_input([shape[-1]], scale=0)
        for value in (weight, bias, gamma, beta):
            self.pool.remove(value)  # used by the body only
        self.ops.append(f"repeat{count}" + (f"x{inner}" if inner else "") + "(")

        def body(carried, invariants, slices):
            h, nested = carried[0], inner
            vector = None if inner else slices[0]
            for _ in range(self.rng.randint(1, 4)):
                h = self.body_op(h, carried[0], invariants[0], vector,
                                 (nested, slices[0]) if nested else None)
                nested = None if self.ops[-1] == "repeat" else nested
            # A layer norm ends every layer, as in a transformer: without it the carried
            # values grow or shrink geometrically with the count (out of f16's range, into
            # FP8's subnormals) and the comparison would test rounding at the extremes.
            self.ops.append("layer_norm")
            return [self.g.layer_norm(h, invariants[1], invariants[2], **self.value_scale(h))]

        result = self.g.repeat(count, body, [x], [weight, gamma, beta], [bias])[0]
        self.ops.append(")")
        return result

    def body_op(self, h: GraphValue, start: GraphValue, weight: GraphValue, bias: GraphValue | None,
                nested: tuple[int, GraphValue] | None) -> GraphValue:
        """One op of a repeat's body; `nested`: (count, sequence) of an inner repeat."""
        keep = self.value_scale(h)
        choices = ["gemm", "residual", "gelu"] + ([] if bias is None else ["bias"])
        if len(self.shape(h)) >= 3 and self.shape(h)[-2] > 1 and self.kind != "f8":
            choices.append("attention")  # FP8: averaged rows would feed the layer norm
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
        makers = (self.gemm, self.add, self.gelu, self.attention, self.repeat)
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
    """(PASS|FAIL|DIAGNOSTIC|CRASH, detail) of one program."""
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
    except Exception:
        return "CRASH", traceback.format_exc(limit=3)
    return ("PASS", "") if failure is None else ("FAIL", failure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", action="store_true", help="print every case")
    args = parser.parse_args()
    counts: Counter[str] = Counter()
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
        if args.verbose or result in ("FAIL", "CRASH"):
            print(f"case {seed} [{program.description}]: {result} {detail}")
    elapsed = time.perf_counter() - start
    print(" ".join(f"{k}={counts[k]}" for k in ("PASS", "FAIL", "DIAGNOSTIC", "CRASH")),
          f"({args.cases} cases, {elapsed:.0f} s)")
    return 1 if counts["FAIL"] or counts["CRASH"] else 0


if __name__ == "__main__":
    sys.exit(main())
