"""NumPy reference interpreter for the `graph` dialect: the numerical oracle of ipu-stack.

`run_function(module, inputs)` evaluates one graph `func.func` on NumPy arrays.

Numerics. Every op computes in float64 and its result is then rounded to the element type
declared on the result (f32, f16, or FP8 with the type's power-of-two scale). Rounding each
result, not only the final ones, models what the device stores between ops: every tensor lives in
memory in its declared precision, so a later op sees the rounded values. Computing inside an op
in float64 keeps the reference free of accumulation-order error, so a comparison against the
device measures the device's error alone, at tolerances set by the declared precisions.

FP8. An argument or result of type `tensor<..xf8E4M3FNUZ, #graph.fp8_scale<s>>` is exchanged as
an `ml_dtypes.float8_e4m3fnuz` array of the stored values `q`; the tensor's value is
`q * 2**s` (s = 0 without the encoding). Rounding to FP8 saturates at the largest finite
magnitude (240 * 2**s) instead of producing NaN, because FNUZ has no infinity.

Size. `check_runnable` refuses, before anything is allocated, a function with a tensor (argument,
result, op result, or attention's logits) that cannot run: one larger than the whole device's
memory (tiles * SRAM bytes of the IPU21) can never be placed, and one of more than
`MAX_REFERENCE_ELEMENTS` elements would need gigabytes of float64 working memory here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ml_dtypes
import numpy as np
from xdsl.dialects.builtin import (
    Float8E4M3FNUZType,
    Float16Type,
    Float32Type,
    ModuleOp,
    TensorType,
)
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from device.layouts import round_to_fp8
from device.limits import (
    MAX_ARGUMENT_BYTES,
    MAX_REFERENCE_BYTES,
    MAX_REFERENCE_WORK,
    MAX_REPEAT_COUNT,
)
from device.numerics import gelu_function
from device.target import IPU21
from ipu_dialects.graph import (
    INDEX_ELEMENT_TYPE,
    AddOp,
    AttentionOp,
    ConcatOp,
    GatherOp,
    GeluOp,
    GemmOp,
    LayerNormOp,
    RepeatOp,
    ReshapeOp,
    SliceOp,
    TransposeOp,
    YieldOp,
    check_graph_signature,
    fp8_scale,
    is_index_type,
)

FP8 = ml_dtypes.float8_e4m3fnuz

Env = dict[SSAValue, np.ndarray]

# The reference holds every live tensor in float64 (8 bytes an element), with temporaries of the
# same size: 2**28 elements is 2 GiB a tensor, a bound a workstation can still evaluate.
MAX_REFERENCE_ELEMENTS = 2**28
GELU_WORK = 32  # element operations a gelu costs an element (math.erf, in chunks)


class InterpreterError(Exception):
    """The function cannot be evaluated (wrong inputs, op without reference semantics).

    `op` is the op at fault when there is one, so that a driver can give its source location.
    """

    def __init__(self, message: str, op: Operation | None = None):
        super().__init__(message)
        self.op = op


# ----------------------------------------------------------------------------------------------
# Element types: storage arrays <-> float64 values
# ----------------------------------------------------------------------------------------------


def storage_dtype(tensor_type: TensorType) -> np.dtype:
    element = tensor_type.get_element_type()
    if isinstance(element, Float32Type):
        return np.dtype(np.float32)
    if isinstance(element, Float16Type):
        return np.dtype(np.float16)
    if isinstance(element, Float8E4M3FNUZType):
        return np.dtype(FP8)
    if element == INDEX_ELEMENT_TYPE:
        return np.dtype(np.int32)
    raise InterpreterError(f"no reference semantics for element type {element}")


def to_storage(values: np.ndarray, tensor_type: TensorType) -> np.ndarray:
    """Round float64 values to the declared element type (FP8: stored q = value / 2**scale)."""
    dtype = storage_dtype(tensor_type)
    if dtype == FP8:
        q = np.asarray(values, np.float64) / 2.0 ** fp8_scale(tensor_type)
        return round_to_fp8(q)
    with np.errstate(over="ignore"):  # IEEE rounding: past the largest finite value is inf
        return np.asarray(values, np.float64).astype(dtype)


def from_storage(stored: np.ndarray, tensor_type: TensorType) -> np.ndarray:
    """The float64 values a stored array represents (FP8: q * 2**scale)."""
    return np.asarray(stored).astype(np.float64) * 2.0 ** fp8_scale(tensor_type)


def round_to_type(values: np.ndarray, tensor_type: Attribute) -> np.ndarray:
    assert isinstance(tensor_type, TensorType)
    return from_storage(to_storage(values, tensor_type), tensor_type)


# ----------------------------------------------------------------------------------------------
# Op semantics (float64 in, float64 out; rounding happens in `run_block`)
# ----------------------------------------------------------------------------------------------


def gemm(op: GemmOp, env: Env) -> list[np.ndarray]:
    lhs, rhs = env[op.lhs], env[op.rhs]
    if op.transpose_lhs is not None:
        lhs = np.swapaxes(lhs, -1, -2)
    if op.transpose_rhs is not None:
        rhs = np.swapaxes(rhs, -1, -2)
    return [np.matmul(lhs, rhs)]  # np.matmul broadcasts the leading batch axes


def add(op: AddOp, env: Env) -> list[np.ndarray]:
    return [env[op.lhs] + env[op.rhs]]


def gelu(op: GeluOp, env: Env) -> list[np.ndarray]:
    # one definition with the device's gelu kernels (exact: `gelu`, tanh form: `gelu_tanh`)
    return [gelu_function(op.approximation)(env[op.input])]


def attention(op: AttentionOp, env: Env) -> list[np.ndarray]:
    return [np.matmul(attention_weights(op, env), env[op.value])]


def attention_weights(op: AttentionOp, env: Env) -> np.ndarray:
    """softmax(Q K^T * scale) over the keys, causal and key-masked ([..., query, key])."""
    q, k = env[op.query], env[op.key]
    logits = np.matmul(q, np.swapaxes(k, -1, -2)) * op.effective_scale()
    if op.causal is not None:
        seq = q.shape[-2]
        future = np.triu(np.ones((seq, seq), dtype=bool), k=1)  # key j > query i
        logits = np.where(future, -np.inf, logits)
    if op.key_mask is not None:
        return key_masked_weights(op, logits, env[op.key_mask])
    logits = logits - logits.max(axis=-1, keepdims=True)  # stable softmax over keys
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def key_masked_weights(op: AttentionOp, logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Keys whose mask entry is 0 get no weight in any query row of their batch index; a row
    that sees no key at all (every key masked) has no weight (its output is zeros), as torch's
    SDPA export writes it (`Where(IsNaN(p), 0, p)`) and as the device's blocked kernel leaves
    it (running sum 0)."""
    outside = (mask != 0) & (mask != 1)
    if outside.any():
        where = tuple(int(i) for i in np.argwhere(outside)[0])
        raise InterpreterError(
            f"graph.attention: key_mask value {int(mask[where])} at {list(where)} is not 0 "
            "(masked) or 1 (attended)", op)
    logits = np.where(mask[..., None, None, :] != 0, logits, -np.inf)
    row_max = logits.max(axis=-1, keepdims=True)
    seen = np.isfinite(row_max)  # the row attends to at least one key
    weights = np.where(seen, np.exp(logits - np.where(seen, row_max, 0.0)), 0.0)
    total = weights.sum(axis=-1, keepdims=True)
    return weights / np.where(seen, total, 1.0)


