"""Elementwise functions with one definition for the reference interpreter and the device
model: the exact (erf) GeLU. NumPy has no erf, so `math.erf` is applied per element (float64,
correctly rounded to within an ulp), which both sides then round to their storage precision.
"""

from __future__ import annotations

import math

import numpy as np

CHUNK = 1 << 14  # elements evaluated at once: np.vectorize builds an object array of its input
scalar_erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu_chunk(x: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        y = 0.5 * x * (1.0 + scalar_erf(x / math.sqrt(2.0)))
    return np.where(np.isinf(x), np.maximum(x, 0.0), y)


def gelu(x: np.ndarray) -> np.ndarray:
    """x/2 * (1 + erf(x / sqrt 2)) in float64, with the limits gelu(-inf) = 0 and
    gelu(+inf) = +inf (the formula gives -inf * 0 = NaN at -inf). Evaluated `CHUNK` elements
    at a time, so its temporaries (an object array of Python floats among them: 12 GB for the
    whole of a 14336x16384 tensor) stay small; the result is the same per element."""
    x = np.asarray(x, np.float64)
    flat, out = x.reshape(-1), np.empty(x.size, np.float64)
    for start in range(0, flat.size, CHUNK):
        out[start:start + CHUNK] = gelu_chunk(flat[start:start + CHUNK])
    return out.reshape(x.shape)
