"""The code paths that only run on CUDA, shown as far as a CPU can show them (issue 23, defects 1-11).

Each test fails on the code before its fix: compiled runs that fall back to eager, an accumulation rule
sized for bf16 on fp32 cards, an out-of-memory step that ends the run, compile time counted as step
time, TF32 left on, stale peaks, launch-bound matmuls, a tokenizer saved by every rank, a requeued job
that cannot restart, bf16 emulated without a word, and the GPU checks seeing several GPUs.
"""

import dataclasses
import json
import logging
import os
import time
from types import SimpleNamespace

import pytest
import torch

import course_utils.pretraining.__main__ as pretrain_command
import course_utils.pretraining.config as pretrain_config
import course_utils.pretraining.loop as pretraining
from course_utils.pretraining.config import PretrainPlan, PretrainResult
from course_utils.pretraining.run import PretrainRun
from course_utils.configs import InputError
from course_utils.finetune import FinetuneConfig, fitting_batch
from course_utils.sentiment_trainer import save
from course_utils.hardware import resolve_precision, tf32
from course_utils.device_report import compile_check
from course_utils.machine import MATMUL_SIZE, matmul_tflops
from course_utils.memory import choose_accumulation, peak_memory, reset_peak_memory, rows_that_fit
from course_utils.paths import data_dir
from course_utils.pretraining.config import PretrainConfig, choose_accumulation_steps
from course_utils.pretraining.loop import pretrain

T5_V11_BASE = 247_577_856
TINY = dict(
    model_name="standin:t5-v1_1-base",
    data_path=str(data_dir() / "c4"),
    data_config=None,
    input_length=32,
    batch_size=8,
    total_steps=4,
    warmup_steps=1,
    learning_rate=1e-2,
    logging_steps=1,
    eval_every=0,
    eval_batches=1,
    checkpoint_every=0,
    attn_implementation="eager",
    shuffle_block=100,
    data_workers=0,
)


def quiet(*_args, **_kwargs):
    pass


@pytest.fixture
def hooked_model(monkeypatch):
    """Install ``hook(module, kwargs)`` as a forward pre-hook on the model every pretraining run builds."""
    build = pretraining.initial_model

    def install(hook):
        def build_with_hook(config):
            model = build(config)
            model.register_forward_pre_hook(hook, with_kwargs=True)
            return model

        monkeypatch.setattr(pretraining, "initial_model", build_with_hook)

    return install


@pytest.fixture
def dynamo_warnings():
    """Warnings torch._dynamo logs while the test runs (its loggers do not reach caplog)."""
    seen: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("torch._dynamo.convert_frame")  # does not propagate; it names the limit
    logger.addHandler(handler)
    yield seen
    logger.removeHandler(handler)


# 1. Compiled runs after the first ones fell back to eager -----------------------------------------


@pytest.mark.slow
def test_five_compiled_pretraining_runs_in_one_process_all_compile(tmp_path, dynamo_warnings):
    from torch._dynamo.utils import counters

    compiled = []  # without the fix: 2 graphs in each of the first 4 runs (8 versions), none in the 5th
    for run in range(5):
        before = counters["stats"]["unique_graphs"]
        config = PretrainConfig(
            **{**TINY, "total_steps": 2},
            compile=True,
            compile_backend="aot_eager",
            output_dir=str(tmp_path / f"run{run}"),
        )
        pretrain(config, echo=quiet)
        compiled.append(counters["stats"]["unique_graphs"] - before)
    assert not [w for w in dynamo_warnings if "recompile_limit" in w], dynamo_warnings
    assert all(graphs > 0 for graphs in compiled), compiled  # every run compiled graphs of its own


def test_only_a_gpu_or_another_backend_than_inductor_compiles():
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    assert pretrain_config.compiles(PretrainConfig(), cuda) and not pretrain_config.compiles(PretrainConfig(), cpu)
    assert pretrain_config.compiles(PretrainConfig(compile_backend="aot_eager"), cpu)
    assert not pretrain_config.compiles(PretrainConfig(compile=False), cuda)


# 2 and 3. Memory: the rule by precision, and a step that still runs out of memory --------------------


