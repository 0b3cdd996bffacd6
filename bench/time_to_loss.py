"""`python bench/time_to_loss.py …`: the time-to-quality benchmark, kept where every command
names it. It lives in bench/ttl/ (time_to_loss.py and its ttl_*.py modules)."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    sys.path[:0] = [str(HERE / "ttl"), str(HERE)]
    runpy.run_path(str(HERE / "ttl" / "time_to_loss.py"), run_name="__main__")
