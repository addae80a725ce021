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

import functools
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from deckbuild.errors import DeckbuildError
from deckbuild.fsutil import atomic_write_bytes
from deckbuild.model import Progress

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


def _info(
    name: str,
    title: str,
    module: str,
    function: str,
    *,
    illustrative: bool,
    **defaults: Any,
) -> DiagramInfo:
    return DiagramInfo(name, title, dict(defaults), illustrative, module, function)


REGISTRY: dict[str, DiagramInfo] = {
    d.name: d
    for d in [
        _info(
            "warmup-cosine",
            "Linear warmup + cosine decay",
            "schedules",
            "warmup_cosine",
            illustrative=True,
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
            pct_start=0.3,
            div=25.0,
        ),
        _info(
            "lr-range-test",
            "LR range test",
            "schedules",
            "lr_range_test",
            illustrative=True,
        ),
        _info(
            "lr-too-small-large",
            "Learning rate too small / right / too large",
            "schedules",
            "lr_too_small_large",
            illustrative=True,
        ),
        _info(
            "lr-batch-scaling",
            "LR vs batch size: linear and sqrt rules",
            "schedules",
            "lr_batch_scaling",
            illustrative=False,
            base_lr=0.1,
            base_batch=256,
        ),
        _info(
            "double-descent",
            "Deep double descent (computed)",
            "generalization",
            "double_descent",
            illustrative=True,
            n_train=40,
            seeds=10,
        ),
        _info(
            "grokking",
            "Grokking (schematic)",
            "generalization",
            "grokking",
            illustrative=True,
        ),
        _info(
            "weight-ema",
            "EMA of weights smooths the trajectory",
            "generalization",
            "weight_ema",
            illustrative=True,
        ),
        _info(
            "early-stopping",
            "Early stopping with patience",
            "generalization",
            "early_stopping",
            illustrative=True,
            patience=10,
        ),
        _info(
            "train-above-val",
            "Why training loss can sit above validation loss",
            "generalization",
            "train_above_val",
            illustrative=True,
        ),
        _info(
            "activations",
            "Activation functions and derivatives",
            "networks",
            "activations",
            illustrative=False,
        ),
        _info(
            "vanishing-exploding",
            "Vanishing / exploding products",
            "networks",
            "vanishing_exploding",
            illustrative=False,
            layers=20,
        ),
        _info(
            "conv-output-size",
            "Convolution output size",
            "networks",
            "conv_output_size",
            illustrative=False,
        ),
        _info(
            "receptive-field",
            "Receptive-field growth",
            "networks",
            "receptive_field",
            illustrative=False,
        ),
        _info(
            "grouped-conv",
            "Grouped and depthwise connectivity",
            "networks",
            "grouped_conv",
            illustrative=False,
        ),
        _info(
            "norm-axes",
            "BatchNorm vs LayerNorm vs GroupNorm axes",
            "networks",
            "norm_axes",
            illustrative=False,
        ),
        _info(
            "batch-stat-noise",
            "Batch-statistic noise vs batch size",
            "numerics",
            "batch_stat_noise",
            illustrative=False,
            small_batch=4,
            large_batch=256,
        ),
        _info(
            "grad-clipping",
            "Gradient clipping by norm vs by value",
            "numerics",
            "grad_clipping",
            illustrative=False,
        ),
        _info(
            "float-formats",
            "fp32 / fp16 / bf16: bits and range",
            "numerics",
            "float_formats",
            illustrative=False,
        ),
        _info(
            "loss-scaling",
            "Why loss scaling works",
            "numerics",
            "loss_scaling",
            illustrative=True,
            scale=128,
        ),
        _info(
            "zero-memory",
            "Memory per GPU: DDP vs ZeRO-1/2/3",
            "systems",
            "zero_memory",
            illustrative=True,
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
        ),
        _info(
            "attention-masks",
            "Attention masks",
            "attention",
            "attention_masks",
            illustrative=False,
        ),
        _info(
            "attention-scaling",
            "Why divide by sqrt(d_k)",
            "attention",
            "attention_scaling",
            illustrative=False,
        ),
        _info(
            "cosine-restarts",
            "Cosine restarts and snapshot points",
            "regularization",
            "cosine_restarts",
            illustrative=True,
            cycles=5,
        ),
        _info(
            "inverted-dropout",
            "Inverted dropout",
            "regularization",
            "inverted_dropout",
            illustrative=True,
        ),
        _info(
            "stochastic-depth",
            "Stochastic depth: drop probability by depth",
            "regularization",
            "stochastic_depth",
            illustrative=True,
            blocks=24,
            final_drop=0.2,
        ),
        _info(
            "label-smoothing",
            "Label smoothing targets",
            "regularization",
            "label_smoothing",
            illustrative=False,
            classes=4,
            eps=0.1,
        ),
        _info(
            "sharp-flat-minima",
            "Sharp vs flat minima",
            "regularization",
            "sharp_flat_minima",
            illustrative=True,
            shift=0.3,
        ),
        _info(
            "temperature",
            "Temperature scaling",
            "classification",
            "temperature",
            illustrative=False,
        ),
        _info(
            "accuracy-paradox",
            "Accuracy paradox",
            "classification",
            "accuracy_paradox",
            illustrative=False,
        ),
        _info(
            "lstm-forget",
            "LSTM forget-gate retention",
            "propagation",
            "lstm_forget",
            illustrative=True,
        ),
        _info(
            "init-signal",
            "Initialization and signal propagation",
            "propagation",
            "init_signal",
            illustrative=False,
        ),
        _info(
            "critical-batch",
            "Critical batch size trade-off",
            "costs",
            "critical_batch",
            illustrative=True,
            b_noise=1000,
        ),
        _info(
            "attention-memory",
            "Attention score memory vs sequence length",
            "costs",
            "attention_memory",
            illustrative=True,
            heads=16,
        ),
        _info(
            "broadcasting-bug",
            "Broadcasting bug in a regression loss",
            "debugging",
            "broadcasting_bug",
            illustrative=True,
        ),
        _info(
            "padding-loss",
            "Padding-aware loss averaging",
            "debugging",
            "padding_loss",
            illustrative=True,
        ),
        _info(
            "finite-difference",
            "Centered vs forward difference",
            "debugging",
            "finite_difference",
            illustrative=True,
            eps=0.5,
        ),
        _info(
            "truncated-bptt",
            "Truncated BPTT",
            "timelines",
            "truncated_bptt",
            illustrative=True,
            steps=12,
            chunk=4,
        ),
        _info(
            "grad-accumulation",
            "Gradient accumulation timeline",
            "timelines",
            "grad_accumulation",
            illustrative=True,
            micro=4,
        ),
        _info(
            "fgsm-pgd",
            "FGSM / PGD geometry",
            "robustness",
            "fgsm_pgd",
            illustrative=True,
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


def default_jobs() -> int:
    """The cores this process may run on (what `--jobs` defaults to)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def materialize(
    specs: Sequence[tuple[str, Mapping[str, Any] | None]],
    cache_dir: Path,
    progress: Progress | None = None,
    *,
    jobs: int | None = None,
) -> dict[str, Path]:
    """Make sure every spec has a PNG in cache_dir; return cache_key -> PNG path.

    Specs already in the cache are not rendered, and if none needs rendering matplotlib
    is never imported.  ``progress(i, n, name)`` is called before each render (in order
    of the specs, as each picture is taken up), with i counting from 1 over the n
    diagrams that need rendering (show it as "rendering 3/24: warmup-cosine").  Raises
    DiagramError for an invalid spec before rendering anything.

    They are drawn in ``jobs`` (default: every core) 'spawn'ed worker processes that hold
    numpy and OpenBLAS to fixed kernels (NUMERIC_ENV), so a picture's bytes depend on its
    spec and the pinned library versions, not on the CPU; files are written here, in spec
    order.  A generator that fails does not stop the others: every failure is
    raised at the end as one DiagramFailures, in spec order.
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
        if not path.is_file():
            atomic_write_bytes(path, outcome)
        atomic_write_bytes(cache_dir / f"{key}.txt", (path.name + "\n").encode())
        result[key] = path
    if failures:
        raise DiagramFailures(failures)
    return result


_Job = tuple[str, str, Mapping[str, Any] | None]


def _draw_one(name: str, params: Mapping[str, Any] | None) -> bytes | str:
    """One picture's PNG bytes, or what went wrong (a worker's entry point: picklable)."""
    try:
        return render_png(name, params)
    except Exception as exc:  # a generator bug must not hide the other diagrams' problems
        return f"{type(exc).__name__}: {exc}"


def _start_worker() -> None:
    """Set NUMERIC_ENV in a fresh worker before numpy is imported (it reads it once, on import)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return
    if "numpy" in sys.modules:
        raise RuntimeError("numpy was imported before the diagram worker could fix its CPU kernels")
    os.environ.update(NUMERIC_ENV)


def _draw_in_workers(todo: Sequence[_Job], workers: int, progress: Progress | None) -> list[bytes | str]:
    """Draw in 'spawn'ed worker processes (one when jobs=1), each started by _start_worker.

    Never in this process: its numpy may already be loaded with the CPU's own kernels, and
    a fresh interpreter is safe whatever threads or state this process has (fork is not).
    The workers import only deckbuild.diagrams and matplotlib.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_start_worker) as pool:
        futures = [pool.submit(_draw_one, name, dict(params) if params is not None else None) for _k, name, params in todo]
        drawn = []
        for i, ((_key, name, _params), future) in enumerate(zip(todo, futures, strict=True), start=1):
            if progress is not None:
                progress(i, len(todo), name)
            drawn.append(future.result())
    return drawn
