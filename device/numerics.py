"""Elementwise functions with one definition for the reference interpreter and the device
model: the exact (erf) GeLU. NumPy has no erf, so `math.erf` is applied per element (float64,
correctly rounded to within an ulp), which both sides then round to their storage precision.
"""

from __future__ import annotations

import math

import numpy as np

erf = np.vectorize(math.erf, otypes=[np.float64])


def gelu(x: np.ndarray) -> np.ndarray:
    """x/2 * (1 + erf(x / sqrt 2)) in float64, with the limits gelu(-inf) = 0 and
    gelu(+inf) = +inf (the formula gives -inf * 0 = NaN at -inf)."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):
        y = 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))
    return np.where(np.isinf(x), np.maximum(x, 0.0), y)
