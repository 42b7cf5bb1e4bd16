"""DeepSpeed configs, their checker, the launcher variables and the memory formulas."""

import json
import os

import pytest

from course_utils.lessons.zero import (
    CONFIG_NAMES,
    LAUNCHER_VARIABLES,
    SETUPS,
    DeepSpeedConfigError,
    check_deepspeed_config,
    deepspeed_bytes,
    deepspeed_config_path,
    launcher_environment,
    load_deepspeed_config,
    model_state_table,
    paper_bytes,
    t5_sizes,
)
from course_utils.machinery.hardware import resolve_precision
from course_utils.machinery.profiles import get_profile

EXPECTED = {
    "zero1": (1, None, None),
    "zero2": (2, None, None),
    "zero3": (3, None, None),
    "zero2_offload": (2, "cpu", None),
    "zero3_offload": (3, "cpu", "cpu"),
}


@pytest.mark.parametrize("name", CONFIG_NAMES)
@pytest.mark.parametrize("world_size, precision", [(1, "fp32"), (2, "fp32"), (8, "bf16")])
def test_every_shipped_config_passes_for_any_world_size(name, world_size, precision):
    config = load_deepspeed_config(deepspeed_config_path(name), world_size=world_size, precision=precision)
    zero = config["zero_optimization"]
    stage, optimizer_device, param_device = EXPECTED[name]
    assert zero["stage"] == stage
    assert zero.get("offload_optimizer", {}).get("device") == optimizer_device
    assert zero.get("offload_param", {}).get("device") == param_device
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"):
        assert config[key] == "auto"  # the Trainer fills them in
    assert config["fp16"]["enabled"] is False and config["bf16"]["enabled"] == "auto"


def check(config, world_size=2, per_device=16, accumulation=1, precision="fp32"):
    check_deepspeed_config(config, "test.json", world_size, per_device, accumulation, precision)


def zero2(**changes):
    config = json.loads(deepspeed_config_path("zero2").read_text())
    config.update(changes)
    return config


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c: c["zero_optimization"].update(stage=4), r"stage is 4; use 0, 1, 2 or 3"),
        (
            lambda c: c.update(train_batch_size=64),
            r"train_batch_size is 64, but 16 per device x 1 accumulation "
            r"x 2 processes = 32; set it to 32",
        ),
        (
            lambda c: c.update(train_micro_batch_size_per_gpu=8),
            r"train_micro_batch_size_per_gpu is 8 but the run "
            r"uses per_device_batch_size=16",
        ),
        (lambda c: c.update(gradient_accumulation_steps=4), r"gradient_accumulation_steps is 4 .* set it to \"auto\""),
        (lambda c: c["zero_optimization"].update(offload_param={"device": "cpu"}), r"offload_param needs stage 3"),
        (
            lambda c: c["zero_optimization"].update(offload_optimizer={"device": "gpu"}),
            r"offload_optimizer.device is 'gpu'",
        ),
        (lambda c: c["zero_optimization"].update(offload_optimizer={"device": "nvme"}), r"no nvme_path"),
        (lambda c: c.update(fp16={"enabled": True}), r"fp16 is enabled; T5's activations overflow fp16"),
        (lambda c: c.update(bf16={"enabled": True}), r"bf16.enabled is true but this device has no bf16"),
        (lambda c: c.pop("zero_optimization"), r"no zero_optimization section"),
    ],
)
def test_each_mistake_is_named_with_its_fix(change, message):
    config = zero2()
    change(config)
    with pytest.raises(DeepSpeedConfigError, match=message):
        check(config)


def test_a_matching_fixed_batch_passes_and_bf16_false_is_refused_on_a_bf16_run():
    check(
        zero2(train_batch_size=64, train_micro_batch_size_per_gpu=16, gradient_accumulation_steps=2),
        world_size=2,
        accumulation=2,
    )
    with pytest.raises(DeepSpeedConfigError, match="bf16.enabled is false"):
        check(zero2(bf16={"enabled": False}), precision="bf16")


def test_all_problems_are_reported_together():
    config = zero2(train_batch_size=7, fp16={"enabled": True})
    config["zero_optimization"]["stage"] = 9
    with pytest.raises(DeepSpeedConfigError) as error:
        check(config)
    assert str(error.value).count("\n  - ") == 3