def layer_norm(op: LayerNormOp, env: Env) -> list[np.ndarray]:
    x = env[op.input]
    mean = x.mean(axis=-1, keepdims=True)
    variance = np.square(x - mean).mean(axis=-1, keepdims=True)  # biased, as torch and ONNX
    normalized = (x - mean) / np.sqrt(variance + op.eps.value.data)
    return [normalized * env[op.weight] + env[op.bias]]


def reshape(op: ReshapeOp, env: Env) -> list[np.ndarray]:
    result = op.result.type
    assert isinstance(result, TensorType)
    return [env[op.input].reshape(result.get_shape())]


def transpose(op: TransposeOp, env: Env) -> list[np.ndarray]:
    return [np.transpose(env[op.input], op.permutation.get_values())]


def slice_(op: SliceOp, env: Env) -> list[np.ndarray]:
    bounds = zip(op.starts.get_values(), op.ends.get_values(), op.steps.get_values())
    return [env[op.input][tuple(slice(*b) for b in bounds)]]


def concat(op: ConcatOp, env: Env) -> list[np.ndarray]:
    return [np.concatenate([env[v] for v in op.inputs], axis=op.axis.value.data)]


def gather(op: GatherOp, env: Env) -> list[np.ndarray]:
    table, indices = env[op.table], env[op.indices].astype(np.int64)
    rows = table.shape[0]
    outside = (indices < 0) | (indices >= rows)
    if outside.any():
        where = tuple(int(i) for i in np.argwhere(outside)[0])
        raise InterpreterError(
            f"graph.gather: index {int(indices[where])} at {list(where)} of the indices is "
            f"outside the table's {rows} rows (0 <= index < {rows})", op)
    return [table[indices]]


