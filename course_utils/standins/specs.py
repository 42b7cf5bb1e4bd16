"""What each stand-in is: the real model it stands for, its architecture at a CPU's size, and its training recipe.

    spec = STANDINS["t5-small"]
    spec.config            # T5Config keyword arguments that differ from the real model's
    spec.stages            # (Stage("span_corruption", ...), Stage("mixture", ...)): trained in this order

The real models arrive pretrained, so the stand-ins do too, on the shipped training splits of ``data/`` (never on
a split a lesson scores), and each stage mirrors how the real model was trained:

- t5-small, t5-base: span corruption (lesson 04's own code), then T5's multi-task mixture: ``summarize: `` on the
  CNN/DailyMail training articles and ``sst2 sentence: `` on the SST-2-like sentences;
- t5-v1_1-base: span corruption on C4 only, as Google's T5 v1.1 (no mixture);
- gpt2, pythia-70m-deduped: causal language modelling on the corpus (web pages, news, reviews, stories);
- Qwen2.5-0.5B-Instruct: the same, then instruction tuning that includes the course's pairwise judging prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

OBJECTIVES = ("span_corruption", "mixture", "causal_lm", "instructions")


@dataclass(frozen=True)
class Stage:
    """One stage of a stand-in's training, run by ``build`` in the order the spec lists them."""

    objective: str  # one of OBJECTIVES
    steps: int  # optimizer steps
    learning_rate: float  # peak rate, after a linear warm-up; then a cosine down to a tenth of it (span: to 1e-5)
    warmup_steps: int
    batch_size: int = 16  # rows per step
    max_length: int = 256  # tokens per row: the encoder's input (T5) or the block (causal models)
    # The mixture's and the instructions' tasks, or a causal stage's pools (corpus, stories), with their weights:
    # each step draws one by weight.
    tasks: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        if self.objective not in OBJECTIVES:
            raise ValueError(f"Unknown objective {self.objective!r}; known: {', '.join(OBJECTIVES)}.")


@dataclass(frozen=True)
class StandInSpec:
    """How to build one stand-in: its family, the config sizes that differ from the real model, and its stages."""

    name: str  # the real model it stands for, without its organisation, e.g. "t5-small"
    hub_id: str  # the real model's Hub id, for the model card
    family: str  # "t5", "gpt2", "gpt_neox" or "qwen2"
    config: dict = field(default_factory=dict)  # T5Config / GPT2Config / GPTNeoXConfig / Qwen2Config keyword arguments
    stages: tuple[Stage, ...] = ()
    seed: int = 0  # of the random initial weights and of every stage's batches


# nanoT5's objective and optimizer at a CPU's size: rows of 128 input tokens (nanoT5: 512), batch 16 (128), AdamW
# with RMS scaling at nanoT5's peak rate 2e-2 and a cosine; lesson 04's notebook runs the same settings for fewer steps.
SPAN = dict(objective="span_corruption", learning_rate=2e-2, batch_size=16, max_length=128)
# T5's multi-task mixture of two tasks (T5 mixed its tasks in proportion to their sizes, capped). Each stand-in
# weights the task its lessons lean on: t5-small sentiment (lesson 01), t5-base summaries (lesson 03).
MIXTURE = dict(objective="mixture", learning_rate=1e-3, batch_size=16, max_length=512)
# Blocks of 256 tokens hold a whole LAMBADA-style passage (about 54 words) with room to spare.
CAUSAL = dict(objective="causal_lm", learning_rate=2e-3, batch_size=8, max_length=256)

