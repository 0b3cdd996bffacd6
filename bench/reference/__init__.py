"""The compact reference model and loop the product's step is measured against.

Its report and scales use the GPU bench's datasheet, roofline and plan shapes, which live in
bench/gpu/ and import one another by flat name, so that folder joins the path here."""

import sys
from pathlib import Path

_GPU_BENCH = str(Path(__file__).resolve().parent.parent / "gpu")
if _GPU_BENCH not in sys.path:
    sys.path.append(_GPU_BENCH)
