"""Key padding masks traced from an integer model input to attention's logits (both importers).

Hugging Face's BERT turns `attention_mask` ([batch, keys] of 0/1) into a mask on the logits
with a chain of small ops: transformers 5 indexes it into a boolean [batch, 1, queries, keys]
(`index`/`GatherND` with constant indices, `and` with an all-true constant, `expand`), and
torch's SDPA (or its ONNX export) makes that `Where(mask, 0, -inf)` added to the logits; older
code writes `(1 - mask[:, None, None, :]) * large_negative`. No graph op computes such a chain
(the graph's integer tensors are inputs), so the importers follow it symbolically instead: a
value computed from the mask input alone (and constants) is a `KeyMaskTrace`, which says for
each of its elements which mask entry it reads (`entry`, a flat index into the input) and what
it is when that entry is 1 (`kept`) and when it is 0 (`masked`). Ops that move elements
(reshape, expand, index, gather, transpose, ...) move the three arrays alike; elementwise ops
(cast, and, where, sub, mul, ...) are evaluated on `kept` and on `masked`, and need every
traced operand to read the same entry at each element. That is exact for a mask of 0/1
entries, the only values `graph.attention`'s key_mask takes (the reference and the device
refuse others).

At attention, `key_padding` checks that the traced value, broadcast to the logits
[batch..., heads, queries, keys], reads entry (batch, key) at every element and is 0 (or true)
where the entry is 1 and at most `MASKED_BIAS` (or false) where it is 0: a key padding mask,
which becomes the attention's `key_mask` operand (the mask input itself). Where the entry is
1 it may also be the causal mask (GPT-2 with padding: transformers ands the two), which
becomes the attention's causal flag. Anything else is refused by name.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# The largest additive bias taken for "masked": exp(-1e4 + any real logit spread) is 0 in f32,
# so such a key gets no weight, as with -inf. (A row whose keys are all masked differs: the
# graph's is zeros, an additive finite bias gives the mean of the values.)
MASKED_BIAS = -1.0e4


@dataclass(frozen=True)
class KeyMaskTrace:
    """A value computed from one integer input (`argument`, the graph's i32 argument for it)."""

    argument: Any  # the GraphValue of the mask input
    name: str  # the input's name, for diagnostics
    mask_shape: tuple[int, ...]
    entry: np.ndarray  # int64, per element: the flat index of the mask entry it reads
    kept: np.ndarray  # per element: its value when that entry is 1
    masked: np.ndarray  # ... and when it is 0

    @classmethod
    def of_input(cls, argument: Any, name: str, shape: Sequence[int]) -> KeyMaskTrace:
        shape = tuple(shape)
        return cls(argument, name, shape, np.arange(math.prod(shape)).reshape(shape),
                   np.ones(shape, np.int64), np.zeros(shape, np.int64))

    def moved(self, move: Callable[[Any], Any]) -> KeyMaskTrace:
        """The value after an op that moves elements (the same move of all three arrays)."""
        return KeyMaskTrace(self.argument, self.name, self.mask_shape,
                            np.asarray(move(self.entry)).astype(np.int64),
                            np.asarray(move(self.kept)), np.asarray(move(self.masked)))


def elementwise(operands: Sequence[Any], compute: Callable[[list[Any]], Any]) -> KeyMaskTrace | str:
    """An elementwise op of traced operands (`KeyMaskTrace`) and constants: `compute` of the
    operands with each trace replaced by its `kept` (then `masked`) values. A reason (str)
    when the traces are of different inputs or read different entries at one element."""
    traces = [o for o in operands if isinstance(o, KeyMaskTrace)]
    first = traces[0]
    if any(t.argument is not first.argument for t in traces):
        return "it combines two different integer inputs"
    kept = np.asarray(compute([o.kept if isinstance(o, KeyMaskTrace) else o for o in operands]))
    masked = np.asarray(compute([o.masked if isinstance(o, KeyMaskTrace) else o
                                 for o in operands]))
    entries = [np.broadcast_to(t.entry, kept.shape) for t in traces]
    if any(not np.array_equal(e, entries[0]) for e in entries[1:]):
        return "it combines different entries of the mask at one element (a general mask)"
    return KeyMaskTrace(first.argument, first.name, first.mask_shape,
                        np.ascontiguousarray(entries[0]), kept, masked)


def key_padding(trace: KeyMaskTrace, logits: Sequence[int], boolean: bool) -> bool | str:
    """Whether `trace`, applied to attention logits of shape `logits`, is a key padding mask of
    its input, alone (False) or combined with the causal mask (True, GPT-2's); else why not
    (str). `boolean`: a mask of booleans (true attends), else an additive one."""
    logits = tuple(logits)
    what = f"the attention mask computed from input '{trace.name}' {list(trace.mask_shape)}"
    expected_shape = (*logits[:-3], logits[-1])
    if trace.mask_shape != expected_shape:
        return (f"{what} is not a key padding mask: graph.attention's key_mask is "
                f"{list(expected_shape)} (the batch axes, then one entry per key) for logits "
                f"{list(logits)}")
    try:
        entry, kept, masked = (np.broadcast_to(a, logits)
                               for a in (trace.entry, trace.kept, trace.masked))
    except ValueError:
        return (f"{what} has shape {list(trace.entry.shape)}, which does not broadcast to the "
                f"logits {list(logits)}")
    expected = np.arange(math.prod(expected_shape)).reshape(expected_shape)[..., None, None, :]
    if not np.array_equal(entry, np.broadcast_to(expected, logits)):
        return (f"{what} does not read entry (batch, key) at logit (batch, head, query, key): "
                "only a key padding mask (the same for every head and query) is supported")
    # where the entry is 1: everything attends, or the keys up to the query (causal)
    future = np.triu(np.ones(logits[-2:], dtype=bool), k=1) if logits[-2] == logits[-1] else None
    if boolean:
        if kept.dtype != np.bool_ or masked.dtype != np.bool_ or masked.any():
            return f"{what} is not true for an entry 1 and false for an entry 0"
        if kept.all():
            return False
        if future is not None and np.array_equal(kept, np.broadcast_to(~future, logits)):
            return True
        return f"{what} is not true for an entry 1 (nor only up to the diagonal: causal)"
    if not np.issubdtype(kept.dtype, np.floating):
        return f"{what} is not a float added to the logits"
    if np.any(masked > MASKED_BIAS) or np.any(np.isnan(masked)):
        return (f"{what} adds {float(np.nanmax(masked)) + 0.0:g} to the logits of keys whose entry "
                f"is 0; a padding mask adds -inf or a large negative number (<= {MASKED_BIAS:g})")
    if not np.any(kept):
        return False
    if future is not None and not np.any(kept[..., ~future]) and np.all(
            kept[..., future] <= MASKED_BIAS):
        return True
    return (f"{what} adds something other than 0 to the logits of keys whose entry is 1 (nor "
            "a causal mask: 0 up to the diagonal, -inf above)")
