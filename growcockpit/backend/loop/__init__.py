"""The training loop: the stage engine, one step, its forward, optimizer and per-stage recipes."""