@pytest.mark.parametrize(
    "gib, precision, rows_per_pass",
    [
        (14.6, "fp32", 4),
        (15.8, "fp32", 8),  # T4 and V100 16 GB: fp32, no native bf16
        (22.0, "bf16", 16),
        (39.4, "bf16", 32),
        (44.5, "bf16", 64),
        (79.1, "bf16", 128),
        (139.8, "bf16", 128),
    ],
)
def test_the_accumulation_rule_counts_the_precision_the_card_trains_in(gib, precision, rows_per_pass):
    fitting = rows_that_fit(gib, T5_V11_BASE, 512 + 114, precision)
    assert 128 // choose_accumulation(128, 1, fitting) == rows_per_pass
    per_row = {"fp32": 0.84, "bf16": 0.5}[precision]
    # What the chosen micro-batch needs by the rule's own figures stays inside 90 % of the card.
    assert rows_per_pass * per_row + 16 * T5_V11_BASE / 2**30 + 3.0 <= 0.9 * gib


def test_an_fp32_card_gets_its_accumulation_from_the_fp32_figure(monkeypatch):
    monkeypatch.setattr(pretrain_config, "gpu_gib", lambda: 15.8)  # a V100 16 GB
    chosen = choose_accumulation_steps(PretrainConfig(), 1, T5_V11_BASE, precision="fp32")
    assert chosen == 16  # 8 rows per pass, not the 16 a bf16 figure allows


def test_the_payoff_fine_tune_of_t5_v1_1_base_is_cut_to_fit_a_16_gb_card_in_fp32(monkeypatch):
    import course_utils.finetune as finetuning

    monkeypatch.setattr(finetuning, "gpu_gib", lambda: 14.6)
    fp32 = FinetuneConfig(precision="fp32")
    fitted = fitting_batch(fp32, T5_V11_BASE, 3)
    assert (fitted.per_device_batch_size, fitted.gradient_accumulation_steps) == (8, 2)  # still 16 rows a step
    assert fitting_batch(fp32, 60_506_624, 3) == fp32  # t5-small fits as it is
    monkeypatch.setattr(finetuning, "gpu_gib", lambda: 0.0)
    assert fitting_batch(fp32, T5_V11_BASE, 3) == fp32  # no GPU: unchanged


@pytest.mark.slow
def test_a_step_out_of_memory_doubles_the_accumulation_and_trains_the_same_run(tmp_path, hooked_model, monkeypatch):
    def out_of_memory_above_two_rows(module, args, kwargs):
        if module.training and kwargs["input_ids"].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    reference = pretrain(
        PretrainConfig(**TINY, gradient_accumulation_steps=4, output_dir=str(tmp_path / "ref")), echo=quiet
    )
    hooked_model(out_of_memory_above_two_rows)
    import course_utils.pretraining.run as run_module

    resets = []
    reset = run_module.reset_peak_memory
    monkeypatch.setattr(run_module, "reset_peak_memory", lambda: resets.append(1) or reset())
    lines = []
    config = PretrainConfig(**TINY, output_dir=str(tmp_path / "oom"))
    result = pretrain(config, echo=lines.append)
    assert len(resets) == 1 + 2  # the run's start, and after each new plan: the peak is the last plan's
    said = [line for line in lines if line.startswith("Out of GPU memory")]
    assert said == [
        "Out of GPU memory: accumulating twice as many micro-batches of 4 rows from now on.",
        "Out of GPU memory: accumulating twice as many micro-batches of 2 rows from now on.",
    ]
    assert result.steps == 4 and result.gradient_accumulation_steps == 4 and result.plan.micro_batch == 2
    assert result.eval_nll == pytest.approx(reference.eval_nll, rel=1e-5)
    # The config is the one asked for (accumulation 0: "choose"); the plan the run ended with is in the result.
    saved = json.loads((tmp_path / "oom" / "result.json").read_text())
    assert saved["config"] == dataclasses.asdict(config) and saved["config"]["gradient_accumulation_steps"] == 0
    assert saved["result"]["plan"] == {
        "precision": "fp32",
        "tf32": False,
        "compile": False,
        "gradient_accumulation_steps": 4,
        "micro_batch": 2,
    }


