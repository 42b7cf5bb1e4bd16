"""DeepSpeed ZeRO for lesson 02: checked configs, launcher variables, memory per stage.

    config = load_deepspeed_config(deepspeed_config_path("zero2"), world_size=1,
                                   per_device_batch_size=16, precision="fp32")
    launcher_environment()        # in a notebook: RANK, WORLD_SIZE, ... as a launcher would set them
    model_state_table({"t5-base": t5_sizes("t5-base")}, gpus=(1, 8, 64))

The configs in ``deepspeed_configs/`` leave to the Hugging Face Trainer every value it knows
("auto"); ``check_deepspeed_config`` catches the mistakes DeepSpeed would only report after
start-up (or never), and says what to change.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from course_utils.from_notebooks.zero_memory import SETUPS, paper_bytes
from course_utils.machinery.configs import InputError
from course_utils.machinery.hardware import FP16_REFUSAL
from course_utils.machinery.paths import repo_root

CONFIG_NAMES = ("zero1", "zero2", "zero3", "zero2_offload", "zero3_offload")
OFFLOAD_DEVICES = ("none", "cpu", "nvme")
LAUNCHER_VARIABLES = ("MASTER_ADDR", "MASTER_PORT", "RANK", "LOCAL_RANK", "WORLD_SIZE")


class DeepSpeedConfigError(InputError):
    """A DeepSpeed config that cannot work for this run; the message says what to change."""


def deepspeed_config_path(name: str) -> Path:
    """``deepspeed_configs/<name>.json`` in the repository."""
    if name not in CONFIG_NAMES:
        raise ValueError(f"Unknown DeepSpeed config {name!r}: choose one of {', '.join(CONFIG_NAMES)}.")
    return repo_root() / "deepspeed_configs" / f"{name}.json"


def load_deepspeed_config(
    path: str | os.PathLike | dict,
    world_size: int = 1,
    per_device_batch_size: int = 16,
    gradient_accumulation_steps: int = 1,
    precision: str = "fp32",
) -> dict:
    """The JSON config at ``path`` (or the course's config of that name, e.g. "zero2", or a config already
    read, as a dict), checked against the run that will use it."""
    if isinstance(path, dict):
        check_deepspeed_config(
            path, "the config given", world_size, per_device_batch_size, gradient_accumulation_steps, precision
        )
        return path
    path = deepspeed_config_path(str(path)) if str(path) in CONFIG_NAMES else Path(path)
    try:
        config = json.loads(path.read_text())
    except FileNotFoundError:
        raise DeepSpeedConfigError(
            f"{path}: no such file; the course's configs are {', '.join(CONFIG_NAMES)} in deepspeed_configs/."
        ) from None
    except json.JSONDecodeError as err:
        raise DeepSpeedConfigError(f"{path}: not valid JSON ({err}).") from None
    check_deepspeed_config(config, str(path), world_size, per_device_batch_size, gradient_accumulation_steps, precision)
    return config


def check_deepspeed_config(
    config: dict,
    where: str,
    world_size: int,
    per_device_batch_size: int,
    gradient_accumulation_steps: int,
    precision: str,
) -> None:
    """Raise DeepSpeedConfigError listing every problem, each with its fix."""
    zero = config.get("zero_optimization")
    if not isinstance(zero, dict):
        raise DeepSpeedConfigError(f'{where}: no zero_optimization section; add one with a "stage".')
    problems = (
        _stage_problems(zero)
        + _offload_problems(zero)
        + _batch_problems(config, world_size, per_device_batch_size, gradient_accumulation_steps)
        + _precision_problems(config, precision)
    )
    if problems:
        raise DeepSpeedConfigError(f"{where}:\n  - " + "\n  - ".join(problems))


def _stage_problems(zero: dict) -> list[str]:
    stage = zero.get("stage")
    if isinstance(stage, str) and stage.strip() in ("0", "1", "2", "3"):
        return [f"zero_optimization.stage is the string {stage!r}; write the number {stage.strip()}, without quotes."]
    if isinstance(stage, bool) or stage not in (0, 1, 2, 3):
        return [f"zero_optimization.stage is {stage!r}; use 0, 1, 2 or 3."]
    return []


def _offload_problems(zero: dict) -> list[str]:
    problems = []
    stage = zero.get("stage", 0)
    if isinstance(stage, bool) or not isinstance(stage, int):
        stage = None  # _stage_problems names it; the offload rules below need a valid stage
    for key, minimum_stage in (("offload_optimizer", 1), ("offload_param", 3)):
        offload = zero.get(key)
        if offload is None:
            continue
        device = offload.get("device") if isinstance(offload, dict) else None
        if device not in OFFLOAD_DEVICES:
            problems.append(f"zero_optimization.{key}.device is {device!r}; use one of {', '.join(OFFLOAD_DEVICES)}.")
        elif device == "nvme" and not offload.get("nvme_path"):
            problems.append(
                f"zero_optimization.{key} offloads to nvme but has no nvme_path; add the folder of a fast local disk."
            )
        if device not in (None, "none") and stage is not None and stage < minimum_stage:
            problems.append(
                f"zero_optimization.{key} needs stage {minimum_stage} or higher, but stage is "
                f"{zero.get('stage')}; raise the stage or remove {key}."
            )
    return problems


def _batch_problems(config: dict, world_size: int, per_device: int, accumulation: int) -> list[str]:
    problems = []
    for key, run_value, run_name in (
        ("train_micro_batch_size_per_gpu", per_device, "per_device_batch_size"),
        ("gradient_accumulation_steps", accumulation, "gradient_accumulation_steps"),
    ):
        value = config.get(key, "auto")
        if value != "auto" and value != run_value:
            problems.append(
                f'{key} is {value} but the run uses {run_name}={run_value}; set it to "auto" so it follows the run.'
            )
    total = config.get("train_batch_size", "auto")
    expected = per_device * accumulation * world_size
    if total != "auto" and total != expected:
        problems.append(
            f"train_batch_size is {total}, but {per_device} per device x {accumulation} accumulation "
            f'x {world_size} processes = {expected}; set it to {expected} or to "auto".'
        )
    return problems


def _precision_problems(config: dict, precision: str) -> list[str]:
    problems = []
    if config.get("fp16", {}).get("enabled") not in (None, False):
        problems.append(f'fp16 is enabled; {FP16_REFUSAL} Set fp16.enabled to false and use bf16 "auto".')
    bf16 = config.get("bf16", {}).get("enabled")
    if bf16 is True and precision != "bf16":
        problems.append(
            'bf16.enabled is true but this device has no bf16 (a CPU or a GPU older than Ampere); set it to "auto".'
        )
    if bf16 is False and precision == "bf16":
        problems.append('bf16.enabled is false but the run trains in bf16; set it to "auto".')
    return problems


def launcher_environment(master_port: int | None = None) -> dict[str, str]:
    """Set the variables a launcher would (one process: rank 0 of 1); return those it set.

    Inside ``deepspeed``/``torchrun`` everything is set already and nothing changes. Without
    these variables DeepSpeed tries to discover the ranks through MPI and fails on mpi4py.
    Calling it twice is safe.
    """
    ranks = [name for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE") if name in os.environ]
    if ranks and len(ranks) < 3:
        missing = sorted({"RANK", "LOCAL_RANK", "WORLD_SIZE"} - set(ranks))
        raise RuntimeError(
            f"{', '.join(ranks)} set but {', '.join(missing)} missing: start the run with a "
            "launcher (deepspeed, torchrun) or unset them for a single process."
        )
    defaults = {
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(master_port or free_port()),
        "RANK": "0",
        "LOCAL_RANK": "0",
        "WORLD_SIZE": "1",
    }
    chosen = {name: value for name, value in defaults.items() if name not in os.environ}
    os.environ.update(chosen)
    return chosen


def without_launcher_variables() -> dict[str, str]:
    """A copy of the environment without the launcher's variables: a fresh launch chooses its own."""
    return {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARIABLES}


