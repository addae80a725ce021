"""Generated diagrams: a registry of matplotlib generators and a content-addressed cache.

Importing this package is cheap on purpose: it never imports matplotlib or numpy.  A
rebuild in which no diagram changed must not pay matplotlib's import time, so everything
here (validation, cache keys, cache look-ups) works from the registry and from the
generators' *source bytes*; the generator modules are imported only when something has to
be rendered.

The file name of a rendered diagram is ``<name>-<12 hex of sha256(png)>.png``: changing
a diagram's parameters (or its code) changes the picture and therefore the file name, so
Anki, which never overwrites a media file of the same name, picks the new picture up.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deckbuild.errors import DeckbuildError
from deckbuild.fsutil import atomic_write_bytes
from deckbuild.jobs import default_jobs
from deckbuild.mediacheck import refusals
from deckbuild.model import Progress

if TYPE_CHECKING:
    from multiprocessing.context import BaseContext

__all__ = [
    "REGISTRY",
    "DiagramError",
    "DiagramFailures",
    "DiagramInfo",
    "cache_key",
    "materialize",
    "render_png",
    "validate",
]

_PACKAGE_DIR = Path(__file__).resolve().parent
_SHARED_MODULES = ("_style",)
"""Modules whose source is part of every cache key (the look of every diagram)."""


class DiagramError(DeckbuildError):
    """A diagram spec that cannot be rendered (unknown name, bad parameters)."""


class DiagramFailures(DiagramError):
    """Generators that raised while drawing valid specs: cache key -> what went wrong."""

    def __init__(self, failures: dict[str, str]) -> None:
        super().__init__("; ".join(failures.values()))
        self.failures = failures


@dataclass(frozen=True)
class DiagramInfo:
    """What deckbuild knows about one diagram without importing its generator."""

    name: str
    title: str
    defaults: dict[str, Any] = field(default_factory=dict)
    illustrative: bool = False
    """True when the picture uses values that are not in the seeds (the caption says so)."""
    module: str = ""
    """Submodule of deckbuild.diagrams holding the generator, e.g. "schedules"."""
    function: str = ""
    cost: int = 100
    """About how many milliseconds of CPU drawing it takes with its defaults (measured on one
    x86-64 core): the workers take the slowest diagrams first.  Only orders the work."""


def _info(
    name: str,
    title: str,
    module: str,
    function: str,
    *,
    illustrative: bool,
    cost: int,
    **defaults: Any,
) -> DiagramInfo:
    return DiagramInfo(name, title, dict(defaults), illustrative, module, function, cost)


REGISTRY: dict[str, DiagramInfo] = {
    d.name: d
    for d in [
        _info(
            "warmup-cosine",
            "Linear warmup + cosine decay",
            "schedules",
            "warmup_cosine",
            illustrative=True,
            cost=120,
            total=10_000,
            warmup=1_000,
            accumulation_bug=False,
        ),
        _info(
            "one-cycle",
            "One-cycle policy: LR and momentum",
            "schedules",
            "one_cycle",
            illustrative=True,
            cost=160,
            pct_start=0.3,
            div=25.0,
        ),
        _info(
            "lr-range-test",
            "LR range test",
            "schedules",
            "lr_range_test",
            illustrative=True,
            cost=200,
        ),
        _info(
            "lr-too-small-large",
            "Learning rate too small / right / too large",
            "schedules",
            "lr_too_small_large",
            illustrative=True,
            cost=290,
        ),
        _info(
            "lr-batch-scaling",
            "LR vs batch size: linear and sqrt rules",
            "schedules",
            "lr_batch_scaling",
            illustrative=False,
            cost=190,
            base_lr=0.1,
            base_batch=256,
        ),
        _info(
            "double-descent",
            "Deep double descent (computed)",
            "generalization",
            "double_descent",
            illustrative=True,
            cost=1500,
            n_train=40,
            seeds=10,
        ),
        _info(
            "grokking",
            "Grokking (schematic)",
            "generalization",
            "grokking",
            illustrative=True,
            cost=230,
        ),
        _info(
            "weight-ema",
            "EMA of weights smooths the trajectory",
            "generalization",
            "weight_ema",
            illustrative=True,
            cost=170,
        ),
        _info(
            "early-stopping",
            "Early stopping with patience",
            "generalization",
            "early_stopping",
            illustrative=True,
            cost=160,
            patience=10,
        ),
        _info(
            "train-above-val",
            "Why training loss can sit above validation loss",
            "generalization",
            "train_above_val",
            illustrative=True,
            cost=160,
        ),
        _info(
            "activations",
            "Activation functions and derivatives",
            "networks",
            "activations",
            illustrative=False,
            cost=240,
        ),
        _info(
            "vanishing-exploding",
            "Vanishing / exploding products",
            "networks",
            "vanishing_exploding",
            illustrative=False,
            cost=190,
            layers=20,
        ),
        _info(
            "conv-output-size",
            "Convolution output size",
            "networks",
            "conv_output_size",
            illustrative=False,
            cost=200,
        ),
        _info(
            "receptive-field",
            "Receptive-field growth",
            "networks",
            "receptive_field",
            illustrative=False,
            cost=120,
        ),
        _info(
            "grouped-conv",
            "Grouped and depthwise connectivity",
            "networks",
            "grouped_conv",
            illustrative=False,
            cost=100,
        ),
        _info(
            "norm-axes",
            "BatchNorm vs LayerNorm vs GroupNorm axes",
            "networks",
            "norm_axes",
            illustrative=False,
            cost=710,
        ),
        _info(
            "batch-stat-noise",
            "Batch-statistic noise vs batch size",
            "numerics",
            "batch_stat_noise",
            illustrative=False,
            cost=350,
            small_batch=4,
            large_batch=256,
        ),
        _info(
            "grad-clipping",
            "Gradient clipping by norm vs by value",
            "numerics",
            "grad_clipping",
            illustrative=False,
            cost=110,
        ),
        _info(
            "float-formats",
            "fp32 / fp16 / bf16: bits and range",
            "numerics",
            "float_formats",
            illustrative=False,
            cost=140,
        ),
        _info(
            "loss-scaling",
            "Why loss scaling works",
            "numerics",
            "loss_scaling",
            illustrative=True,
            cost=310,
            scale=128,
        ),
        _info(
            "zero-memory",
            "Memory per GPU: DDP vs ZeRO-1/2/3",
            "systems",
            "zero_memory",
            illustrative=True,
            cost=190,
            params_billion=7.5,
            gpus=64,
            k=12,
        ),
        _info(
            "chinchilla",
            "Chinchilla compute-optimal allocation",
            "systems",
            "chinchilla",
            illustrative=False,
            cost=260,
        ),
        _info(
            "attention-masks",
            "Attention masks",
            "attention",
            "attention_masks",
            illustrative=False,
            cost=220,
        ),
        _info(
            "attention-scaling",
            "Why divide by sqrt(d_k)",
            "attention",
            "attention_scaling",
            illustrative=False,
            cost=1080,
        ),
        _info(
            "cosine-restarts",
            "Cosine restarts and snapshot points",
            "regularization",
            "cosine_restarts",
            illustrative=True,
            cost=140,
            cycles=5,
        ),
        _info(
            "inverted-dropout",
            "Inverted dropout",
            "regularization",
            "inverted_dropout",
            illustrative=True,
            cost=210,
        ),
        _info(
            "stochastic-depth",
            "Stochastic depth: drop probability by depth",
            "regularization",
            "stochastic_depth",
            illustrative=True,
            cost=140,
            blocks=24,
            final_drop=0.2,
        ),
        _info(
            "label-smoothing",
            "Label smoothing targets",
            "regularization",
            "label_smoothing",
            illustrative=False,
            cost=120,
            classes=4,
            eps=0.1,
        ),
        _info(
            "sharp-flat-minima",
            "Sharp vs flat minima",
            "regularization",
            "sharp_flat_minima",
            illustrative=True,
            cost=190,
            shift=0.3,
        ),
        _info(
            "temperature",
            "Temperature scaling",
            "classification",
            "temperature",
            illustrative=False,
            cost=110,
        ),
        _info(
            "accuracy-paradox",
            "Accuracy paradox",
            "classification",
            "accuracy_paradox",
            illustrative=False,
            cost=60,
        ),
        _info(
            "lstm-forget",
            "LSTM forget-gate retention",
            "propagation",
            "lstm_forget",
            illustrative=True,
            cost=120,
        ),
        _info(
            "init-signal",
            "Initialization and signal propagation",
            "propagation",
            "init_signal",
            illustrative=False,
            cost=700,
        ),
        _info(
            "critical-batch",
            "Critical batch size trade-off",
            "costs",
            "critical_batch",
            illustrative=True,
            cost=200,
            b_noise=1000,
        ),
        _info(
            "attention-memory",
            "Attention score memory vs sequence length",
            "costs",
            "attention_memory",
            illustrative=True,
            cost=180,
            heads=16,
        ),
        _info(
            "broadcasting-bug",
            "Broadcasting bug in a regression loss",
            "debugging",
            "broadcasting_bug",
            illustrative=True,
            cost=140,
        ),
        _info(
            "padding-loss",
            "Padding-aware loss averaging",
            "debugging",
            "padding_loss",
            illustrative=True,
            cost=100,
        ),
        _info(
            "finite-difference",
            "Centered vs forward difference",
            "debugging",
            "finite_difference",
            illustrative=True,
            cost=150,
            eps=0.5,
        ),
        _info(
            "truncated-bptt",
            "Truncated BPTT",
            "timelines",
            "truncated_bptt",
            illustrative=True,
            cost=130,
            steps=12,
            chunk=4,
        ),
        _info(
            "grad-accumulation",
            "Gradient accumulation timeline",
            "timelines",
            "grad_accumulation",
            illustrative=True,
            cost=120,
            micro=4,
        ),
        _info(
            "fgsm-pgd",
            "FGSM / PGD geometry",
            "robustness",
            "fgsm_pgd",
            illustrative=True,
            cost=140,
            eps=0.3,
            alpha=0.1,
            steps=5,
        ),
    ]
}


def _type_ok(default: Any, value: Any) -> bool:
    """Parameters take the type of their default (an int is accepted where a float is)."""
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, (int, float))
    if isinstance(default, int):
        return isinstance(value, int)
    return isinstance(value, type(default))


def validate(name: str, params: Mapping[str, Any] | None = None) -> list[str]:
    """The problems with a diagram spec, as messages for the card author (empty = fine)."""
    info = REGISTRY.get(name)
    if info is None:
        return [f"unknown diagram {name!r}; known diagrams: {', '.join(sorted(REGISTRY))}"]
    if params is None:
        return []
    if not isinstance(params, Mapping):
        return [f"diagram {name!r}: params must be a mapping, not {type(params).__name__}"]
    problems = []
    for key, value in params.items():
        if key not in info.defaults:
            accepted = ", ".join(sorted(info.defaults)) or "none"
            problems.append(f"diagram {name!r}: unknown parameter {key!r}; accepted parameters: {accepted}")
        elif not _type_ok(info.defaults[key], value):
            problems.append(
                f"diagram {name!r}: parameter {key!r} must be {type(info.defaults[key]).__name__}, not {type(value).__name__}"
            )
    return problems


def _merged(name: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
    problems = validate(name, params)
    if problems:
        raise DiagramError("; ".join(problems))
    defaults = REGISTRY[name].defaults
    merged = {**defaults, **(params or {})}
    # 10 and 10.0 draw the same picture, so they must give the same cache key.
    return {k: float(v) if isinstance(defaults[k], float) else v for k, v in merged.items()}


@functools.cache
def _installed_version(dist: str) -> str:
    """A distribution's version without importing it (importing matplotlib is slow).

    Cached: reading package metadata costs ~7 ms, and a deck asks once per diagram.
    """
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not-installed"


@functools.cache
def _module_source(module: str) -> bytes:
    """A generator module's source, read once per process."""
    return (_PACKAGE_DIR / f"{module}.py").read_bytes()


