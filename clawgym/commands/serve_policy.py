"""``clawgym serve-policy --model M``: clawgym's OpenAI-compatible server (:mod:`clawgym.inference.server`)
over one local hf policy, in the foreground until interrupted."""

from __future__ import annotations

import argparse

from clawgym.inference.catalog import DEFAULT_MODEL


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve_policy = sub.add_parser("serve-policy", help="OpenAI-compatible server over a policy")
    serve_policy.add_argument("--model", default=DEFAULT_MODEL)
    serve_policy.add_argument("--host", default="127.0.0.1")
    serve_policy.add_argument("--port", type=int, default=8000)
    serve_policy.add_argument("--api-key", default=None)
    serve_policy.add_argument("--device", default="cpu")
    serve_policy.set_defaults(fn=cmd_serve_policy)


def cmd_serve_policy(args: argparse.Namespace) -> int:
    from clawgym.inference.hf import HFPolicy
    from clawgym.inference.server import serve

    policy = HFPolicy.from_pretrained(args.model, device=args.device or "cpu", max_batch_size=32)
    serve(policy, args.host or "127.0.0.1", args.port or 8000, args.api_key)
    return 0
