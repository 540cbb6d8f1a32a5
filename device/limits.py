"""Input limits: what a package, an IR file and an input file are held to (one place; the
reasons are in docs/internals.md, "Limits on untrusted input").

Every limit is checked before the work it bounds, in time and memory proportional to the
input's own size (never to what the input claims), and a violation is a diagnostic that
names the limit. Hardware numbers are `device/target.py`'s; these are choices.
"""

from __future__ import annotations

from device.target import IPU21

# ---- packages (device/package_metadata.py, device/package_schema.py) -------------------------
METADATA, ARCHIVE, ASSEMBLY, SOURCE = "metadata.json", "program.npz", "program.s", "source.mlir"
# Byte limits per file: generous for a 1472-tile program, far below what would hurt a host.
FILE_LIMITS = {METADATA: 64 << 20, ARCHIVE: 1 << 30, ASSEMBLY: 256 << 20, SOURCE: 16 << 20}
MAX_STEPS = 1 << 20  # entries of the program, loops folded
MAX_ROWS = 1 << 20
MAX_TENSORS = 1 << 12
MAX_RANK = 8
MAX_TEXT = 4096  # names, provenance, the pipeline spelling
MAX_LOOP_COUNT = 1 << 20
# Steps a run executes, loops unrolled: bounds a model run's time. A step costs the model
# about 1.5 ms at least, so 2**15 steps are under a minute; the programs we build execute far
# fewer (a 4096^3 GEMM on 1472 tiles 226, the GPT-2 block of examples/onnx 3,545).
MAX_EXECUTED_STEPS = 1 << 15
# Executed (step, tile) pairs: a step costs the model per tile taking part (the 4096^3 GEMM:
# 318,208; the GPT-2 block: 176,990).
MAX_EXECUTED_TILE_STEPS = 1 << 22
MAX_ARRAY_BYTES = 2 << 30  # all arrays of program.npz, uncompressed
NPY_HEADER_LIMIT = 1 << 16

# ---- IR text (tools/source_locations.py; every tool parses through it) -----------------------
MAX_SOURCE_BYTES = 256 << 20  # an .mlir file (a regular file: never a FIFO or a device)
# Brackets open at once ((, [, {, <): the parser, verifier and printer recurse per level, and
# Python's stack holds about 150 nested regions; 128 leaves room for the tools' own frames.
MAX_NESTING = 128
# Elements a `dense<...>` attribute may claim: xDSL expands a splat into one Python list entry
# per element (8 bytes each), so a 130-byte splat can claim gigabytes.
MAX_DENSE_ELEMENTS = 1 << 22

# ---- graph functions (interpreters/graph.py check_runnable, before the reference or a compile) --
DEVICE_BYTES = IPU21.tiles * (IPU21.memory_end - IPU21.memory_base)
# Arguments (and, apart, results) live on the device all at once: their sum must fit it.
MAX_ARGUMENT_BYTES = DEVICE_BYTES
# The reference holds every value of the function as float64: bounds its memory.
MAX_REFERENCE_BYTES = 8 << 30
# The reference's work, in element operations (a GEMM's multiply-adds count 1/16 each: BLAS;
# a gelu's elements 32 each: erf per element), every op counted once per enclosing repeat
# iteration: about a minute of NumPy at most.
MAX_REFERENCE_WORK = 1 << 34
MAX_REPEAT_COUNT = MAX_EXECUTED_STEPS  # every iteration executes a step at least

# ---- input files (tools/run_io.py: --input, --inputs) ----------------------------------------
# An --input .npy or an --inputs member: a regular file, its header read first (at most this
# long) and checked against the argument's shape and a floating-point dtype before any data is
# read, so its size is the argument's (bounded above) times at most 8 bytes per element.
INPUT_HEADER_LIMIT = NPY_HEADER_LIMIT
MAX_INPUT_FILE_BYTES = 8 * MAX_ARGUMENT_BYTES + NPY_HEADER_LIMIT

# ---- ONNX (frontend/onnx) --------------------------------------------------------------------
MAX_ONNX_BYTES = 2 << 30  # protobuf's own limit for one model file
MAX_ONNX_NODES = 1 << 16
