"""Does pretraining pay downstream? Lesson 01's fine-tune from pretrained and from random weights.

Lesson 04 and ``benchmarks/bench_pretrain_payoff.py`` compare two starts of the same model:
the weights a pretraining run ended with, and the random weights it began from. Each start is
fine-tuned with lesson 01's recipe exactly (``finetune.lesson_config``), so the only thing that
differs between the runs is the starting weights:

    starts = {"pretrained": result.model_dir, "random init": save_initial_weights(config, folder)}
    figures = compare_starts(profile, starts, output_root)
    print(margin_sentence(figures, "pretrained", "random init"))   # ahead, level or behind, by how much

In the full profile a third start joins, as in nanoT5: Google's released weights of the same
architecture (``Profile.released_weights``).
"""

from __future__ import annotations

from pathlib import Path


def save_initial_weights(config, folder: str | Path) -> str:
    """Save the seeded random weights that ``config``'s pretraining starts from, with the tokenizer."""
    from .models import load_tokenizer
    from .pretrain import initial_model

    initial_model(config).save_pretrained(str(folder))
    load_tokenizer(config.model_name).save_pretrained(str(folder))
    return str(folder)


def compare_starts(profile, starts: dict[str, str], output_root: str | Path, echo=print,
                   **changes) -> dict[str, dict]:
    """{start name: figures of ``finetune.run``} for lesson 01's fine-tune from each start.

    ``changes`` (a seed, a number of training rows, ...) apply to every start alike; only
    ``model_name`` and ``output_dir`` differ between the runs.
    """
    from .finetune import lesson_config, run

    figures = {}
    for name, start in starts.items():
        config = lesson_config(profile, output_dir=str(Path(output_root) / f"finetune_{'_'.join(name.split())}"),
                               model_name=start, **changes)
        figures[name] = run(config, echo=echo)
        echo(f"{name:>11}: accuracy {figures[name]['accuracy']:.3f}, mean fine-tuning loss "
             f"{figures[name]['train_loss']:.3f}, {figures[name]['train_seconds']:.0f} s")
    return figures


def margin_sentence(figures: dict[str, dict], start: str, baseline: str) -> str:
    """One sentence: is ``start`` ahead of ``baseline`` in held-out accuracy, and by how many points."""
    mine, theirs = figures[start]["accuracy"], figures[baseline]["accuracy"]
    points = round((mine - theirs) * 100, 1)  # accuracy points, as printed
    figures_text = f"({mine:.3f} against {theirs:.3f})"
    if points == 0:
        return f"The {start} start is level with the {baseline} start {figures_text}."
    where = "ahead of" if points > 0 else "behind"
    return f"The {start} start is {where} the {baseline} start by {abs(points):.1f} accuracy points {figures_text}."
