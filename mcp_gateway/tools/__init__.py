"""Tool families. Each module here declares `TOOLS: list[ToolSpec]`; the registry imports every
module of this package, so a new family needs no change anywhere else."""
