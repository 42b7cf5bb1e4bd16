"""Lesson 01's fine-tune started as its own processes: in a fresh process here, or as a cluster command.

    figures = launch(config)                              # python -m course_utils.lessons.finetune ... ; its result line
    figures = launch(config, processes=2)                 # the same under torchrun, 2 processes
    print(cluster_command(config, "deepspeed", gpus_per_node=8, nodes=2))   # printed for a cluster, not run

A process of its own gives every run the same start, its own peak memory, and the launcher
variables a real launch has. The full output goes to ``<output_dir>/launch.log``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from course_utils.lessons.finetune import FinetuneConfig
from course_utils.lessons.zero import without_launcher_variables
from course_utils.machinery.configs import InputError
from course_utils.machinery.paths import repo_root


def cli_arguments(config: FinetuneConfig, relative_to: str | os.PathLike | None = None) -> list[str]:
    """The command-line flags that rebuild ``config`` in ``python -m course_utils.lessons.finetune``: one per field that
    differs from FinetuneConfig's default, so a command says what this run changes. Paths that exist are written
    relative to ``relative_to`` when given (the folder the command runs in on every node)."""
    defaults = FinetuneConfig()
    arguments = []
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is None or value == getattr(defaults, f.name):
            continue
        if relative_to is not None and isinstance(value, str) and os.path.exists(value):
            value = os.path.relpath(value, relative_to)
        arguments += ["--" + f.name.replace("_", "-"), str(value).lower() if isinstance(value, bool) else str(value)]
    return arguments


def launch_command(config: FinetuneConfig, processes: int = 1) -> list[str]:
    """This fine-tune as a command: one plain process, or ``processes`` under torchrun."""
    launcher = (
        [] if processes == 1 else ["-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
    )
    return [sys.executable, *launcher, "-m", "course_utils.lessons.finetune", *cli_arguments(config)]


def cluster_command(
    config: FinetuneConfig,
    launcher: str,
    gpus_per_node: int,
    nodes: int = 1,
    master_addr: str = "node-a",
    relative_to: str | os.PathLike | None = None,
) -> str:
    """The shell line that starts this fine-tune on ``nodes`` x ``gpus_per_node`` GPUs with ``launcher``
    ("deepspeed" or "torchrun"); several nodes need DeepSpeed's launcher and a file named ``hostfile``.
    Local paths are written relative to ``relative_to`` (default: the repository, where the command runs
    on every node)."""
    flags = shlex.join(cli_arguments(config, repo_root() if relative_to is None else relative_to))
    if launcher == "torchrun" and nodes == 1:
        return f"torchrun --standalone --nproc_per_node {gpus_per_node} -m course_utils.lessons.finetune {flags}"
    if launcher != "deepspeed":
        raise InputError(
            f"launcher must be 'deepspeed' or 'torchrun' (one node), got {launcher!r} for {nodes} node(s)."
        )
    hosts = f"--hostfile hostfile --num_nodes {nodes} " if nodes > 1 else ""
    master = f"--master_addr {master_addr} " if nodes > 1 else ""
    return f"deepspeed {hosts}--num_gpus {gpus_per_node} {master}--module course_utils.lessons.finetune {flags}"


def launch(config: FinetuneConfig, processes: int = 1, timeout: float | None = None) -> dict:
    """Run the fine-tune in fresh processes and return its result line.

    A process of its own gives every run the same start (its peak memory is its own) and the
    launcher variables a real launch has. The full output goes to ``<output_dir>/launch.log``.
    """
    log_path = Path(config.output_dir) / "launch.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        done = subprocess.run(
            launch_command(config, processes),
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env=without_launcher_variables(),
            timeout=timeout,
        )
        log.write(done.stdout)
    results = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not results:
        tail = "".join(log_path.read_text().splitlines(keepends=True)[-15:])
        raise RuntimeError(f"The fine-tune exited with status {done.returncode}; last lines of {log_path}:\n{tail}")
    return json.loads(results[-1])
