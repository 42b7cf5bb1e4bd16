"""The code of lesson 01 · Fine-tune T5-small to read the sentiment of movie reviews

Written by `python tools/export.py` from the cells marked #@save in
notebooks/01_t5_small_imdb_finetune.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""

import json
from pathlib import Path
from typing import NamedTuple

import pandas as pd
import torch
from torch.utils.tensorboard import SummaryWriter
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments
from transformers.integrations import TensorBoardCallback

from course_utils.generation import generate_in_order


LABEL_WORDS = ("negative", "positive")  # IMDB's label 0 and label 1


def add_label_words(splits):
    """``splits`` (a Dataset or DatasetDict) with a ``label_text`` column: the answer word of each row's label.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Labels as words".
    """
    return splits.map(lambda batch: {"label_text": [LABEL_WORDS[label] for label in batch["label"]]}, batched=True)


def tokenize_pairs(
    split,
    tokenizer,
    source_column: str,
    target_column: str,
    prefix: str,
    max_source_length: int,
    max_target_length: int,
):
    """input_ids, attention_mask and labels for every row, cut at the maximum lengths but NOT padded:
    the collator pads each batch to its own longest row.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "The prefix, and tokenizing with `text_target=`".
    """

    def tokenize(batch):
        return tokenizer(
            [prefix + text for text in batch[source_column]],
            text_target=batch[target_column],
            max_length=max_source_length,
            max_target_length=max_target_length,
            truncation=True,
        )

    return split.map(tokenize, batched=True, remove_columns=split.column_names, desc="tokenize")


def count_answer_tokens(tokenizer, words=("negative", "positive")) -> int:
    """Tokens of the longest answer word with its end-of-sequence token: the labels' length, and
    generate's max_new_tokens.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "The prefix, and tokenizing with `text_target=`".
    """
    return max(len(tokenizer(word).input_ids) for word in words)


def generate_answers(
    model,
    tokenizer,
    texts,
    prefix: str,
    max_source_length: int,
    max_new_tokens: int,
    batch_size: int = 32,
    progress: bool = False,
) -> list[str]:
    """The model's greedy answer to each text, decoded, in the order of ``texts``.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Accuracy before fine-tuning".
    """

    def answer(batch_texts: list[str]) -> list[str]:
        batch = tokenizer(
            [prefix + text for text in batch_texts],
            max_length=max_source_length,
            truncation=True,
            padding=True,
            return_tensors="pt",
        ).to(model.device)
        with torch.no_grad():
            output = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
        return tokenizer.batch_decode(output, skip_special_tokens=True)  # (batch, new tokens) -> texts

    model.eval()
    return generate_in_order(texts, batch_size, answer, progress)


def label_word(answer: str) -> str:
    """The label word a generated answer names, or "unknown" (counted as wrong).

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Accuracy before fine-tuning".
    """
    word = answer.strip().lower().rstrip(".!")
    return word if word in LABEL_WORDS else "unknown"


class Score(NamedTuple):
    accuracy: float
    unknown: int  # answers that are neither label word
    confusion: pd.DataFrame  # rows: the true word; columns: the answer's word


def score_answers(answers: list[str], truth: list[str]) -> Score:
    """Accuracy of the generated ``answers`` against the ``truth``'s label words, and their confusion matrix.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Accuracy before fine-tuning".
    """
    if len(answers) != len(truth) or not truth:
        raise ValueError(f"{len(answers)} answers for {len(truth)} reviews: they must pair up, and be some.")
    predicted = [label_word(a) for a in answers]
    confusion = pd.crosstab(
        pd.Categorical(truth, categories=LABEL_WORDS),
        pd.Categorical(predicted, categories=(*LABEL_WORDS, "unknown")),
        rownames=["true"],
        colnames=["answer"],
        dropna=False,
    )
    correct = sum(p == t for p, t in zip(predicted, truth))
    return Score(correct / len(truth), predicted.count("unknown"), confusion)


def write_answers(path, answers: list[str], truth: list[str]) -> Path:
    """Each review's answer beside its true label word, in the test split's order, as JSON at ``path``: two runs
    can then be compared review by review (lessons 02 and 05).

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Accuracy before fine-tuning".
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"answers": list(answers), "truth": list(truth)}))
    return path


def training_arguments(config) -> Seq2SeqTrainingArguments:
    """The Trainer's settings for ``config``, a FinetuneConfig whose precision is "bf16" or "fp32".

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Fine-tune".
    """
    return Seq2SeqTrainingArguments(
        output_dir=config.output_dir,
        num_train_epochs=config.num_train_epochs,
        per_device_train_batch_size=config.per_device_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_fraction,  # transformers 5 reads a float below 1 as a share of all steps
        optim="adamw_torch",
        seed=config.seed,
        data_seed=config.seed,
        bf16=config.precision == "bf16",
        fp16=False,  # T5 overflows in fp16
        use_cpu=not torch.cuda.is_available(),  # no GPU: train on the CPU (README, "Multi-GPU": why say so)
        average_tokens_across_devices=False,  # each process averages its own tokens' loss (README, "Multi-GPU")
        train_sampling_strategy="group_by_length" if config.group_by_length else "random",
        logging_steps=config.logging_steps,
        logging_first_step=True,  # the loss curve starts at step 1, and a run shorter than logging_steps has one
        save_strategy="no",  # we save once, at the end, with save_model and save_state
        eval_strategy="no",  # accuracy is measured by generation, after training
        report_to="none",  # TensorBoard is attached explicitly, so its folder is known
        deepspeed=config.deepspeed,  # lesson 02: the path of a ZeRO config; None: no DeepSpeed
    )


def build_trainer(config, model, tokenizer, train_set) -> Seq2SeqTrainer:
    """A Seq2SeqTrainer that pads each batch dynamically (labels with -100) and logs to TensorBoard.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Fine-tune".
    """
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    writer = SummaryWriter(log_dir=str(Path(config.output_dir) / "tensorboard"))
    return Seq2SeqTrainer(
        model=model,
        args=training_arguments(config),
        data_collator=collator,
        train_dataset=train_set,
        processing_class=tokenizer,
        callbacks=[TensorBoardCallback(tb_writer=writer)],
    )


def save(trainer, tokenizer, model_dir) -> Path:
    """Model and tokenizer into ``model_dir``, the trainer state (its log history) into the run's output_dir.

    Every process calls it (under ZeRO-3 the weights are gathered collectively); one writes, and all
    wait until the folder is whole, because the main process reloads it next.

    Defined in notebooks/01_t5_small_imdb_finetune.ipynb, section "Save, reload and classify your own reviews".
    """
    trainer.save_model(str(model_dir))  # the Trainer writes on the main process only
    if trainer.args.should_save:
        tokenizer.save_pretrained(str(model_dir))
    trainer.save_state()  # trainer_state.json
    trainer.accelerator.wait_for_everyone()
    return Path(model_dir)
