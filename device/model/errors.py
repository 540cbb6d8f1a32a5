"""The one exception the executable model raises for a package it cannot run."""

from __future__ import annotations

from xdsl.utils.exceptions import DiagnosticException


class ModelError(DiagnosticException, ValueError):
    """A package (or its inputs) that the model cannot execute; the message names the step,
    tile, address or symbol at fault. Exchange faults that hardware would survive (lost or
    misdirected words) are not raised: they are collected in `RunResult.exchange_errors`."""