def cache_key(name: str, params: Mapping[str, Any] | None = None) -> str:
    """A sha256 hex key for everything that determines a diagram's pixels.

    Covers the name, the effective parameters, the source of the generator module and
    of the shared style, and the installed matplotlib and numpy versions: any of them
    changing means the cached picture may be stale.
    """
    merged = _merged(name, params)
    info = REGISTRY[name]
    h = hashlib.sha256()
    h.update(b"deckbuild-diagram-v2\x00")  # v2: drawn with NUMERIC_ENV
    h.update(name.encode() + b"\x00")
    h.update(json.dumps(merged, sort_keys=True, separators=(",", ":")).encode() + b"\x00")
    for module in (info.module, *_SHARED_MODULES):
        h.update(_module_source(module) + b"\x00")
    for dist in ("matplotlib", "numpy"):
        h.update(f"{dist}=={_installed_version(dist)}\x00".encode())
    return h.hexdigest()


def render_png(name: str, params: Mapping[str, Any] | None = None) -> bytes:
    """Render one diagram to PNG bytes (imports matplotlib; use materialize() to cache)."""
    merged = _merged(name, params)
    from . import _style  # lazy: a no-op build never imports matplotlib

    return _style.render(REGISTRY[name], merged)


def _cached(cache_dir: Path, key: str) -> Path | None:
    """The cached PNG for a key, if both its index file and the PNG exist."""
    index = cache_dir / f"{key}.txt"
    try:
        file_name = index.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    png = cache_dir / file_name
    if not file_name or "/" in file_name or not png.is_file():
        return None
    return png