# Real sizes for comparison: t5-small d_model 512, 6+6 layers, 60 M parameters; t5-base d_model 768, 12+12 layers,
# 220 M; gpt2 768 wide, 12 layers, 124 M. The stand-ins keep the direction (base far larger than small) at sizes a
# 2-core CPU trains in minutes. No dropout: they see each row a few times, and on a CPU dropout costs time.
STANDINS = {
    "t5-small": StandInSpec(
        "t5-small",
        "t5-small",
        "t5",
        dict(d_model=128, d_ff=512, d_kv=32, num_heads=4, num_layers=2, num_decoder_layers=2, dropout_rate=0.0),
        (
            Stage(steps=2000, warmup_steps=100, **SPAN),
            Stage(steps=5000, warmup_steps=100, tasks=(("summarize", 1.0), ("sst2", 3.0)), **MIXTURE),
        ),
    ),
    "t5-base": StandInSpec(
        "t5-base",
        "t5-base",
        "t5",
        dict(d_model=192, d_ff=768, d_kv=32, num_heads=6, num_layers=3, num_decoder_layers=3, dropout_rate=0.0),
        (
            Stage(steps=2000, warmup_steps=100, **SPAN),
            Stage(steps=2000, warmup_steps=100, tasks=(("summarize", 3.0), ("sst2", 1.0)), **MIXTURE),
        ),
    ),
    # T5 v1.1: gated-GELU feed-forward and an output layer of its own (transformers 5 turns tie_word_embeddings=False
    # into scale_decoder_outputs=False and keeps the separate layer). Lesson 04 pretrains this architecture from
    # random weights for 3,000 steps in smoke; the shipped one, like Google's release, has had three times as many.
    "t5-v1_1-base": StandInSpec(
        "t5-v1_1-base",
        "google/t5-v1_1-base",
        "t5",
        dict(
            d_model=64,
            d_ff=192,
            d_kv=16,
            num_heads=4,
            num_layers=2,
            num_decoder_layers=2,
            feed_forward_proj="gated-gelu",
            tie_word_embeddings=False,
            dropout_rate=0.0,
        ),
        (Stage(steps=9000, warmup_steps=40, **SPAN),),
    ),
    "gpt2": StandInSpec(
        "gpt2",
        "gpt2",
        "gpt2",
        dict(n_embd=128, n_layer=3, n_head=4, n_positions=1024, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0),
        # GPT-2's WebText is rich in stories; this corpus is mostly templated pages, and after the first stage alone
        # the stand-in answered a LAMBADA passage with the word most common in its slot (accuracy 0.09): it had not
        # learned to look back through the passage for the name or place it needs. The second stage draws the
        # training stories four times as often as corpus blocks, until it has.
        (
            Stage(steps=3000, warmup_steps=100, **CAUSAL),
            Stage(steps=5000, warmup_steps=100, tasks=(("corpus", 1.0), ("stories", 4.0)), **CAUSAL),
        ),
    ),
    # Pythia: GPT-NeoX with rotary embeddings on a quarter of each head and parallel residuals; 512 wide and 6 layers
    # in the real 70m. Its tokenizer is GPT-NeoX's byte-level BPE with <|endoftext|> as id 0.
    "pythia-70m-deduped": StandInSpec(
        "pythia-70m-deduped",
        "EleutherAI/pythia-70m-deduped",
        "gpt_neox",
        dict(
            hidden_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            intermediate_size=256,
            max_position_embeddings=512,
            rotary_pct=0.25,
            use_parallel_residual=True,
            tie_word_embeddings=False,
        ),
        (Stage(steps=2000, warmup_steps=100, **CAUSAL),),
    ),
    # Lesson 05's judge: Qwen2 (grouped-query attention, 14 query and 2 key-value heads in the real 0.5B, RMSNorm,
    # SwiGLU, tied embeddings), 896 wide and 24 layers in the real one.
    "Qwen2.5-0.5B-Instruct": StandInSpec(
        "Qwen2.5-0.5B-Instruct",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "qwen2",
        dict(
            hidden_size=128,
            intermediate_size=384,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=4096,
            tie_word_embeddings=True,
        ),
        (
            Stage(steps=1000, warmup_steps=100, **CAUSAL),
            Stage(
                objective="instructions",
                steps=1200,
                learning_rate=1e-3,
                warmup_steps=100,
                batch_size=8,
                max_length=640,
                tasks=(("judge", 3.0), ("highlights", 1.0)),
            ),
        ),
    ),
}


def spec(name: str) -> StandInSpec:
    """The spec of the stand-in ``name``; an unknown name is an error that lists the known ones."""
    if name not in STANDINS:
        raise ValueError(f"No stand-in called {name!r}; known: {', '.join(STANDINS)}.")
    return STANDINS[name]
