"""What only a CUDA GPU can show: a bf16 training step, a torch.compile step, the CUDA allocator's peak and
evaluation on the training device. On a CPU every test here skips itself and says why; `make gpu-check`
runs them on a GPU node (one GPU, only pytest needed), then the full sizes.

    python3 -m pytest tests/test_gpu.py
"""

import math

import pytest
import torch

from course_utils.from_notebooks.pretraining_loop import pretrain
from course_utils.from_notebooks.sentiment_trainer import (
    add_label_words,
    build_trainer,
    count_answer_tokens,
    generate_answers,
    tokenize_pairs,
)
from course_utils.lessons.finetune import FinetuneConfig, train
from course_utils.machinery.hardware import native_bf16, resolve_precision, tf32, training_device
from course_utils.machinery.memory import peak_memory, reset_peak_memory
from course_utils.machinery.paths import data_dir
from course_utils.machinery.profiles import get_profile
from course_utils.models_and_data.data import load_imdb
from course_utils.models_and_data.models import load_model, load_tokenizer
from course_utils.pretraining.config import PretrainConfig

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU; this machine has none"),
]
SMALL = "standin:t5-small"


def test_the_training_device_is_the_gpu_and_models_load_onto_it():
    assert training_device().type == "cuda"
    assert next(load_model(SMALL).parameters()).device.type == "cuda"


@pytest.mark.skipif(torch.cuda.is_available() and not native_bf16(), reason="this GPU has no native bf16")
def test_a_bf16_fine_tuning_step_trains_on_the_gpu(tmp_path):
    config = FinetuneConfig(
        model_name=SMALL,
        data_path=str(data_dir() / "imdb"),
        output_dir=str(tmp_path),
        num_train_epochs=1,
        per_device_batch_size=8,
        max_train_rows=32,
        logging_steps=1,
        precision="bf16",
    )
    splits = add_label_words(load_imdb(get_profile().imdb, config.max_train_rows, 8)[0])
    tok = load_tokenizer(SMALL)
    train_set = tokenize_pairs(
        splits["train"], tok, "text", "label_text", config.task_prefix, 512, count_answer_tokens(tok)
    )
    model = load_model(SMALL)
    trainer = build_trainer(config, model, tok, train_set)
    assert resolve_precision("auto") == "bf16" and trainer.args.bf16 and not trainer.args.fp16
    result = train(trainer)
    losses = [row["loss"] for row in result.log_history if "loss" in row]
    assert result.steps == 4 and len(losses) == 4 and all(math.isfinite(x) and x > 0 for x in losses)
    assert next(model.parameters()).device.type == "cuda"


def test_the_cuda_peak_counts_a_tensor_allocated_on_the_gpu():
    reset_peak_memory()
    before = torch.cuda.memory_allocated() / 2**20
    block = torch.empty(256 * 2**20, dtype=torch.uint8, device="cuda")  # 256 MiB
    mib, kind = peak_memory()
    del block
    assert kind == "cuda_max_allocated" and before + 256 <= mib < before + 256 + 64
    reset_peak_memory()
    assert peak_memory()[0] < before + 64  # a new peak starts from what is allocated now


def test_a_compiled_bf16_pretraining_run_learns_and_evaluates_on_the_gpu(tiny_pretraining, tmp_path):
    config = PretrainConfig(
        # the shared toy run, longer, with the library's attention (SDPA), compiled
        **{**tiny_pretraining, "total_steps": 12, "eval_every": 0, "checkpoint_every": 0, "attn_implementation": None},
        compile=True,
        precision="auto",
        output_dir=str(tmp_path),
    )
    from torch._dynamo.utils import counters

    graphs = counters["stats"]["unique_graphs"]
    result = pretrain(config, echo=lambda *a, **k: None)
    first, last = result.eval_nll[0], result.eval_nll[max(result.eval_nll)]
    assert counters["stats"]["unique_graphs"] > graphs  # it compiled ...
    assert result.steps == 12 and math.isfinite(last) and last < first  # ... learned, on the GPU
    assert peak_memory()[1] == "cuda_max_allocated"


def input_sensitive(model):
    """``model`` with weights redrawn at std 0.5 (seeded): a fresh stand-in answers every input alike
    (all "unknown", all padding), so equal answers on two devices would prove nothing."""
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
    return model


def test_evaluation_generates_on_the_gpu_in_the_input_order():
    tok = load_tokenizer(SMALL)
    model = input_sensitive(load_model(SMALL))

    def generate_texts(model, tok, texts, prefix, max_source_length, batch_size):
        # lesson 01's batched generation; special tokens suppressed, so that every answer is made of words
        return generate_answers(
            model, tok, texts, prefix, max_source_length, 4, batch_size, suppress_tokens=tok.all_special_ids
        )

    texts = ["A fine film.", "Dull and far too long, I left early.", "Superb."]
    with tf32(False):
        torch.cuda.reset_peak_memory_stats()
        weights_only = torch.cuda.memory_allocated()  # the model is on the GPU already
        on_gpu = generate_texts(model, tok, texts, "sst2 sentence: ", 512, batch_size=2)
        assert torch.cuda.max_memory_allocated() > weights_only  # generation itself allocated on the GPU
        on_cpu = generate_texts(model.to("cpu"), tok, texts, "sst2 sentence: ", 512, batch_size=3)
    assert len(set(on_cpu)) == 3, on_cpu  # the answers tell the inputs apart ...
    assert on_gpu == on_cpu  # ... and come back in the input order, whatever the batching and device
