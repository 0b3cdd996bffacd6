"""growcockpit: design, run and steer growing-transformer training schedules."""

__version__ = "0.1.0"