def repeat(op: RepeatOp, env: Env) -> list[np.ndarray]:
    carried = [env[v] for v in op.carried]
    invariants = [env[v] for v in op.invariants]
    sequences = [env[v] for v in op.sequences]
    block = op.body.block
    for i in range(op.count.value.data):
        inner: Env = dict(zip(block.args, [*carried, *invariants, *(s[i] for s in sequences)]))
        carried = run_block(block, inner)
    return carried


# Each function takes the op class it is keyed by; mypy cannot tie a value's parameter type to
# its key, so the op parameter is Any here (`run_block` looks functions up by `type(op)`).
SEMANTICS: dict[type[Operation], Callable[[Any, Env], list[np.ndarray]]] = {
    GemmOp: gemm,
    AddOp: add,
    GeluOp: gelu,
    AttentionOp: attention,
    LayerNormOp: layer_norm,
    ReshapeOp: reshape,
    TransposeOp: transpose,
    SliceOp: slice_,
    ConcatOp: concat,
    GatherOp: gather,
    RepeatOp: repeat,
}


def run_block(block: Block, env: Env) -> list[np.ndarray]:
    """Evaluate a block's ops in order; returns the values of its terminator."""
    for op in block.ops:
        if isinstance(op, ReturnOp | YieldOp):
            return [env[v] for v in op.operands]
        semantics = SEMANTICS[type(op)]  # check_runnable vetted every op
        for result, value in zip(op.results, semantics(op, env), strict=True):
            if _JITTER:
                value = _JITTER[-1].accumulation(op, env, value)
            env[result] = round_to_type(value, result.type)
            if _JITTER:
                env[result] = _JITTER[-1].neighbour(env[result], result.type)
    raise InterpreterError("block has no terminator")


# ----------------------------------------------------------------------------------------------
# Rounding spread: how far a correct device may be from the reference
# ----------------------------------------------------------------------------------------------

# Unit roundoff of a GEMM's partial sums, by input element type, and whether it is taken once
# per 64-deep AMP block (FP8: the FP16 partials are rounded after every block) or once per
# term (FP32 sums, an upper bound for any summation order).
ACCUMULATION = {"f8E4M3FNUZ": (2.0**-11, "block"), "f16": (2.0**-24, "term"),
                "f32": (2.0**-24, "term")}
AMP_DEPTH = 64
# Unit roundoff of attention's probabilities P, by input element type: the blocked kernels
# store P = exp(s - m) at the inputs' precision for P . V and sum the rounded P
# (device/model/kernels_attention_blocked.py), so each weight is off by up to this relative
# amount, and the output by up to unit x sum_k w_k |v_k - out| <= unit x (w . |v| + |out|).
PROBABILITY_ROUNDOFF = {"f16": 2.0**-11, "f32": 2.0**-24}

_JITTER: list[Jitter] = []


