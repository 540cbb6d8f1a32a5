"""`ipu-opt --help`'s list of passes: what each does and its options with their defaults."""

from __future__ import annotations

import dataclasses
import re
import sys
import textwrap
import typing
from collections.abc import Callable

from xdsl.passes import ModulePass

_LITERAL = re.compile(r"Literal\[(.*)\]")


def option_type(annotation: object, resolved: object = None) -> str:
    """`Literal['pad', 'reject']`, or a name for one (`IndivisibleOption`, whose `resolved`
    type is the Literal) -> `pad|reject`; `int | None` stays as written."""
    if typing.get_origin(resolved) is typing.Literal:
        return "|".join(str(value) for value in typing.get_args(resolved))
    text = str(annotation).strip("'\"")
    if text == "tuple[str, ...]":
        return "NAME,NAME,..."
    if match := _LITERAL.fullmatch(text):
        return "|".join(part.strip().strip("'\"") for part in match.group(1).split(","))
    return text


def resolved_types(pass_class: type[ModulePass]) -> dict[str, object]:
    """The pass's field types with names resolved (an option typed by an alias of a
    `Literal`); empty when some annotation does not resolve."""
    try:
        return typing.get_type_hints(pass_class)
    except (NameError, TypeError):
        return {}


def option_values(pass_class: type[ModulePass], option: str) -> str | None:
    """The valid values of an option whose type does not list them (ours: the GEMM catalog,
    the target), else None."""
    if not pass_class.__module__.startswith("passes."):
        return None
    if option == "catalog":
        from planning.gemm_problem import CATALOG_NAMES, default_catalog_names

        default = set(default_catalog_names())
        return ("GEMM candidates: " + ", ".join(f"{n}{'*' if n in default else ''}" for n in CATALOG_NAMES))
    if option == "target":
        from device.target import IPU21

        return f"one of: {IPU21.name}"
    return None


def pass_options(pass_class: type[ModulePass]) -> list[str]:
    """`name=TYPE (default D)` for each option (a dataclass field of the pass), followed by its
    valid values where the type does not name them (`option_values`)."""
    options = []
    resolved = resolved_types(pass_class)
    for option in dataclasses.fields(pass_class):
        default = "" if option.default is dataclasses.MISSING else (
            f" (default {str(option.default).lower()})")
        if option.default == ():
            default = " (default: those marked *)" if option.name == "catalog" else ""
        options.append(f"{option.name}={option_type(option.type, resolved.get(option.name))}"
                       f"{default}")
        if (values := option_values(pass_class, option.name)) is not None:
            options[-1] += "\n" + values
    return options


def pass_description(pass_class: type[ModulePass]) -> str:
    """The first paragraph of the pass module's docstring without its "`name`: " head (our
    passes start that way), else of the class docstring, else of the module docstring."""
    module_doc = sys.modules[pass_class.__module__].__doc__ or ""
    head = re.match(rf"\s*`{re.escape(pass_class.name)}[^`]*`:\s*", module_doc)
    text = module_doc[head.end():] if head else (pass_class.__doc__ or module_doc)
    paragraph = " ".join(text.strip().split("\n\n")[0].split())
    return paragraph or f"xDSL's {pass_class.__name__}"


def passes_help(passes: dict[str, Callable[[], type[ModulePass]]], width: int = 88) -> str:
    lines = ["passes (-p 'name{option=value ...},...'):"]
    for name, factory in passes.items():
        pass_class = factory()
        lines.append(f"  {name}")
        lines += textwrap.wrap(pass_description(pass_class), width,
                               initial_indent=" " * 6, subsequent_indent=" " * 6)
        for option in pass_options(pass_class):
            head, _, values = option.partition("\n")
            lines.append(f"      - {head}")
            if values:
                lines += textwrap.wrap(values, width, initial_indent=" " * 8,
                                       subsequent_indent=" " * 8)
    return "\n".join(lines)
