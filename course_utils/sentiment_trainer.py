"""Lesson 01's fine-tune: the tokenize function, the Seq2SeqTrainer and its arguments, answers by generate.

Written by `python -m course_utils.export` from the cells marked #@save in
notebooks/01_t5_small_imdb_finetune.ipynb: edit them there, then rerun the command (tests/test_export.py checks it).
"""


def tokenize_pairs(split, tokenizer, source_column: str, target_column: str, prefix: str, max_source_length: int,
                   max_target_length: int):
    """input_ids, attention_mask and labels for every row, cut at the maximum lengths but NOT padded:
    the collator pads each batch to its own longest row."""

    def tokenize(batch):
        return tokenizer([prefix + text for text in batch[source_column]], text_target=batch[target_column],
                         max_length=max_source_length, max_target_length=max_target_length, truncation=True)

    return split.map(tokenize, batched=True, remove_columns=split.column_names, desc="tokenize")


def count_answer_tokens(tokenizer, words=("negative", "positive")) -> int:
    """Tokens of the longest answer word with its end-of-sequence token: the labels' length, and
    generate's max_new_tokens."""
    return max(len(tokenizer(word).input_ids) for word in words)


import torch

from course_utils.generation import generate_in_order


def generate_answers(model, tokenizer, texts, prefix: str, max_source_length: int, max_new_tokens: int,
                     batch_size: int = 32, progress: bool = False) -> list[str]:
    """The model's greedy answer to each text, decoded, in the order of ``texts``."""

    def answer(batch_texts: list[str]) -> list[str]:
        batch = tokenizer([prefix + text for text in batch_texts], max_length=max_source_length, truncation=True,
                          padding=True, return_tensors="pt").to(model.device)
        with torch.no_grad():
            output = model.generate(**batch, max_new_tokens=max_new_tokens, do_sample=False, num_beams=1)
        return tokenizer.batch_decode(output, skip_special_tokens=True)  # (batch, new tokens) -> texts

    model.eval()
    return generate_in_order(texts, batch_size, answer, progress)


from pathlib import Path

from torch.utils.tensorboard import SummaryWriter
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer, Seq2SeqTrainingArguments
from transformers.integrations import TensorBoardCallback


def training_arguments(config) -> Seq2SeqTrainingArguments:
    """The Trainer's settings for ``config``, a FinetuneConfig whose precision is "bf16" or "fp32"."""
    return Seq2SeqTrainingArguments(
        output_dir=config.output_dir,
        num_train_epochs=config.num_train_epochs,
        per_device_train_batch_size=config.per_device_batch_size,
        gradient_accumulation_steps=config.gradient_accumulation_steps,
        learning_rate=config.learning_rate,
        warmup_steps=config.warmup_fraction,  # transformers 5 reads a float below 1 as a share of all steps
        optim="adamw_torch",
        seed=config.seed, data_seed=config.seed,
        bf16=config.precision == "bf16", fp16=False,  # T5 overflows in fp16
        # On a machine without CUDA, say so: else torchrun's processes size DeepSpeed's "auto" batches
        # as if each were alone, and DeepSpeed rejects the config.
        use_cpu=not torch.cuda.is_available(),
        # Each process's loss is the mean over its own tokens, and DeepSpeed (or DDP) averages the
        # gradients: the standard data-parallel recipe. With the default (True) and use_cpu, the Trainer
        # multiplied each process's loss by the number of processes, and a 2-process run logged it doubled.
        average_tokens_across_devices=False,
        train_sampling_strategy="group_by_length" if config.group_by_length else "random",
        logging_steps=config.logging_steps,
        logging_first_step=True,  # the loss curve starts at step 1, and a run shorter than logging_steps has one
        save_strategy="no",   # we save once, at the end, with save_model and save_state
        eval_strategy="no",   # accuracy is measured by generation, after training
        report_to="none",     # TensorBoard is attached explicitly, so its folder is known
        deepspeed=config.deepspeed,  # lesson 02: the path of a ZeRO config; None: no DeepSpeed
    )


def build_trainer(config, model, tokenizer, train_set) -> Seq2SeqTrainer:
    """A Seq2SeqTrainer that pads each batch dynamically (labels with -100) and logs to TensorBoard."""
    collator = DataCollatorForSeq2Seq(tokenizer, model=model, label_pad_token_id=-100)
    writer = SummaryWriter(log_dir=str(Path(config.output_dir) / "tensorboard"))
    return Seq2SeqTrainer(model=model, args=training_arguments(config), data_collator=collator,
                          train_dataset=train_set, processing_class=tokenizer,
                          callbacks=[TensorBoardCallback(tb_writer=writer)])


def save(trainer, tokenizer, model_dir) -> Path:
    """Model and tokenizer into ``model_dir``, the trainer state (its log history) into the run's output_dir.

    Every process calls it (under ZeRO-3 the weights are gathered collectively); one writes, and all
    wait until the folder is whole, because the main process reloads it next.
    """
    trainer.save_model(str(model_dir))  # the Trainer writes on the main process only
    if trainer.args.should_save:
        tokenizer.save_pretrained(str(model_dir))
    trainer.save_state()  # trainer_state.json
    trainer.accelerator.wait_for_everyone()
    return Path(model_dir)
