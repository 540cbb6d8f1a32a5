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
MAX_LOOP_COUNT = 1 << 20  # iterations of one loop (a tile.loop, a graph.repeat when compiled)
# Steps the compiler builds when it expands loops (planning/program_size.py): rows per
# iteration of an exchange's row loops, the package writer's steps (a folded loop's body
# twice). A package holds at most MAX_STEPS; the folded bodies' second copies at most as many.
MAX_EXPANDED_STEPS = 2 * MAX_STEPS
# Loops open at once: per step the schema records the counts of its enclosing loops; IR nests
# at most MAX_NESTING brackets, so a program we compile nests fewer loops than that.
MAX_LOOP_DEPTH = 128

# A loaded package is untrusted: what its run would cost the model is bounded before it runs.
# A run's model time is about MODEL_SECONDS_PER_STEP per executed step plus
# MODEL_SECONDS_PER_TILE_STEP per executed (step, tile) pair, loops unrolled. Measured (docs/
# internals.md, "Limits on untrusted input"): 4.2e-4 to 8.1e-4 s a pair on five packages (the
# GPT-2 block of examples/onnx on 1472 tiles: 3,545 steps, 176,990 pairs, 94 s); the
# constants are about half the fastest, so the estimate is a floor.
MODEL_SECONDS_PER_STEP = 1e-3
MODEL_SECONDS_PER_TILE_STEP = 2e-4
# The default bound on that estimate. A 12-layer GPT-2-small stack on 1472 tiles (12 of those
# blocks: 42,540 steps, 2.1 million pairs) is estimated at 467 s, about an eighth of it; a
# 4.7 KB package looping 2**20 times around a few steps (hours) is refused before it runs.
# `ipu-run PKG --max-model-seconds S` (or `Package.load(dir, max_model_seconds=S)`, `inf`
# for no bound) raises it for a run someone means to be long; a package compiled in this
# process is the compiler's own and is not held to it.
MAX_MODEL_SECONDS = 3600.0
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
MAX_REFERENCE_WORK = 1 << 35
MAX_REPEAT_COUNT = MAX_LOOP_COUNT  # a graph.repeat compiles to a tile.loop of its count

# ---- input files (tools/run_io.py: --input, --inputs) ----------------------------------------
# An --input .npy or an --inputs member: a regular file, its header read first (at most this
# long) and checked against the argument's shape and a floating-point dtype before any data is
# read, so its size is the argument's (bounded above) times at most 8 bytes per element.
INPUT_HEADER_LIMIT = NPY_HEADER_LIMIT
MAX_INPUT_FILE_BYTES = 8 * MAX_ARGUMENT_BYTES + NPY_HEADER_LIMIT

# ---- ONNX (frontend/onnx) --------------------------------------------------------------------
MAX_ONNX_BYTES = 2 << 30  # protobuf's own limit for one model file
MAX_ONNX_NODES = 1 << 16
# ipu-import --repeat-layers (frontend/repeat_layers.py): the run search's NumPy elements (the
# op count per block length it considers: about 2**27 for 16,000 ops, seconds) and the IR ops
# of the runs it tries to match (16 us each; a real stack matches at the first run it tries).
MAX_REPEAT_ELEMENTS = 1 << 28
MAX_REPEAT_VISITS = 1 << 20
