"""What the passes and the package writer compute from the IR without rewriting it.

One module per concern, below the operators and passes (docs/internals.md, "Layers"): the
module's pipeline configuration and target (`pipeline_config`), the shard geometry of a mid
format (`shard_geometry`), first-fit SRAM placement (`memory_allocator`).
"""
