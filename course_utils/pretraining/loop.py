"""The code of lesson 04 · Pretrain a T5 from scratch, the nanoT5 way

Written by `python tools/export.py` from the cells marked #@save in
notebooks/04_nanot5_pretraining.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

import contextlib
import time

from accelerate.utils import set_seed

from course_utils.models import load_model, load_tokenizer, seq2seq_from_config
from course_utils.pretraining.optim import build_optimizer, build_scheduler
from course_utils.pretraining.run import PretrainRun


def initial_model(config):
    """The T5 a run starts from: ``model_name``'s architecture with seeded random weights (nanoT5 pretrains
    without dropout), or its released weights when ``from_pretrained``.

    Defined in notebooks/04_nanot5_pretraining.ipynb, section "The model: T5 v1.1 from its config".
    """
    set_seed(config.seed)  # the same config always gives the same start
    if config.from_pretrained:
        return load_model(config.model_name, attn_implementation=config.attn_implementation)
    return seq2seq_from_config(
        config.model_name, config_changes={"dropout_rate": 0.0}, attn_implementation=config.attn_implementation
    )


def train_step(accelerator, model, batch: dict, micro_batch: int):
    """Forward and backward over one step's rows in micro-batches of ``micro_batch`` rows; the step's mean loss.

    Defined in notebooks/04_nanot5_pretraining.ipynb, section "The training loop".
    """
    parts = [
        {key: rows[i : i + micro_batch] for key, rows in batch.items()}  # (micro_batch, length) each
        for i in range(0, len(batch["labels"]), micro_batch)
    ]
    step_loss = 0.0
    for i, part in enumerate(parts):
        # The processes average their gradients once per step, after the last micro-batch.
        with contextlib.nullcontext() if i == len(parts) - 1 else accelerator.no_sync(model):
            loss = model(**{k: v.to(accelerator.device, non_blocking=True) for k, v in part.items()}).loss
            loss = loss / len(parts)  # the micro-batches' gradients add up to the step's mean
            accelerator.backward(loss)
        step_loss += loss.detach()
    return step_loss


def pretrain(config, echo=print):
    """Pretrain (or resume) as ``config`` says; the losses, held-out NLLs and the saved model's folder.

    Defined in notebooks/04_nanot5_pretraining.ipynb, section "The training loop".
    """
    with PretrainRun(config, echo) as run:  # Accelerate, TensorBoard, checkpoints, held-out rows, SIGTERM
        tokenizer = load_tokenizer(config.model_name)
        model = initial_model(config)
        run.plan_batch(model)  # micro-batch and accumulation for this GPU's memory, precision, compile
        optimizer = build_optimizer(config.optimizer, model, config.learning_rate, config.weight_decay)
        scheduler = build_scheduler(
            config.lr_scheduler, optimizer, config.warmup_steps, config.total_steps, config.final_learning_rate
        )
        model, optimizer = run.prepare(model, optimizer, scheduler)  # onto the device; compiled where planned
        step, batches = run.start_data(model, tokenizer)  # 0, or a checkpoint's step restored; workers start
        model.train()
        while step < run.last_step:
            step += 1
            started = time.perf_counter()
            batch = next(batches)  # this process's rows of the step: (batch_size / processes, input_length)
            # forward and backward; on running out of GPU memory, again with micro-batches half as large
            loss = run.retry_on_oom(
                lambda micro_batch: train_step(run.accelerator, model, batch, micro_batch), optimizer
            )
            grad_norm = run.accelerator.clip_grad_norm_(model.parameters(), config.grad_clip)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            run.maybe_log(step, loss, grad_norm, scheduler, model, time.perf_counter() - started)
            run.maybe_evaluate(step, model)
            if run.checkpoint_if_signalled(step):  # SIGTERM or SIGUSR1: checkpointed, resume later
                break
            run.maybe_save_checkpoint(step)
        return run.finish(model, tokenizer)  # the last NLL, the model saved, result.json
