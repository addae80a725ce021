"""What every diagram-drawing worker starts with: numpy held to fixed kernels, then matplotlib
and every generator imported.

The fork server the workers are forked from (pool.start_workers) imports this module
once, so that each worker begins with matplotlib loaded (half a second of CPU that every
worker would otherwise spend on its own import) and with the kernels fixed: numpy and
OpenBLAS read NUMERIC_ENV only when they are loaded, which happens here, after it is set.
"""

from __future__ import annotations

import importlib

from deckbuild.diagrams.pool import start_worker
from deckbuild.diagrams.registry import REGISTRY

start_worker()  # before anything below imports numpy

from deckbuild.diagrams import _style  # noqa: E402,F401  (matplotlib, with the Agg backend)

for _module in sorted({info.module for info in REGISTRY.values()}):
    importlib.import_module(f"deckbuild.diagrams.{_module}")
# The 3-D projection norm-axes draws with, registered once here rather than in every worker.
importlib.import_module("mpl_toolkits.mplot3d")