def test_out_of_memory_with_several_processes_says_what_to_set(monkeypatch):
    accelerator = SimpleNamespace(num_processes=2)
    optimizer = SimpleNamespace(zero_grad=lambda set_to_none: None)

    def failing_step(micro_batch):
        raise torch.OutOfMemoryError("CUDA out of memory")

    run = PretrainRun(PretrainConfig(), echo=quiet)
    run.plan = PretrainPlan(precision="bf16", tf32=True, compile=True, gradient_accumulation_steps=2, micro_batch=8)
    run.accelerator, run.result, run._first_step = accelerator, PretrainResult(steps=1, plan=run.plan), 0
    with pytest.raises(RuntimeError, match="--gradient-accumulation-steps"):
        run.retry_on_oom(failing_step, optimizer)


# 5. Seconds per step without the compile -----------------------------------------------------------


@pytest.mark.slow
def test_the_first_step_of_a_job_is_timed_apart(tmp_path, hooked_model):
    training_calls = []

    def slow_first_step(module, args, kwargs):  # what compiling the training graph costs at step 1
        if module.training:
            if not training_calls:
                time.sleep(2.0)
            training_calls.append(1)

    hooked_model(slow_first_step)
    result = pretrain(PretrainConfig(**TINY, output_dir=str(tmp_path)), echo=quiet)
    assert result.first_step_seconds[0] >= 2.0 and result.timed_steps == 3
    assert result.seconds_per_step < 0.5  # 2 s over 4 steps would be at least 0.5


# 6. TF32 for the run only; 7. this run's peak ------------------------------------------------------


def test_a_set_up_that_fails_halfway_leaves_tf32_and_the_signal_handlers_as_they_were(tmp_path, monkeypatch):
    import signal

    import course_utils.pretraining.run as run_module

    seen = {}

    def failing_check(config, world_size, gradient_accumulation_steps=None):
        seen["tf32 while setting up"] = torch.backends.cuda.matmul.allow_tf32
        raise InputError("a check that fails after TF32 was set")

    monkeypatch.setattr(run_module, "check_config", failing_check)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(InputError, match="after TF32 was set"):
        with PretrainRun(PretrainConfig(**TINY, tf32=True, output_dir=str(tmp_path)), echo=quiet):
            pass  # never reached
    assert seen == {"tf32 while setting up": True}  # the failure came after TF32 was switched on ...
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False  # ... and undone
    assert signal.getsignal(signal.SIGTERM) is handler


def test_tf32_is_on_inside_the_block_and_as_it_was_after():
    torch.backends.cuda.matmul.allow_tf32 = False
    with tf32(True):
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
    assert not torch.backends.cuda.matmul.allow_tf32


@pytest.mark.slow
def test_pretraining_turns_tf32_on_for_its_run_only(tmp_path, hooked_model):
    seen = []
    hooked_model(lambda module, args, kwargs: seen.append(torch.backends.cuda.matmul.allow_tf32))
    torch.backends.cuda.matmul.allow_tf32 = False
    pretrain(PretrainConfig(**{**TINY, "total_steps": 1}, tf32=True, output_dir=str(tmp_path)), echo=quiet)
    assert seen and all(seen) and not torch.backends.cuda.matmul.allow_tf32


def current_rss_mib() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(reset_peak_memory() != "process_peak_rss", reason="this kernel cannot reset the peak RSS")
def test_a_run_reports_its_own_peak_not_an_earlier_one(tmp_path):
    from course_utils.finetune import train

    block = torch.ones(3 * 2**30, dtype=torch.uint8)  # 3 GiB, touched, then freed
    del block
    baseline = current_rss_mib()
    trainer = SimpleNamespace(
        train=lambda: SimpleNamespace(training_loss=1.0),
        state=SimpleNamespace(log_history=[{"loss": 1.0, "step": 1}], global_step=1),
    )
    result = train(trainer)
    assert result.peak_memory_kind == "process_peak_rss"
    assert result.peak_memory_mib < baseline + 1024, (result.peak_memory_mib, baseline)  # not the 3 GiB block
    assert peak_memory()[0] >= current_rss_mib() - 1  # the peak is at least what is resident now


# 8. A matmul that measures the card ----------------------------------------------------------------


def test_the_gpu_matmul_measures_the_card_not_kernel_launches(monkeypatch):
    assert MATMUL_SIZE["cuda"] >= 8192  # 1.1 TFLOP a product: milliseconds, not microseconds
    clock = iter([0.0, 0.1, 0.2, 0.3, 0.4, 0.6, 9.9])  # start, then the time after each round of 10
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    # Rounds run until 0.5 s have passed: 5 rounds of 10 products of 2 * 64^3 FLOPs in 0.6 s.
    assert matmul_tflops("cpu", "float32", size=64, min_seconds=0.5) == pytest.approx(50 * 2 * 64**3 / 0.6 / 1e12)


