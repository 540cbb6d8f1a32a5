"""Shape helpers shared by the dialects' verifiers (no IR definitions)."""

from collections.abc import Sequence

from xdsl.utils.exceptions import VerifyException


def fmt_shape(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def broadcast_shapes(
    lhs: Sequence[int], rhs: Sequence[int], describe: str
) -> tuple[int, ...]:
    """NumPy broadcasting of two shapes; `describe` names them in the error message."""
    rank = max(len(lhs), len(rhs))
    a = (1,) * (rank - len(lhs)) + tuple(lhs)
    b = (1,) * (rank - len(rhs)) + tuple(rhs)
    out: list[int] = []
    for axis, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise VerifyException(
                f"{describe} {fmt_shape(lhs)} and {fmt_shape(rhs)} do not broadcast: "
                f"extents {x} and {y} at axis {axis - rank} (counted from the last axis)"
            )
        out.append(max(x, y) if 0 not in (x, y) else 0)
    return tuple(out)