def free_port() -> int:
    """A TCP port nothing listens on now (so two runs on one machine do not collide)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# Model-state memory per GPU. Ψ parameters trained with mixed-precision Adam keep 16 bytes each:
# 2 (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master weights, momentum, variance).

# Published T5 sizes (T5 paper, table 14); vocabulary 32,128. "t5-3b" is the 3B-parameter model.
T5_SHAPES = {
    "t5-small": dict(d_model=512, d_ff=2048, num_heads=8, d_kv=64, num_layers=6),
    "t5-base": dict(d_model=768, d_ff=3072, num_heads=12, d_kv=64, num_layers=12),
    "t5-3b": dict(d_model=1024, d_ff=16384, num_heads=32, d_kv=128, num_layers=24),
}


def model_sizes(model) -> tuple[int, int]:
    """(all parameters, parameters of the largest single module), as DeepSpeed's estimators count them."""
    total = sum(p.numel() for p in model.parameters())
    largest = max(sum(p.numel() for p in module.parameters(recurse=False)) for module in model.modules())
    return total, largest


def t5_sizes(name: str) -> tuple[int, int]:
    """Sizes of a published T5, counted on the meta device: no weights, no download."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=32128, feed_forward_proj="relu", **T5_SHAPES[name])
    with torch.device("meta"):
        return model_sizes(T5ForConditionalGeneration(config))


def deepspeed_bytes(params: int, largest_layer: int, setup: str, gpus: int, gpus_per_node: int = 8) -> float | None:
    """Model states per GPU by DeepSpeed's own estimators; None for stages 0 and 1 (it has none)."""
    from deepspeed.runtime.zero.stage3 import estimate_zero3_model_states_mem_needs
    from deepspeed.runtime.zero.stage_1_and_2 import estimate_zero2_model_states_mem_needs

    per_node = min(gpus, gpus_per_node)
    nodes = gpus // per_node
    if setup in ("stage 2", "stage 2 + offload"):
        _, gpu = estimate_zero2_model_states_mem_needs(params, per_node, nodes, cpu_offload=setup.endswith("offload"))
        return float(gpu)
    if setup in ("stage 3", "stage 3 + offload"):
        offload = setup.endswith("offload")
        _, gpu, _ = estimate_zero3_model_states_mem_needs(
            params, largest_layer, per_node, nodes, cpu_offload=offload, cpu_offload_params=offload
        )
        return float(gpu)
    return None


def model_state_table(models: dict, gpus=(1, 8, 64)):
    """Long table: model, setup, GPUs, paper GiB, DeepSpeed GiB (NaN where DeepSpeed has no estimator).

    ``models`` maps a name to a model, a published T5's name (counted on the meta device, see ``t5_sizes``)
    or its (parameters, largest layer) sizes."""
    import pandas as pd

    def sizes(model) -> tuple[int, int]:
        return t5_sizes(model) if isinstance(model, str) else model if isinstance(model, tuple) else model_sizes(model)

    models = {name: sizes(model) for name, model in models.items()}

    def gib(size: float | None) -> float:
        return float("nan") if size is None else size / 2**30

    rows = [
        {
            "model": name,
            "parameters": params,
            "setup": setup,
            "gpus": n,
            "paper_gib": gib(paper_bytes(params, setup, n)),
            "deepspeed_gib": gib(deepspeed_bytes(params, largest, setup, n)),
        }
        for name, (params, largest) in models.items()
        for setup in SETUPS
        for n in gpus
    ]
    return pd.DataFrame(rows)
