"""Launcher configs -> a placed, running training job.

- :mod:`~clawgym.rl.launch.schema`: the config as one pydantic model and its checks (the serve section's
  against the others: :mod:`~clawgym.rl.launch.serve_rules`);
- :mod:`~clawgym.rl.launch.loading`: a YAML file and ``--set`` overrides -> a validated config;
- :mod:`~clawgym.rl.launch.placement`: the placement plan (GPUs per process, transport, memory);
- :mod:`~clawgym.rl.launch.build`: ONE builder that follows the plan (CPU is the smallest placement);
- :mod:`~clawgym.rl.launch.main`: run a config, or check it and print its plan (what ``clawgym train`` runs).

``clawgym serve`` builds its policy, trainer and judges with :func:`build_stack` too, with the
:class:`StackOptions` it needs (the policy carries its weight transport, so
``policy.update_weights(trainer.export_weights())`` works for every backend).
"""

from clawgym.rl.launch.build import (
    Components,
    Stack,
    StackOptions,
    build,
    build_judges,
    build_stack,
    loop_config,
    lora_targets,
    require_gpus,
    trainer_config,
    warm_start_config,
)
from clawgym.rl.launch.loading import load_config
from clawgym.rl.launch.main import check_config, format_summary, run_config
from clawgym.rl.launch.placement import Plan, Shape, format_plan, plan
from clawgym.rl.launch.schema import (
    GPU_BACKENDS,
    ConfigError,
    GpuSection,
    LoraSection,
    RunConfig,
    ServeSection,
    judge_parts,
    validate,
)

__all__ = [
    "GPU_BACKENDS", "Components", "ConfigError", "GpuSection", "LoraSection", "Plan", "RunConfig", "ServeSection",
    "Shape", "Stack", "StackOptions", "build", "build_judges", "build_stack", "check_config", "format_plan",
    "format_summary", "judge_parts", "load_config", "lora_targets", "loop_config", "plan", "require_gpus",
    "run_config", "trainer_config", "validate", "warm_start_config",
]
