"""One config model: the loop, rollout, trainer and LoRA keys of a launcher config are the fields of the plain
configs the loop and the trainer take (``LoopConfig``, ``TrainerConfig``, ``LoraSettings``), declared there once
and taken by the schema's sections (``schema.plain_fields``); each key's value reaches its field, and every
field no key sets is named here on purpose."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from clawgym.rl.launch import load_config, loop_config, trainer_config
from clawgym.rl.launch.build import warm_start_config
from clawgym.rl.launch.schema import RunConfig, Section
from clawgym.rl.loop import LoopConfig
from clawgym.rl.trainer import LoraSettings, TrainerConfig
from clawgym.rl.warm_start import WarmStartConfig

REPO = Path(__file__).resolve().parents[1]
PLAIN = (LoopConfig, TrainerConfig, LoraSettings, WarmStartConfig)


def plain_keys(section: type[Section] = RunConfig, prefix: str = "") -> dict[str, tuple[type, str]]:
    """Every dotted config key taken from a plain config -> (that config, its field)."""
    found = {f"{prefix}{key}": source for key, source in section.plain_keys.items()}
    for key, field in section.model_fields.items():
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            found.update(plain_keys(field.annotation, f"{prefix}{key}."))
    return found


def other_value(plain: type, name: str) -> Any:
    """A valid value unlike the field's default."""
    annotation = typing.get_type_hints(plain)[name]
    default = next(f for f in dataclasses.fields(plain) if f.name == name).default
    if typing.get_origin(annotation) is Literal:
        return next(v for v in typing.get_args(annotation) if v != default)
    if typing.get_origin(annotation) is tuple:
        return ("q_proj",)
    kind = next(a for a in typing.get_args(annotation) or (annotation,) if a is not type(None))
    if kind is bool:
        return not default
    if kind is int:
        return (default or 0) + 3
    if kind is float:
        return (default or 0) + 0.25
    return f"{default}x"


def test_each_plain_field_is_one_config_key_and_the_others_are_named():
    keys = plain_keys()
    assert len(set(keys.values())) == len(keys)  # no field is set by two keys
    assert keys["rollout.workers"] == (LoopConfig, "num_workers") and keys["judge.workers"] == (LoopConfig,
                                                                                                "judge_workers")
    assert keys["method"] == (TrainerConfig, "method") and keys["trainer.lora.r"] == (LoraSettings, "r")
    unset = {(p.__name__, f.name) for p in PLAIN for f in dataclasses.fields(p)} - {
        (p.__name__, name) for p, name in keys.values()}
    assert unset == {
        ("LoopConfig", "eval_seed"), ("LoopConfig", "export_final"), ("LoopConfig", "switch_interval_s"),
        ("TrainerConfig", "betas"), ("TrainerConfig", "topk"),  # set in code only
        # build.trainer_config: from trainer.lora (enabled, top_layers), trainer.behavior_correction with
        # policy.quantize, and loop.seed
        ("TrainerConfig", "lora"), ("TrainerConfig", "behavior_correction"), ("TrainerConfig", "seed")}
    assert keys["rollout.temperature"] == (TrainerConfig, "temperature")  # the loop samples at its trainer's


def test_every_plain_key_reaches_the_loop_and_trainer_configs():
    special = {"rollout.top_p": 1.0,  # training needs top_p 1
               "method": "hybrid"}  # needs the hint judge set below
    values = {key: special.get(key, other_value(*source)) for key, source in plain_keys().items()}
    sets = [f"{key}={','.join(value) if isinstance(value, tuple) else value}" for key, value in values.items()]
    config = load_config(None, [*sets, "judge.type=hint", "trainer.lora.enabled=true"])
    trainer, loop = trainer_config(config, num_layers=4), loop_config(config)
    built = {LoopConfig: loop, TrainerConfig: trainer, LoraSettings: trainer.lora,
             WarmStartConfig: warm_start_config(config)}
    for key, (plain, name) in plain_keys().items():
        assert getattr(built[plain], name) == values[key], key
    assert trainer.temperature == values["rollout.temperature"] and not hasattr(loop, "temperature")  # one field
    assert trainer.seed == loop.seed == values["loop.seed"]


def test_a_section_has_the_plain_default_and_its_own_where_they_differ():
    config = RunConfig()
    assert config.loop.steps == LoopConfig.steps and config.rollout.workers == LoopConfig.num_workers
    assert config.trainer.lr == TrainerConfig.lr and config.trainer.lora.target_modules == list(
        LoraSettings.target_modules)
    assert config.trainer.behavior_correction == "" and TrainerConfig.behavior_correction == "none"  # "": by quantize
    assert trainer_config(config).lora is None and trainer_config(config).behavior_correction == "none"


def test_check_reads_the_plain_configs_without_importing_torch():
    code = ("import sys\nfrom clawgym import launchers\nfrom clawgym.rl.launch import check_config\n"
            "check_config(launchers.resolve('toolcall'))\nassert 'torch' not in sys.modules, 'torch was imported'\n")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=120)
