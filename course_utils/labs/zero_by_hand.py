"""Lab 02L's checks, ZeRO by hand: a ZeRO-3 config with CPU offload, model-state memory per GPU by the
ZeRO paper's formulas, and the fastest setup that fits a GPU, against the course's config check, its
formulas (``zero_memory.paper_bytes``, notebook 02) and DeepSpeed's own estimator."""

from __future__ import annotations

from course_utils.from_notebooks.zero_memory import SETUPS, paper_bytes
from course_utils.labs.verdict import answer_check, close, fail, passed
from course_utils.lessons.zero import DeepSpeedConfigError, check_deepspeed_config, deepspeed_bytes

# Fastest first: offload moves states across PCIe every step, and stage 3 gathers the weights for each layer
# (the order of the Hugging Face DeepSpeed guide).
SPEED_ORDER = ("stage 0", "stage 1", "stage 2", "stage 2 + offload", "stage 3", "stage 3 + offload")
RUN = dict(world_size=2, per_device_batch_size=16, gradient_accumulation_steps=1, precision="fp32")


@answer_check
def zero3_offload_config(config) -> None:
    """The config passes the course's check for 2 processes of 16 rows, is stage 3, and offloads to the CPU."""
    if not isinstance(config, dict):
        fail("zero3_offload_config", "a dict (the JSON config read into Python)", type(config).__name__, "write a dict")
    try:
        check_deepspeed_config(config, "your config", **RUN)
    except DeepSpeedConfigError as err:
        fail(
            "zero3_offload_config",
            "a config the course's check accepts for 2 processes x 16 rows",
            " ".join(str(err).split()),
            "fix what the check lists",
        )
    zero = config["zero_optimization"]
    if zero.get("stage") != 3:
        fail(
            "zero3_offload_config",
            "zero_optimization.stage = 3",
            zero.get("stage"),
            "stage 3 partitions the weights too, which offload_param needs",
        )
    for key in ("offload_optimizer", "offload_param"):
        device = (zero.get(key) or {}).get("device")
        if device != "cpu":
            fail(
                "zero3_offload_config",
                f"zero_optimization.{key}.device = 'cpu'",
                device,
                f'add "{key}": {{"device": "cpu", "pin_memory": true}}',
            )
    passed(
        "zero3_offload_config", "stage 3, optimizer and weights offloaded to the CPU, accepted by the course's check"
    )


PARAMETERS = (60_506_624, 222_903_552, 2_851_598_336)


@answer_check
def model_state_bytes(bytes_fn) -> None:
    """``model_state_bytes(parameters, setup, gpus) -> bytes per GPU`` against the paper's formulas for every
    setup, and against DeepSpeed's estimator where the two agree (stage 2 with the optimizer offloaded)."""
    for parameters in PARAMETERS:
        for setup in SETUPS:
            for gpus in (1, 8, 64):
                got = bytes_fn(parameters, setup, gpus)
                close(
                    "model_state_bytes",
                    f"bytes per GPU for {parameters:,} parameters, {setup}, {gpus} GPUs",
                    paper_bytes(parameters, setup, gpus),
                    got,
                    "16 bytes a parameter: stage 1 partitions the optimizer's 12, stage 2 the gradients' 2 too, "
                    "stage 3 all 16; offloaded states live in CPU memory, not on the GPU",
                    rel=1e-9,
                    abs_=0.5,
                )
        got = bytes_fn(parameters, "stage 2 + offload", 8)
        close(
            "model_state_bytes",
            f"DeepSpeed's estimate for {parameters:,} parameters, stage 2 + offload, 8 GPUs",
            deepspeed_bytes(parameters, 0, "stage 2 + offload", 8),
            got,
            "only the 16-bit weights stay on the GPU",
            rel=1e-9,
            abs_=0.5,
        )
    passed(
        "model_state_bytes",
        f"{len(PARAMETERS) * len(SETUPS) * 3} cases as the paper's formulas; "
        "stage 2 + offload as DeepSpeed's estimator",
    )


def fastest_that_fits(parameters: int, gpus: int, gpu_gib: float, activation_gib: float) -> str | None:
    """The course's answer: the first setup in SPEED_ORDER whose model states and activations fit."""
    for setup in SPEED_ORDER:
        if paper_bytes(parameters, setup, gpus) / 2**30 + activation_gib <= gpu_gib:
            return setup
    return None


@answer_check
def cheapest_setup(choose_fn) -> None:
    """``choose(parameters, gpus, gpu_gib, activation_gib) -> setup or None`` on a grid of models and cards."""
    cases = [
        (p, n, gib, act)
        for p in (*PARAMETERS, 11_307_321_344)
        for n in (1, 8, 64)
        for gib in (16, 40, 80)
        for act in (2.0, 12.0)
    ]
    cases += [
        (5_000_000_000, 1, 80, 2.0),  # 74.5 GiB of states fit 80 GiB; in GB (80.0) they would not
        (60_506_624, 8, 16, 24.0),  # the activations alone exceed the card: nothing fits, None
        (2_851_598_336, 64, 40, 48.0),
    ]
    for case in cases:
        got = choose_fn(*case)
        expected = fastest_that_fits(*case)
        if got != expected:
            parameters, gpus, gib, act = case
            fail(
                "cheapest_setup",
                f"{expected!r} for {parameters:,} parameters on {gpus} GPUs of {gib} GiB with {act} GiB of activations",
                repr(got),
                "go through SPEED_ORDER fastest first and return the first setup whose states (in GiB: bytes / 2**30) "
                "plus the activations fit; None if none does",
            )
    passed("cheapest_setup", f"{len(cases)} models, GPU counts, cards and activation sizes")
