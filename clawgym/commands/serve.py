"""``clawgym serve [--config chat] [--set k=v] [--check]``: the deployed personal agent behind the gateway.

The config is a launcher YAML with a ``serve:`` section (:mod:`clawgym.serve.main` says what each key does
and builds the serving stack: policy, judges, gateway, dashboard and the background trainer). ``--check``
validates the config, prints the placement plan and where turns will be answered, and starts nothing.
"""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction) -> None:
    serve = sub.add_parser("serve", help="the personal-chat gateway (OpenClaw and any OpenAI client)")
    serve.add_argument("--config", default="chat", help="a bundled launcher name or a YAML path")
    serve.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    serve.add_argument("--check", action="store_true",
                       help="validate the config (serve section included) and print the plan")
    serve.set_defaults(fn=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from clawgym import launchers
    from clawgym.rl.launch import ConfigError, check_config, load_config
    from clawgym.rl.launch.placement import serves_in_process
    from clawgym.serve.main import build_serving, sglang_problems

    path, overrides = str(launchers.resolve(args.config)), list(args.set or [])
    config = load_config(path, overrides, serving=True)  # the serve section against the others too
    serve = config.serve
    if args.check:
        print(check_config(path, overrides))
        if not serves_in_process(config):
            problems = sglang_problems(config)
            if problems:
                raise ConfigError("clawgym serve with the sglang backend: " + "; ".join(problems))
            where = f"the SGLang server at {config.policy.base_url} (attached)" if config.policy.base_url else \
                "an SGLang server launched on the rollout GPUs of the plan above"
            print(f"serve: turns answered by {where}; with serve.train the personal trainer publishes each step's "
                  "weights to it the way the plan's `weights` line says")
        gate = ""
        if serve.train and serve.gate.enabled:
            gate = (f"; publish gate on ({serve.gate.requests} held-back requests a person, one more copy of the "
                    "served model)" if serve.adapters == "shared" else
                    f"; publish gate on per user (each person's adapter judged on their own {serve.gate.requests} "
                    "held-back requests, decoded on one spare adapter slot; versions, rollback and alarms per user)")
        print(f"serve: {serve.host}:{serve.port}, adapters {serve.adapters}, "
              f"{len(serve.users)} keyed users, training {'on' if serve.train else 'off'}{gate}")
        return 0
    from clawgym.rl.launch.main import prepare_host

    prepare_host(config)  # the personal trainer trains in this process
    serving = build_serving(config)
    print(f"clawgym gateway on http://{serve.host}:{serve.port}/v1 (model {config.policy.model}; "
          f"training {'on' if serving.trainer else 'off'}; turns -> {serving.gateway.log.path})")
    uvicorn.run(serving.app, host=serve.host, port=serve.port, log_level="info")
    return 0