# 9. One rank writes the tokenizer, and every rank waits ---------------------------------------------


@pytest.mark.parametrize("main_process", [True, False])
def test_the_tokenizer_is_saved_by_the_main_process_before_anyone_reloads(tmp_path, main_process):
    events = []
    trainer = SimpleNamespace(
        args=SimpleNamespace(should_save=main_process),
        save_model=lambda folder: events.append("model"),
        save_state=lambda: events.append("state"),
        accelerator=SimpleNamespace(wait_for_everyone=lambda: events.append("barrier")),
    )
    tokenizer = SimpleNamespace(save_pretrained=lambda folder: events.append("tokenizer"))
    save(trainer, tokenizer, tmp_path)
    assert events == (["model", "tokenizer", "state", "barrier"] if main_process else ["model", "state", "barrier"])


# 10. A requeued job killed in its first checkpoint save ---------------------------------------------


@pytest.mark.slow
def test_resume_auto_starts_afresh_from_a_half_written_checkpoint_and_resumes_a_whole_one(tmp_path):
    (tmp_path / "checkpoints" / ".incomplete-step-0000001").mkdir(parents=True)  # a kill during the first save
    settings = {**TINY, "total_steps": 2, "checkpoint_every": 1}
    with pytest.raises(FileNotFoundError, match="resume auto"):
        pretrain(PretrainConfig(**settings, resume=True, output_dir=str(tmp_path)), echo=quiet)
    lines = []
    fresh = pretrain(PretrainConfig(**settings, resume="auto", output_dir=str(tmp_path)), echo=lines.append)
    assert fresh.steps == 2 and any("resume auto: no complete checkpoint" in line for line in lines)
    lines.clear()
    again = pretrain(PretrainConfig(**settings, resume="auto", output_dir=str(tmp_path)), echo=lines.append)
    assert any(line.startswith("resume auto: resuming from") and "step-0000002" in line for line in lines)
    assert again.eval_nll == fresh.eval_nll  # nothing left to train: the same run


def test_the_command_line_takes_resume_auto_and_refuses_other_words(capsys):
    parsed = vars(pretrain_command.parser().parse_args(["--resume", "auto"]))
    assert (
        parsed["resume"] == "auto"
        and vars(pretrain_command.parser().parse_args(["--resume", "true"]))["resume"] is True
    )
    with pytest.raises(SystemExit):
        pretrain_command.parser().parse_args(["--resume", "sometimes"])
    with pytest.raises(InputError, match="true, false or auto"):
        pretrain_config.check_config(PretrainConfig(resume="yes please"), 1)


# 11. bf16 on a GPU that only emulates it; can torch.compile build kernels? ---------------------------


def test_an_explicit_bf16_on_a_gpu_without_native_bf16_is_refused(monkeypatch):
    import course_utils.hardware as hardware

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Tesla V100-SXM2-16GB")
    monkeypatch.setattr(hardware, "native_bf16", lambda: False)
    with pytest.raises(InputError, match="V100.*no native bf16.*'fp32' or 'auto'"):
        resolve_precision("bf16")
    assert resolve_precision("auto") == "fp32"
    monkeypatch.setattr(hardware, "native_bf16", lambda: True)
    assert resolve_precision("bf16") == "bf16"


def test_the_compile_check_names_a_failure():
    # Its success, inductor building C++ kernels on this CPU, is asserted by the GPU check's tiny test.
    failed = compile_check("cpu", backend="no_such_backend")
    assert not failed["compiles"] and "no_such_backend" in failed["error"]


# 4. The tests and checks keep to one GPU --------------------------------------------------------------


def test_the_test_session_sees_one_gpu_at_most():
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    assert visible is not None and "," not in visible  # set by tests/conftest.py before CUDA starts


def test_dataclass_fields_have_help_for_the_new_settings():
    names = {f.name for f in dataclasses.fields(PretrainConfig)}
    assert {"compile_backend", "resume"} <= names
    text = pretrain_command.parser().format_help()
    assert "true, false or auto" in text and "aot_eager" in text