class Jitter:
    """One perturbed evaluation: every op result that is rounded to its type is moved one
    step (its type's spacing) up or down at random, a GEMM's value first by its
    accumulation's error bound (unit roundoff x roundings x sum |a||b|, random sign), and an
    attention's by the bound of its rounded probabilities (`PROBABILITY_ROUNDOFF`)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def signs(self, shape: tuple[int, ...]) -> np.ndarray:
        return self.rng.choice((-1.0, 1.0), size=shape)

    def accumulation(self, op: Operation, env: Env, value: np.ndarray) -> np.ndarray:
        if isinstance(op, AttentionOp):
            return value + self.signs(np.shape(value)) * self.probability_bound(op, env, value)
        if not isinstance(op, GemmOp):
            return value
        lhs_type = op.lhs.type
        assert isinstance(lhs_type, TensorType)
        unit, per = ACCUMULATION[str(lhs_type.get_element_type())]
        lhs, rhs = np.abs(env[op.lhs]), np.abs(env[op.rhs])
        if op.transpose_lhs is not None:
            lhs = np.swapaxes(lhs, -1, -2)
        if op.transpose_rhs is not None:
            rhs = np.swapaxes(rhs, -1, -2)
        depth = lhs.shape[-1]
        roundings = -(-depth // AMP_DEPTH) if per == "block" else depth
        bound = unit * roundings * np.matmul(lhs, rhs)
        return value + self.signs(np.shape(value)) * bound

    @staticmethod
    def probability_bound(op: AttentionOp, env: Env, value: np.ndarray) -> np.ndarray:
        query_type = op.query.type
        assert isinstance(query_type, TensorType)
        unit = PROBABILITY_ROUNDOFF.get(str(query_type.get_element_type()), 0.0)
        weights = attention_weights(op, env)
        return unit * (np.matmul(weights, np.abs(env[op.value])) + np.abs(value))

    def neighbour(self, rounded: np.ndarray, tensor_type: Attribute) -> np.ndarray:
        assert isinstance(tensor_type, TensorType)
        return round_to_type(rounded + self.signs(np.shape(rounded)) * spacing(rounded, tensor_type),
                             tensor_type)


def spacing(values: np.ndarray, tensor_type: TensorType) -> np.ndarray:
    """The distance from each value to the next representable one away from zero (FP8: at
    the type's scale; saturated and non-finite values: 0)."""
    dtype = storage_dtype(tensor_type)
    if dtype == FP8:
        scale = 2.0 ** fp8_scale(tensor_type)
        q = np.abs(np.asarray(values, np.float64)) / scale
        with np.errstate(divide="ignore"):
            exponent = np.floor(np.log2(q, where=q > 0, out=np.full(q.shape, -np.inf)))
        step = np.exp2(np.maximum(exponent, -7) - 3) * scale
        return np.where(q >= FP8_LARGEST, 0.0, step)
    stored = np.asarray(values).astype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        step = np.abs(np.nextafter(np.abs(stored), dtype.type(np.inf)).astype(np.float64)
                      - np.abs(stored).astype(np.float64))
    return np.where(np.isfinite(step), step, 0.0)


FP8_LARGEST = 240.0


def rounding_spread(module: ModuleOp, inputs: Sequence[np.ndarray], function: str | None = None,
                    runs: int = 8, seed: int = 0,
                    reference: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """Per result element, the largest distance from the reference of `runs` perturbed
    evaluations (`Jitter`), in the units of the stored results `run_function` returns (FP8:
    codes q): how much the answer moves when every rounding lands one step off and every
    GEMM sum is off by its accumulation's error bound. A well-conditioned element moves by
    about one step of its own type; an ill-conditioned one (cancellation, a layer norm of
    nearly equal values) by much more. `reference`: `run_function`'s results at these inputs,
    when the caller has them already (a reference run of a real-size program takes minutes)."""
    if reference is None:
        reference = run_function(module, inputs, function)
    reference = [np.asarray(r, np.float64) for r in reference]
    spread = [np.zeros(r.shape) for r in reference]
    rng = np.random.default_rng(seed)
    for _ in range(runs):
        _JITTER.append(Jitter(rng))
        try:
            jittered = run_function(module, inputs, function)
        finally:
            _JITTER.pop()
        for total, got, want in zip(spread, jittered, reference, strict=True):
            with np.errstate(invalid="ignore"):
                moved = np.abs(np.asarray(got, np.float64) - want)
            np.fmax(total, np.where(np.isfinite(moved), moved, 0.0), out=total)
    return spread


# ----------------------------------------------------------------------------------------------
# Public API
# ----------------------------------------------------------------------------------------------


def find_function(module: ModuleOp, function: str | None = None,
                  choose_with: str | None = None) -> FuncOp:
    """The named `func.func`, or unnamed the first one.

    A driver passes `choose_with`, its way to name a function (`ipu-run`: `--function`): then
    an unnamed choice must be the only defined function and the function must have results,
    since running whichever comes first would check a function nobody chose.
    """
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if function is not None:
        funcs = [f for f in funcs if f.sym_name.data == function]
    elif choose_with is not None:  # a declaration cannot be run; don't count it as a choice
        funcs = [f for f in funcs if not f.is_declaration] or funcs
    if not funcs:
        raise InterpreterError(
            f"no func.func @{function} in the module" if function else "no func.func in the module"
        )
    if choose_with is None:
        return funcs[0]
    if len(funcs) > 1:
        names = ", ".join(f"@{f.sym_name.data}" for f in funcs)
        raise InterpreterError(f"the input holds {len(funcs)} functions ({names}): choose one "
                               f"with {choose_with}")
    if not funcs[0].function_type.outputs.data:
        raise InterpreterError(f"@{funcs[0].sym_name.data} has no results: nothing to run or "
                               f"check")
    return funcs[0]


def check_runnable(func: FuncOp) -> None:
    """A function the interpreter can evaluate: a body, graph-tensor arguments and results
    (`check_graph_signature`, naming the argument), and only ops with reference semantics."""
    if func.is_declaration:
        raise InterpreterError(
            f"func.func @{func.sym_name.data} is a declaration without a body: nothing to run", func
        )
    try:
        check_graph_signature(func)
    except VerifyException as error:  # re-raised with the function, for its source location
        raise InterpreterError(str(error), func) from None
    for op in func.body.walk():
        if type(op) not in SEMANTICS and not isinstance(op, ReturnOp | YieldOp):
            known = ", ".join(sorted(o.name for o in SEMANTICS))
            raise InterpreterError(
                f"{op.name} is not a graph op; the reference interpreter runs {known}", op
            )
    check_sizes(func)
    check_device_totals(func)
    check_reference_cost(func)


def check_tensor_size(
    what: str, shape: Sequence[int], itemsize: int | None, owner: Operation
) -> None:
    """Refuse a tensor the device can never hold (`itemsize` bytes an element; None for a
    reference-only temporary), or one too big for float64 evaluation here."""
    elements = math.prod(shape)  # Python ints: no overflow on absurd extents
    device_bytes = IPU21.tiles * IPU21.sram_bytes
    if itemsize is not None and elements * itemsize > device_bytes:
        raise InterpreterError(
            f"{what} has {elements} elements ({elements * itemsize} bytes), more than "
            f"the whole {IPU21.name} memory ({IPU21.tiles} tiles x {IPU21.sram_bytes} bytes = "
            f"{device_bytes} bytes): it can never run on the device",
            owner,
        )
    if elements > MAX_REFERENCE_ELEMENTS:
        raise InterpreterError(
            f"{what} has {elements} elements; the reference interpreter evaluates in "
            f"float64 and refuses tensors of more than 2**28 = {MAX_REFERENCE_ELEMENTS} elements "
            f"({MAX_REFERENCE_ELEMENTS * 8 >> 30} GiB each)",
            owner,
        )


def graph_tensor(value_type: Attribute) -> TensorType:
    """The type of a graph value (`check_runnable` has vetted: every one is a tensor)."""
    assert isinstance(value_type, TensorType)
    return value_type


def itemsize_of(value_type: Attribute) -> int:
    """Stored bytes per element of a graph tensor type (verified: f32, f16 or FP8)."""
    return storage_dtype(graph_tensor(value_type)).itemsize


def check_sizes(func: FuncOp) -> None:
    """Every tensor the evaluation would allocate passes `check_tensor_size`, checked before
    anything is allocated (NumPy would otherwise die with a MemoryError, or the OS kill us)."""
    for name, arg in zip(input_names(func), func.body.block.args):
        check_tensor_size(
            f"argument %{name} {arg.type}", graph_tensor(arg.type).get_shape(),
            itemsize_of(arg.type), func
        )
    for i, result_type in enumerate(func.function_type.outputs.data):
        check_tensor_size(
            f"result #{i} {result_type}", graph_tensor(result_type).get_shape(),
            itemsize_of(result_type), func
        )
    for op in func.body.walk():
        for result in op.results:
            name = f"%{result.name_hint}" if result.name_hint else f"result #{result.index}"
            check_tensor_size(
                f"{name} {result.type}", graph_tensor(result.type).get_shape(),
                itemsize_of(result.type), op
            )
        if isinstance(op, AttentionOp):  # the reference's logits are [..., query seq, key seq]
            query, key = op.query.type, op.key.type
            assert isinstance(query, TensorType) and isinstance(key, TensorType)
            logits = [*query.get_shape()[:-1], key.get_shape()[-2]]
            dims = "x".join(map(str, logits))
            check_tensor_size(f"the float64 logits [{dims}] of this attention", logits, None, op)


def check_device_totals(func: FuncOp) -> None:
    """The arguments live on the device all at once, and so do the results: each sum of
    stored bytes is at most `MAX_ARGUMENT_BYTES` (each tensor alone is bounded above)."""
    for what, types in (("arguments", [a.type for a in func.body.block.args]),
                        ("results", list(func.function_type.outputs.data))):
        total = sum(math.prod(graph_tensor(t).get_shape()) * itemsize_of(t) for t in types)
        if total > MAX_ARGUMENT_BYTES:
            raise InterpreterError(
                f"the {len(types)} {what} of @{func.sym_name.data} hold {total} bytes together, "
                f"more than the whole {IPU21.name} memory ({MAX_ARGUMENT_BYTES} bytes: "
                "MAX_ARGUMENT_BYTES, device/limits.py): they can never be on the device at once",
                func)


def elements_of(value: SSAValue) -> int:
    return math.prod(graph_tensor(value.type).get_shape())


def op_work(op: Operation) -> int:
    """The reference's work for one evaluation of `op`, in element operations: a GEMM's
    multiply-adds count 1/16 each (BLAS), a gelu's elements `GELU_WORK` each (math.erf per
    element); every result is rounded to its type (a few passes over it)."""
    results = sum(elements_of(r) for r in op.results)
    if isinstance(op, GemmOp):
        lhs = graph_tensor(op.lhs.type).get_shape()
        depth = lhs[-2] if op.transpose_lhs is not None else lhs[-1]
        return results * depth // 16 + 4 * results
    if isinstance(op, AttentionOp):
        query, key, value = (graph_tensor(v.type).get_shape() for v in (op.query, op.key, op.value))
        logits = math.prod(query[:-1]) * key[-2]
        return logits * (query[-1] + value[-1]) // 16 + 8 * logits + 4 * results
    if isinstance(op, GeluOp):
        return GELU_WORK * results
    return 8 * results


def block_cost(block: Block) -> tuple[int, int]:
    """(work, elements held) of one evaluation of `block`: the environment keeps every value
    of the block; a repeat's body holds one iteration's values at a time."""
    work = held = 0
    for op in block.ops:
        held += sum(elements_of(r) for r in op.results)
        if isinstance(op, RepeatOp):
            count = op.count.value.data
            if count > MAX_REPEAT_COUNT:
                raise InterpreterError(
                    f"graph.repeat runs {count} times (at most {MAX_REPEAT_COUNT}, the "
                    "iterations of a device loop: MAX_REPEAT_COUNT, device/limits.py)", op)
            body_work, body_held = block_cost(op.body.block)
            work, held = work + count * body_work + op_work(op), held + body_held
        else:
            work += op_work(op)
    return work, held


def check_reference_cost(func: FuncOp) -> None:
    """The reference's work (every op once per iteration of its enclosing repeats) and its
    float64 memory are bounded before it starts (`MAX_REFERENCE_WORK`, `MAX_REFERENCE_BYTES`):
    a 100-byte `graph.repeat 1000000000` or a gelu on a huge tensor is a diagnostic, not hours."""
    work, held = block_cost(func.body.block)
    largest = max((elements_of(r) for op in func.body.walk() for r in op.results), default=0)
    held_bytes = 8 * (held + sum(elements_of(a) for a in func.body.block.args) + 2 * largest)
    if work > MAX_REFERENCE_WORK:
        raise InterpreterError(
            f"the NumPy reference would do about {work} element operations (every op once per "
            f"repeat iteration; at most {MAX_REFERENCE_WORK}: MAX_REFERENCE_WORK, "
            "device/limits.py)", func)
    if held_bytes > MAX_REFERENCE_BYTES:
        raise InterpreterError(
            f"the NumPy reference would hold about {held_bytes} bytes of float64 values (at most "
            f"{MAX_REFERENCE_BYTES}: MAX_REFERENCE_BYTES, device/limits.py)", func)


def input_names(func_op: FuncOp) -> list[str]:
    """Argument names from the block-argument name hints (`%a` -> "a"), else `arg{i}`."""
    return [arg.name_hint or f"arg{i}" for i, arg in enumerate(func_op.body.block.args)]


def check_numeric(name: str, array: np.ndarray) -> None:
    """An input holds real numbers: integers or floats (FP8 inputs as float8_e4m3fnuz q)."""
    dtype = array.dtype
    if dtype.kind in "fiu" or dtype == FP8:
        return
    raise InterpreterError(
        f"input {name}: dtype {dtype} is not a numeric type; inputs are integer or floating-point "
        "arrays (FP8 arguments as float8_e4m3fnuz)"
    )


def inputs_in_order(func: FuncOp, inputs: Mapping[str, np.ndarray]) -> list[np.ndarray]:
    """Inputs given by argument name (`input_names`), in argument order; every argument
    once."""
    names = input_names(func)
    unknown = sorted(set(inputs) - set(names))
    if unknown:
        raise InterpreterError(f"@{func.sym_name.data} has no argument named "
                               f"{', '.join(unknown)} (arguments: {', '.join(names)})")
    missing = [name for name in names if name not in inputs]
    if missing:
        raise InterpreterError(f"@{func.sym_name.data}: no input for argument "
                               f"{', '.join(missing)} (given: {', '.join(inputs) or 'none'})")
    return [inputs[name] for name in names]


def index_bound(func: FuncOp, arg: SSAValue) -> int:
    """The exclusive upper bound of an index argument's valid values: the fewest table rows of
    the gathers that read it, 2 for an attention's key mask (0 or 1), 1 when nothing reads it
    (0 is the only index valid everywhere)."""
    rows = [graph_tensor(op.table.type).get_shape()[0] for op in func.body.walk()
            if isinstance(op, GatherOp) and op.indices is arg]
    rows += [2 for op in func.body.walk()  # a key mask: 0 (masked) or 1
             if isinstance(op, AttentionOp) and op.key_mask is arg]
    return min(rows, default=1)


def index_input(name: str, array: np.ndarray) -> np.ndarray:
    """An i32 argument's input: integers (any integer dtype, or floats holding integers) that
    fit in i32; torch's int64 token ids pass when their values fit."""
    values = array.astype(np.float64)
    if not np.array_equal(values, np.round(values)):
        raise InterpreterError(f"input {name}: an i32 argument takes integers, got non-integral "
                               f"values ({array.dtype})")
    info = np.iinfo(np.int32)
    if values.size and (values.min() < info.min or values.max() > info.max):
        raise InterpreterError(f"input {name}: values {values.min():.0f}..{values.max():.0f} "
                               "do not fit in i32")
    return values


def run_function(
    module: ModuleOp, inputs: Sequence[np.ndarray] | Mapping[str, np.ndarray],
    function: str | None = None,
) -> list[np.ndarray]:
    """Run the named (default: first) `func.func` on `inputs`, in argument order or as a
    mapping from argument name (`input_names`: `%x` is "x") to array.

    Each input is rounded to its argument's declared type (FP8 inputs are the stored q values);
    results come back as arrays of the declared storage dtype (float32, float16, float8_e4m3fnuz).
    """
    func = find_function(module, function)
    func.verify()
    check_runnable(func)
    if isinstance(inputs, Mapping):
        inputs = inputs_in_order(func, inputs)
    args = func.body.block.args
    if len(inputs) != len(args):
        raise InterpreterError(
            f"@{func.sym_name.data} takes {len(args)} inputs ({', '.join(input_names(func))}), "
            f"got {len(inputs)}"
        )
    env: Env = {}
    for name, arg, array in zip(input_names(func), args, inputs):
        arg_type = arg.type
        assert isinstance(arg_type, TensorType)  # check_runnable
        check_numeric(name, np.asarray(array))
        if tuple(np.shape(array)) != tuple(arg_type.get_shape()):
            raise InterpreterError(
                f"input {name}: shape {tuple(np.shape(array))} does not match the argument type "
                f"{arg_type}"
            )
        if is_index_type(arg_type):
            env[arg] = index_input(name, np.asarray(array))
            continue
        # an FP8 input array holds the stored q; its value is q * 2**scale
        env[arg] = round_to_type(from_storage(np.asarray(array), arg_type), arg_type)
    values = run_block(func.body.block, env)
    result_types = func.function_type.outputs.data
    return [to_storage(v, graph_tensor(t)) for v, t in zip(values, result_types)]

