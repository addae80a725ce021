"""What every diagram-drawing worker starts with: numpy held to fixed kernels, then matplotlib
and the house style imported.

The fork server the workers are forked from (pool.start_workers) imports this module once,
so that each worker begins with matplotlib loaded (half a second of CPU that every worker
would otherwise spend on its own import) and with the kernels fixed: numpy and OpenBLAS
read NUMERIC_ENV only when they are loaded, which happens here, after it is set.  A
project's generator files are loaded by each worker as it first draws one of theirs.
"""

from __future__ import annotations

import importlib

from deckbuild.diagrams.pool import start_worker

start_worker()  # before anything below imports numpy

from deckbuild.diagrams import style  # noqa: E402,F401  (matplotlib, with the Agg backend)

# The 3-D projection a generator may draw with, registered once here rather than in every worker.
importlib.import_module("mpl_toolkits.mplot3d")