def test_a_missing_or_broken_file_is_named(tmp_path):
    with pytest.raises(DeepSpeedConfigError, match="no such file"):
        load_deepspeed_config(tmp_path / "zero9.json")
    (tmp_path / "bad.json").write_text("{stage: 2")
    with pytest.raises(DeepSpeedConfigError, match="bad.json: not valid JSON"):
        load_deepspeed_config(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="Unknown DeepSpeed config 'zero4'"):
        deepspeed_config_path("zero4")


@pytest.fixture
def no_launcher(monkeypatch):
    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_launcher_environment_sets_rank_0_of_1_once_and_reports_it(no_launcher):
    chosen = launcher_environment()
    assert set(chosen) == set(LAUNCHER_VARIABLES)
    assert {k: chosen[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE")} == {
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
    }
    assert all(os.environ[k] == v for k, v in chosen.items()) and 0 < int(chosen["MASTER_PORT"]) < 65536
    assert launcher_environment() == {}  # safe to call twice


def test_launcher_environment_leaves_a_launchers_variables_alone(no_launcher, monkeypatch):
    launched = {"MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500", "RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"}
    for name, value in launched.items():
        monkeypatch.setenv(name, value)
    assert launcher_environment() == {}
    assert {name: os.environ[name] for name in launched} == launched


def test_half_set_launcher_variables_are_an_error(no_launcher, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    with pytest.raises(RuntimeError, match="RANK set but LOCAL_RANK, WORLD_SIZE missing"):
        launcher_environment()


def test_paper_formulas_by_hand():
    psi, n = 1_000_000_000, 8
    assert paper_bytes(psi, "stage 0", n) == 16e9
    assert paper_bytes(psi, "stage 1", n) == 4e9 + 12e9 / 8  # 5.5 GB
    assert paper_bytes(psi, "stage 2", n) == 2e9 + 14e9 / 8  # 3.75 GB
    assert paper_bytes(psi, "stage 3", n) == 16e9 / 8  # 2 GB
    assert paper_bytes(psi, "stage 2 + offload", n) == 2e9
    assert paper_bytes(psi, "stage 3 + offload", n) == 0


def test_deepspeed_estimators_by_hand():
    psi, largest = 1_000_000_000, 50_000_000
    assert deepspeed_bytes(psi, largest, "stage 2", 8) == 2e9 + 18e9 / 8
    assert deepspeed_bytes(psi, largest, "stage 3", 64) == 4 * largest + int(18e9 / 64)
    assert deepspeed_bytes(psi, largest, "stage 2 + offload", 8) == 2e9
    assert deepspeed_bytes(psi, largest, "stage 3 + offload", 8) == 4 * largest
    assert deepspeed_bytes(psi, largest, "stage 1", 8) is None


def test_t5_sizes_match_the_published_parameter_counts():
    assert t5_sizes("t5-small")[0] == 60_506_624
    assert t5_sizes("t5-base") == (222_903_552, 32128 * 768)  # the largest layer is the shared embedding
    assert t5_sizes("t5-3b")[0] == 2_851_598_336


def test_model_state_table_covers_every_setup_and_gpu_count():
    table = model_state_table({"toy": (1_000_000, 100_000)}, gpus=(1, 8, 64))
    assert len(table) == len(SETUPS) * 3
    stage2 = table[(table.setup == "stage 2") & (table.gpus == 8)].iloc[0]
    assert stage2.paper_gib == pytest.approx((2e6 + 14e6 / 8) / 2**30)
    assert table[table.setup.isin(["stage 0", "stage 1"])].deepspeed_gib.isna().all()
    assert table[~table.setup.isin(["stage 0", "stage 1"])].deepspeed_gib.notna().all()


def test_the_zero_comparison_trains_both_runs_in_the_same_precision(tmp_path, monkeypatch):
    import dataclasses

    from course_utils.lessons.finetune import FinetuneConfig, deepspeed_path

    monkeypatch.setattr("course_utils.machinery.hardware.native_bf16", lambda: True)  # an A100: "auto" would mean bf16
    # Notebook 02's two configs, as its cell builds them.
    plain = FinetuneConfig.for_profile(get_profile("full"), str(tmp_path / "plain"), precision="fp32")
    zero = dataclasses.replace(plain, output_dir=str(tmp_path / "zero2"), deepspeed="zero2")
    assert FinetuneConfig.for_profile(get_profile("full"), "x").precision == "bf16"  # what "auto" would have chosen
    assert resolve_precision(plain.precision) == resolve_precision(zero.precision) == "fp32"
    differ = {f for f in plain.__dataclass_fields__ if getattr(plain, f) != getattr(zero, f)}
    assert differ == {"output_dir", "deepspeed"} and deepspeed_path(zero).endswith("zero2.json")