NUMERIC_ENV = {
    # numpy picks SIMD kernels for log, exp, sqrt ... by the CPU it runs on, and OpenBLAS
    # picks its matrix kernels the same way; their last bits differ between CPUs, and a
    # log-scaled axis or an ill-conditioned least-squares fit turns that into other pixels
    # (seen: an AVX-512 machine drew 3 of the shipped diagrams differently).  Diagrams are
    # therefore drawn with numpy held to its x86-64-v2 baseline and one OpenBLAS kernel, on
    # one thread, so the bytes do not depend on which x86-64 CPU draws them.  The names are numpy 2.4's
    # dispatch targets (pyproject pins numpy to 2.4.x; another numpy warns of unknown names).
    "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
    "OPENBLAS_CORETYPE": "Nehalem",
    "OPENBLAS_NUM_THREADS": "1",
}
"""Environment of the processes that draw diagrams (x86-64 only; elsewhere the CPU's own kernels)."""


def materialize(
    specs: Sequence[tuple[str, Mapping[str, Any] | None]],
    cache_dir: Path,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
) -> dict[str, Path]:
    """Make sure every spec has a PNG in cache_dir; return cache_key -> PNG path.

    Specs already in the cache are not rendered, and if none needs rendering matplotlib
    is never imported.  ``progress(i, n, name)`` is called as each picture is taken up
    (slowest first, the same order whatever the jobs), with i counting from 1 over the n
    diagrams that need rendering (show it as "rendering 3/24: warmup-cosine").  Raises
    DiagramError for an invalid spec before rendering anything.

    They are drawn in ``jobs`` (default: every core) worker processes that hold numpy and
    OpenBLAS to fixed kernels (NUMERIC_ENV), so a picture's bytes depend on its spec and
    the pinned library versions, not on the CPU or on which worker drew it; files are
    written here, in spec order, each after passing the media check (mediacheck.py), so a
    cached picture is never read again.  A generator that fails (or draws a picture the check
    refuses) does not stop the others: every failure is raised at the end as one
    DiagramFailures, in spec order.
    """
    cache_dir = Path(cache_dir)
    keys: dict[str, tuple[str, Mapping[str, Any] | None]] = {}
    for name, params in specs:
        keys.setdefault(cache_key(name, params), (name, params))
    result: dict[str, Path] = {}
    todo: list[tuple[str, str, Mapping[str, Any] | None]] = []
    for key, (name, params) in keys.items():
        hit = _cached(cache_dir, key)
        if hit is None:
            todo.append((key, name, params))
        else:
            result[key] = hit
    if not todo:
        return result
    cache_dir.mkdir(parents=True, exist_ok=True)
    workers = min(default_jobs() if jobs is None else max(1, jobs), len(todo))
    drawn = _draw_in_workers(todo, workers, progress)
    failures = {}
    for (key, name, _params), outcome in zip(todo, drawn, strict=True):
        if isinstance(outcome, str):
            failures[key] = f"diagram {name!r}: {outcome}"
            continue
        path = cache_dir / f"{name}-{hashlib.sha256(outcome).hexdigest()[:12]}.png"
        refused = refusals(path.name, outcome)  # checked once, as drawn: the cache holds only what passed
        if refused:
            failures[key] = f"diagram {name!r} drew an image the media check refuses: {refused[0].short()}"
            continue
        if not path.is_file():
            atomic_write_bytes(path, outcome)
        atomic_write_bytes(cache_dir / f"{key}.txt", (path.name + "\n").encode())
        result[key] = path
    if failures:
        raise DiagramFailures(failures)
    return result


