"""Lab 01L's support: Dolly-15k checked and split, the lab's settings per profile, and the course's reference
code that the lab's checks compare a student's answers with (the prompt template and the LoRA adapter's
size; the labels are checked against the prompt's own tokens, in ``labs/instruction_tuning.py``).

    config = InstructionConfig.for_profile(profile)
    splits, dropped = load_dolly(profile.dolly, config.max_train_rows, config.test_rows, config.seed)
    prompt_text(row)                                  # "### Instruction:\\n...\\n\\n### Response:\\n"
    lora_trainable_parameters(model.config)           # rank 8 on query_key_value: 98,304 for Pythia-70m
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from course_utils.machinery.configs import DataSource, checked_replace, setting
from course_utils.machinery.hardware import resolve_precision
from course_utils.models_and_data.sources import load_source

DOLLY_COLUMNS = ("instruction", "context", "response", "category")
# The adapter the lab asks for: rank 8 on each attention's fused query/key/value projection.
LORA_RANK, LORA_ALPHA, LORA_TARGETS = 8, 16, ("query_key_value",)


@dataclass(frozen=True)
class InstructionConfig:
    """Lab 01L's settings; the profile fills in the model, the data and the sizes."""

    model_name: str = setting("EleutherAI/pythia-70m-deduped", "a decoder-only model: Hub id, folder or standin:<name>")
    data_path: str = setting("databricks/databricks-dolly-15k", "Hub id or a folder with train.jsonl")
    max_train_rows: int | None = setting(4000, "training examples, a seeded sample (None: all that are left)")
    test_rows: int = setting(100, "held-out examples whose responses are generated and scored with ROUGE")
    max_length: int = setting(512, "tokens of prompt + response + EOS; longer examples are left out and counted")
    num_train_epochs: float = setting(1.0, "passes over the training examples")
    per_device_batch_size: int = setting(16, "examples per forward pass")
    learning_rate: float = setting(5e-5, "the full fine-tune's peak rate")
    lora_learning_rate: float = setting(5e-4, "LoRA's peak rate: its few weights start at zero and need larger steps")
    logging_steps: int = setting(10, "a loss line every this many steps")
    loss_margin: float = setting(0.2, "how far (a fraction) the last logged loss must fall below the first")
    max_new_tokens: int = setting(64, "tokens generated per response")
    precision: str = setting("auto", "bf16 where the GPU has it natively, else fp32")
    seed: int = setting(42, "the data sample and the weights' initialisation")

    @property
    def data(self) -> DataSource:
        return DataSource(self.data_path)

    @classmethod
    def for_profile(cls, profile, **changes) -> InstructionConfig:
        """The lab's settings as ``profile`` sizes them (``profile.instruction``), then ``changes``."""
        config = cls(model_name=profile.models["pythia"], data_path=profile.dolly.path)
        config = checked_replace(config, profile.instruction, "Profile.instruction setting")
        config = checked_replace(config, changes, "instruction-tuning setting")
        return dataclasses.replace(config, precision=resolve_precision(config.precision))


def dolly_features():
    from datasets import Features, Value

    return Features({name: Value("string") for name in DOLLY_COLUMNS})


def load_dolly(source: DataSource, max_train_rows: int | None, test_rows: int, seed: int):
    """({"train", "test"}, {reason: rows left out}): Dolly's one split, checked, shuffled once and cut in two.

    A row without an instruction or a response teaches nothing; such rows are left out and counted.
    """
    from datasets import DatasetDict

    rows = load_source(source, dolly_features())["train"]
    usable = rows.filter(lambda row: bool(row["instruction"].strip()) and bool(row["response"].strip()))
    dropped = {"empty instruction or response": len(rows) - len(usable)}
    if test_rows >= len(usable):
        raise ValueError(
            f"test_rows={test_rows}, but only {len(usable)} usable rows in {source.path}; "
            "lower test_rows so that some rows are left to train on."
        )
    shuffled = usable.shuffle(seed=seed)
    train_end = len(shuffled) if max_train_rows is None else min(len(shuffled), test_rows + max_train_rows)
    splits = DatasetDict(test=shuffled.select(range(test_rows)), train=shuffled.select(range(test_rows, train_end)))
    dropped["not sampled"] = len(shuffled) - train_end
    return splits, dropped


def prompt_text(row: dict) -> str:
    """The course's prompt: the instruction, the context when there is one, and the cue for the response."""
    parts = [f"### Instruction:\n{row['instruction'].strip()}"]
    if row["context"].strip():
        parts.append(f"### Input:\n{row['context'].strip()}")
    parts.append("### Response:\n")
    return "\n\n".join(parts)


def lora_trainable_parameters(config, rank: int = LORA_RANK) -> int:
    """Parameters of a rank-``rank`` adapter on GPT-NeoX's query_key_value (hidden -> 3 x hidden) in every layer:
    A is rank x hidden, B is 3 hidden x rank."""
    return config.num_hidden_layers * rank * (config.hidden_size + 3 * config.hidden_size)
