"""The pretraining config and its plan (course_utils/pretraining/config.py): nanoT5's recipe, the profile's settings,
the accumulation it plans, compile.
"""

import pytest
import torch

import course_utils.machinery.memory as memory
import course_utils.pretraining.config as pretrain_config
from course_utils.machinery.profiles import FULL_NOTEBOOK_PRETRAIN, get_profile
from course_utils.pretraining.config import PretrainConfig, planned_accumulation_steps

T5_V11_BASE = 247_577_856


def test_only_a_gpu_or_another_backend_than_inductor_compiles():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert pretrain_config.compiles(PretrainConfig(), cuda) and not pretrain_config.compiles(PretrainConfig(), cpu)
    assert pretrain_config.compiles(PretrainConfig(compile_backend="aot_eager"), cpu)
    assert not pretrain_config.compiles(PretrainConfig(compile=False), cuda)


def test_an_fp32_card_gets_its_accumulation_from_the_fp32_figure(monkeypatch):
    monkeypatch.setattr(memory, "gpu_gib", lambda: 15.8)  # a V100 16 GB
    chosen = planned_accumulation_steps(PretrainConfig(), 1, T5_V11_BASE, precision="fp32")
    assert chosen == 16  # 8 rows per pass, not the 16 a bf16 figure allows


GIB = 2**30


def test_the_command_defaults_are_nanot5s_recipe():
    from course_utils.machinery.configs import argument_parser

    recipe = PretrainConfig()
    assert (
        recipe.total_steps,
        recipe.batch_size,
        recipe.input_length,
        recipe.learning_rate,
        recipe.warmup_steps,
        recipe.optimizer,
        recipe.lr_scheduler,
        recipe.final_learning_rate,
    ) == (65536, 128, 512, 2e-2, 10000, "adamwscale", "cosine", 1e-5)
    assert recipe.compile and recipe.eval_batches == 100 and recipe.checkpoint_every == 5000
    parsed = argument_parser(PretrainConfig, "p", "d").parse_args([])
    assert PretrainConfig(**vars(parsed)) == recipe


def test_the_full_notebook_changes_only_its_budget():
    config = PretrainConfig.for_profile(get_profile("full"), "out")
    recipe = PretrainConfig(output_dir="out")
    changed = {name for name in recipe.__dataclass_fields__ if getattr(config, name) != getattr(recipe, name)}
    assert changed == set(FULL_NOTEBOOK_PRETRAIN)
    assert config.checkpoint_every and config.total_steps * 0.56 / 3600 <= 1.0  # within an hour on an A100


def test_any_pretraining_field_can_be_set_from_the_profile_and_typos_are_refused():
    profile = get_profile("full", pretrain={"gradient_accumulation_steps": 4})
    assert PretrainConfig.for_profile(profile, "out").gradient_accumulation_steps == 4
    with pytest.raises(ValueError, match="gradient_acumulation_steps"):
        PretrainConfig.for_profile(get_profile("full", pretrain={"gradient_acumulation_steps": 4}), "out")


def test_accumulation_is_chosen_only_when_asked(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(
        torch.cuda, "get_device_properties", lambda index: type("Props", (), {"total_memory": int(22.0 * GIB)})()
    )
    assert planned_accumulation_steps(PretrainConfig(), 1, 247_577_856) == 8
    assert planned_accumulation_steps(PretrainConfig(gradient_accumulation_steps=8), 1, 1) == 8
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert planned_accumulation_steps(PretrainConfig(), 1, 247_577_856) == 1