def start_workers() -> None:
    """Start the drawing workers' imports now, in the background, for a build that will draw.

    The workers are forked from one server process that fixes numpy's kernels and imports
    matplotlib and every generator once (diagrams/_worker.py).  This returns at once: the
    server's imports (half a second of CPU) overlap with what this process does until the
    diagrams are drawn -- parsing and checking the cards.  Without a fork server (Windows)
    it does nothing, and each worker imports matplotlib itself.
    """
    _context()


@functools.cache
def _context() -> BaseContext:
    """Where the drawing workers come from: the fork server of _worker.py (started here), or 'spawn'.

    Never this process (by 'fork'): its numpy may already be loaded with the CPU's own
    kernels, and it may hold threads or state a forked child must not inherit; the fork
    server is a fresh interpreter that loaded nothing but _worker.py.
    """
    import multiprocessing

    if "forkserver" in multiprocessing.get_all_start_methods():
        from multiprocessing import forkserver

        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([f"{__name__}._worker"])
        try:
            forkserver.ensure_running()
        except OSError:  # no socket or temp folder for it: each worker imports for itself
            return multiprocessing.get_context("spawn")
        atexit.register(_stop_server)
        return context
    return multiprocessing.get_context("spawn")


def _stop_server() -> None:
    """End the fork server with this process, even in the middle of its imports (a build that
    failed before drawing); it would otherwise finish them before noticing."""
    import signal
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return
    with contextlib.suppress(OSError):  # ChildProcessError: not this process's child (any more)
        if os.waitpid(pid, os.WNOHANG) == (0, 0):  # running, and a child no one reaped: not a reused pid
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


