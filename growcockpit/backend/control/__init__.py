"""The engine's connections: commands in at a step boundary, events out to sinks and status.json."""
