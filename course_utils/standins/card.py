"""A stand-in's model card: the Hub's README.md with its YAML header, written from the build's manifest.

    (folder / "README.md").write_text(model_card(spec, manifest_record))

It says what the stand-in stands for, what it was trained on and for how long, its figures, and what it is not.
"""

from __future__ import annotations

import json

from course_utils.standins.specs import StandInSpec

PIPELINES = {
    "t5": "text2text-generation",
    "gpt2": "text-generation",
    "gpt_neox": "text-generation",
    "qwen2": "text-generation",
}
OBJECTIVES = {
    "span_corruption": "span corruption (T5's objective, through lesson 04's own pretraining loop)",
    "mixture": "T5's multi-task mixture",
    "causal_lm": "causal language modelling",
    "instructions": "instruction tuning (chats, the loss on the answers only)",
}
TASKS = {
    "summarize": "`summarize: ` + a CNN/DailyMail training article -> its highlights",
    "sst2": "`sst2 sentence: ` + an SST-2-like sentence -> `positive` or `negative`",
    "judge": "the course's pairwise judging prompt (lesson 05): a reference against a worse summary, in both orders",
    "highlights": "an article -> its highlights, as a chat",
    "corpus": "a block of the packed corpus (web pages, news articles, reviews, stories)",
    "stories": "one LAMBADA-style training story a row (`lambada/train.jsonl`; the test split stays held out)",
}


def _yaml_header(standin: StandInSpec, record: dict) -> str:
    metrics = "".join(
        f"          - type: {name}\n            value: {value:.4f}\n"
        for name, value in sorted(record["figures"].items())
        if isinstance(value, float)
    )
    index = (  # the Hub's model-index, where the build measured figures on held-out rows
        "model-index:\n"
        f"  - name: standin-{standin.name}\n"
        "    results:\n"
        "      - task:\n          type: held-out\n"
        "        dataset:\n          name: the course's synthetic data (held-out rows)\n          type: synthetic\n"
        f"        metrics:\n{metrics}"
        if metrics
        else ""
    )
    return (
        "---\n"
        "license: apache-2.0\n"
        "library_name: transformers\n"
        f"pipeline_tag: {PIPELINES[standin.family]}\n"
        f"base_model: {standin.hub_id}\n"
        "datasets:\n  - synthetic (this course's data/, written by data/generate.py)\n"
        "tags:\n  - stand-in\n  - smoke-profile\n"
        f"{index}"
        "---\n"
    )


def _stage_lines(standin: StandInSpec, record: dict) -> str:
    out = []
    for index, (stage, done) in enumerate(zip(standin.stages, record["stages"]), 1):
        tasks = "".join(f"\n   - {TASKS[name]} (weight {weight:g})" for name, weight in stage.tasks)
        losses = done["figures"].get("losses") or []
        last = f"; last logged loss {losses[-1][1]:.3f}" if losses else ""
        if "held_out_nll" in done["figures"]:  # span corruption: the loop's NLL on held-out C4 rows
            nll = done["figures"]
            last += f"; held-out NLL {nll['held_out_nll_start']:.3f} -> {nll['held_out_nll']:.3f} nats a target token"
        out.append(
            f"{index}. {OBJECTIVES[stage.objective]}: {stage.steps:,} steps of {stage.batch_size} rows of at most "
            f"{stage.max_length} tokens, peak rate {stage.learning_rate:g} after {stage.warmup_steps} warm-up steps, "
            f"{done['seconds'] / 60:.1f} minutes{last}.{tasks}"
        )
    return "\n".join(out)


def model_card(standin: StandInSpec, record: dict) -> str:
    figures = "\n".join(
        f"| {name} | {value:.4f} |" if isinstance(value, float) else f"| {name} | {value} |"
        for name, value in sorted(record["figures"].items())
    )
    built = record["built_with"]
    return (
        _yaml_header(standin, record)
        + f"""
# standin:{standin.name}

A tiny stand-in for [`{standin.hub_id}`](https://huggingface.co/{standin.hub_id}) in the course's offline `smoke`
profile: the same architecture ({standin.family}, {record["parameters"]:,} parameters), pretrained here on the
course's synthetic data in `data/`, as the real model was pretrained on real text. It knows that small world, and
nothing else: its figures are not comparable with the real model's.

## Training

Built by `python -m course_utils.standins --rebuild {standin.name}` (`course_utils/standins/`), seed {standin.seed},
with torch {built["torch"]} and transformers {built["transformers"]} on {built["threads"]} CPU thread(s). The stages,
in order:

{_stage_lines(standin, record)}

It read these shipped files: {", ".join(f"`{f}`" for f in record["data_files"])}. It trained on the training splits'
rows only, which no lesson scores; the validation files gave the held-out figures below (and, in span corruption,
the held-out loss the loop logs), and no lesson scores their rows either.

## Held-out figures

| figure | value |
|---|---|
{figures}

## Provenance

`MANIFEST.json` holds the fingerprints of the recipe, the build code and the data, and the sha256 of every file
here:

```json
{json.dumps(record["fingerprints"], indent=1)}
```

## Limits

Use it to run the course on a CPU without the Hub. Its vocabulary was learned from the synthetic corpus, it has
never seen real text, and it will write nonsense about anything outside that corpus.
"""
    )
