"""What a run keeps: checkpoints, their checks, restoring, RNG, the init model and the final one."""
