"""Does lesson 04's pretraining pay downstream? Both starts, several seeds and data sizes, side by side.

    python benchmarks/bench_pretrain_payoff.py [--profile smoke] [--seeds 1 2 3] [--rows 300 1200]
                                               [--pretrain-steps N] [--pretrained-dir DIR]

Pretrains once with lesson 04's recipe as the profile sizes it (or takes a finished run's
``model`` folder with --pretrained-dir, whose initial weights must be the profile's;
--pretrain-steps changes only the number of steps, the warm-up stays the profile's), then
fine-tunes the pretrained weights and the random weights they started from with lesson 01's
recipe, once per (training rows, seed). The seed picks the training subset and the batch order;
both starts get the same ones. Prints each start's held-out NLL with each row's own input
and with another row's (the gap says how much the model reads its input), then accuracy and
mean fine-tuning loss per run, and per data size the mean of each and how often the
pretrained start was ahead.

Smoke defaults: one pretraining of the profile's 3,000 steps (about 2.5 minutes) and 12
fine-tunes, about 12 minutes on 2 CPU cores; ``--rows 1200 --seeds 1 2 3 42`` took 9 minutes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="smoke", help="whose model and data (smoke: the CPU stand-in)")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[1, 2, 3], help="fine-tuning seeds, each run from both starts"
    )
    parser.add_argument("--rows", type=int, nargs="+", default=[300, 1200], help="training reviews per fine-tune")
    parser.add_argument("--pretrain-steps", type=int, default=0, help="0: the profile's number of steps")
    parser.add_argument("--pretrained-dir", default="", help="a finished pretraining's model folder")
    args = parser.parse_args(argv)

    from course_utils.machinery.environment import start_session

    with tempfile.TemporaryDirectory() as scratch:
        session = start_session(args.profile, scratch)  # offline switches before the HF imports below
        from course_utils.from_notebooks.pretraining_loop import initial_model, pretrain
        from course_utils.lessons.finetune import FinetuneConfig, fine_tune
        from course_utils.models_and_data.models import load_model, load_tokenizer
        from course_utils.pretraining.config import PretrainConfig
        from course_utils.pretraining.data import held_out_batches
        from course_utils.pretraining.run import input_reliance

        changes = {"total_steps": args.pretrain_steps} if args.pretrain_steps else {}
        config = PretrainConfig.for_profile(session.profile, output_dir=f"{scratch}/pretrain", **changes)
        if args.pretrained_dir:
            pretrained = args.pretrained_dir
        else:
            result = pretrain(config, echo=lambda line: None)
            pretrained = result.model_dir
            print("held-out NLL during pretraining, own input / another row's input:")
            print(
                "  "
                + "; ".join(
                    f"step {step}: {nll:.3f} / {result.eval_nll_other_input[step]:.3f}"
                    for step, nll in result.eval_nll.items()
                )
            )
        random_dir = f"{scratch}/random"  # the seeded weights the pretraining started from, as notebook 04 saves them
        initial_model(config).save_pretrained(random_dir)
        load_tokenizer(config.model_name).save_pretrained(random_dir)
        starts = {"pretrained": pretrained, "random init": random_dir}
        print(f"profile {session.profile.name}: {config.total_steps} pretraining steps; starts {starts}")
        held_out = held_out_batches(config, load_tokenizer(config.model_name))
        for name, folder in starts.items():
            scores = input_reliance(load_model(folder), held_out)
            own, other = scores["own input"], scores["another row's input"]
            print(
                f"{name:>11}: held-out NLL {own:.3f} with each row's own input, {other:.3f} with another "
                f"row's (gap {other - own:.3f}: how much the model reads its input)"
            )
        print(
            f"{'rows':>5} {'seed':>5} {'acc pretrained':>15} {'acc random':>11} {'loss pretrained':>16} {'loss random':>12}"
        )
        table = {}
        for rows in args.rows:
            for seed in args.seeds:
                # Lesson 01's fine-tune from each start, only model_name and the folder differing (notebook 04).
                figures = {
                    name: fine_tune(
                        FinetuneConfig.for_profile(
                            session.profile,
                            f"{scratch}/{rows}_{seed}/{name[0]}",
                            model_name=start,
                            seed=seed,
                            max_train_rows=rows,
                        ),
                        echo=lambda line: None,
                    )
                    for name, start in starts.items()
                }
                table[rows, seed] = figures
                p, r = figures["pretrained"], figures["random init"]
                print(
                    f"{rows:>5} {seed:>5} {p['accuracy']:>15.3f} {r['accuracy']:>11.3f} "
                    f"{p['train_loss']:>16.3f} {r['train_loss']:>12.3f}",
                    flush=True,
                )
        for rows in args.rows:
            runs = [table[rows, seed] for seed in args.seeds]
            mean = {
                key: {name: statistics.mean(run[name][key] for run in runs) for name in starts}
                for key in ("accuracy", "train_loss")
            }
            ahead = sum(run["pretrained"]["accuracy"] > run["random init"]["accuracy"] for run in runs)
            lower = sum(run["pretrained"]["train_loss"] < run["random init"]["train_loss"] for run in runs)
            print(
                f"{rows} rows, mean over {len(runs)} seeds: accuracy {mean['accuracy']['pretrained']:.3f} "
                f"(pretrained) against {mean['accuracy']['random init']:.3f} (random init), pretrained ahead "
                f"{ahead} of {len(runs)}; fine-tuning loss {mean['train_loss']['pretrained']:.3f} against "
                f"{mean['train_loss']['random init']:.3f}, pretrained lower {lower} of {len(runs)}"
            )
    return 0


if __name__ == "__main__":
    from results import recorded

    sys.exit(recorded("bench_pretrain_payoff", main))