_Job = tuple[str, str, Mapping[str, Any] | None]


def _draw_one(name: str, params: Mapping[str, Any] | None) -> bytes | str:
    """One picture's PNG bytes, or what went wrong (a worker's entry point: picklable)."""
    try:
        return render_png(name, params)
    except Exception as exc:  # a generator bug must not hide the other diagrams' problems
        return f"{type(exc).__name__}: {exc}"


def _on_x86() -> bool:
    import platform

    return platform.machine().lower() in ("x86_64", "amd64")


def _start_worker() -> None:
    """Hold a drawing process's numpy and OpenBLAS to NUMERIC_ENV before numpy is imported
    (both read it once, when loaded); refuse a numpy already loaded with other kernels.

    A worker forked from the server (_worker.py) finds numpy loaded there after this ran:
    that is checked, not trusted.
    """
    if not _on_x86():
        return
    if "numpy" in sys.modules:
        if not _kernels_fixed():
            raise RuntimeError("numpy was imported before the diagram worker could fix its CPU kernels")
        return
    os.environ.update(NUMERIC_ENV)


def _kernels_fixed() -> bool:
    """Whether the loaded numpy was loaded under NUMERIC_ENV: the environment still says so and
    none of the dispatch targets it disables is in use."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    held = all(os.environ.get(key) == value for key, value in NUMERIC_ENV.items())
    return held and not any(__cpu_features__.get(target) for target in __cpu_dispatch__)


def _draw_in_workers(todo: Sequence[_Job], workers: int, progress: Progress | None) -> list[bytes | str]:
    """Every job's outcome, in job order, drawn by `workers` worker processes (one when jobs=1).

    The slowest diagrams (by their `cost`) are taken up first, so that what is left for the
    end is quick ones and the workers finish together (longest processing time first).
    """
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(range(len(todo)), key=lambda i: -REGISTRY[todo[i][1]].cost)  # stable: spec order among equals
    with ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_start_worker) as pool:
        futures = {i: pool.submit(_draw_one, todo[i][1], dict(p) if (p := todo[i][2]) is not None else None) for i in order}
        for n, i in enumerate(order, start=1):
            if progress is not None:
                progress(n, len(todo), todo[i][1])
            futures[i].result()  # wait, so the progress follows the drawing
        return [futures[i].result() for i in range(len(todo))]
