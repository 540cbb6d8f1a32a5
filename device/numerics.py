"""Elementwise functions with one definition for the reference interpreter and the device
model: the GeLU, exact (erf) and in its tanh form. NumPy has no erf, so `math.erf` is applied
per element (float64, correctly rounded to within an ulp), which both sides then round to
their storage precision; the tanh form is NumPy's float64 `tanh`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from xdsl.utils.str_enum import StrEnum

CHUNK = 1 << 14  # elements evaluated at once: np.vectorize builds an object array of its input
scalar_erf = np.vectorize(math.erf, otypes=[np.float64])
TANH_GELU_SCALE = math.sqrt(2.0 / math.pi)  # tanh form: the inner polynomial's factor
TANH_GELU_CUBIC = 0.044715  # and its cubic coefficient (Hendrycks & Gimpel 2016)


class GeluApproximation(StrEnum):
    """A GeLU other than the exact one (which is the default and has no member): `tanh` is
    x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))), ONNX's `approximate="tanh"`, torch's
    `approximate='tanh'`, Hugging Face's `gelu_new`."""

    TANH = "tanh"


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


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    """x/2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3), in float64, evaluated as the
    equal x / (1 + exp(-2u)): `1 + tanh(u)` cancels for negative x (at x = -5 it keeps half
    of float64's digits), the sigmoid form does not. The same limits at +-inf as `gelu`."""
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        u = TANH_GELU_SCALE * (x + TANH_GELU_CUBIC * x * x * x)
        y = x / (1.0 + np.exp(-2.0 * u))
    return np.where(np.isinf(x), np.maximum(x, 0.0), y)


def gelu_function(approximate: GeluApproximation | None) -> Callable[[np.ndarray], np.ndarray]:
    """The GeLU `approximate` names: the exact one for None."""
    return gelu if approximate is None else {GeluApproximation.TANH: gelu_tanh}[approximate]
