"""Optimizers and learning-rate schedules for pretraining T5 (lesson 04), as nanoT5 uses them.

    groups = parameter_groups(model, weight_decay=0.0)        # no decay on biases and layer norms
    optimizer = AdamWScale(groups, lr=2e-2)                   # AdamW, steps scaled by each weight's RMS
    scheduler = build_scheduler("cosine", optimizer, warmup_steps=10_000, total_steps=65_536, final_learning_rate=1e-5)

nanoT5 (Nawrot, 2023) found that plain AdamW diverges or learns slowly on T5 at the learning
rates Adafactor tolerates. Scaling each step by the RMS of the weight it updates, as Adafactor
does, fixes that: ``step = lr * max(1e-3, RMS(weight)) * m_hat / (sqrt(v_hat) + eps)``.
"""

from __future__ import annotations

import math

import torch


def decays(name: str) -> bool:
    """Whether weight decay applies: not to biases, not to layer-norm scales.

    T5's ``relative_attention_bias.weight`` is an embedding table, not a bias, so it decays.
    """
    return not (name.endswith(".bias") or "layer_norm" in name.lower() or "layernorm" in name.lower())


def parameter_groups(model, weight_decay: float) -> list[dict]:
    """Two groups: weights with ``weight_decay``, biases and layer-norm scales without."""
    decay, no_decay = [], []
    for name, parameter in model.named_parameters():
        if parameter.requires_grad:
            (decay if decays(name) else no_decay).append(parameter)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def rms(tensor: torch.Tensor) -> torch.Tensor:
    """Root mean square of a tensor's entries."""
    return tensor.norm(2) / math.sqrt(tensor.numel())


class AdamWScale(torch.optim.Optimizer):
    """AdamW whose step for each weight is multiplied by max(1e-3, RMS of that weight) (``scale_by_rms=False``: plain AdamW).

    Decoupled weight decay is applied after the Adam step, as in nanoT5.
    """

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.0,
        correct_bias: bool = True,
        scale_by_rms: bool = True,
    ):
        if lr < 0 or eps < 0 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"AdamWScale needs lr >= 0, eps >= 0 and betas in [0, 1); got {lr}, {eps}, {betas}.")
        super().__init__(
            params,
            dict(
                lr=lr,
                betas=betas,
                eps=eps,
                weight_decay=weight_decay,
                correct_bias=correct_bias,
                scale_by_rms=scale_by_rms,
            ),
        )

    @torch.no_grad()
    def step(self, closure=None):
        loss = closure() if closure is not None else None
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["step"] += 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                exp_avg.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                step_size = group["lr"]
                if group["correct_bias"]:
                    step_size *= math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                denominator = exp_avg_sq.sqrt().add_(group["eps"])
                if group["scale_by_rms"]:
                    # The weight's RMS before this step, at least 1e-3, kept on the weight's device: reading it into
                    # Python (.item()) would wait for the GPU once per tensor per step.
                    scale = rms(p).clamp_(min=1e-3)
                    p.add_(exp_avg / denominator * scale, alpha=-step_size)
                else:
                    p.addcdiv_(exp_avg, denominator, value=-step_size)
                if group["weight_decay"] > 0:
                    p.add_(p, alpha=-group["lr"] * group["weight_decay"])
        return loss


def build_optimizer(name: str, model, learning_rate: float, weight_decay: float):
    """ "adamwscale" (nanoT5's default), "adafactor" (the original T5 recipe, from transformers) or
    "adamw" (plain torch AdamW, the baseline nanoT5 found diverging at these rates)."""
    groups = parameter_groups(model, weight_decay)
    if name == "adamwscale":
        return AdamWScale(groups, lr=learning_rate)
    if name == "adamw":  # the same code without the scaling, so the comparison changes one thing only
        return AdamWScale(groups, lr=learning_rate, scale_by_rms=False)
    if name == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(groups, lr=learning_rate, relative_step=False, scale_parameter=False, warmup_init=False)
    raise ValueError(f"optimizer must be 'adamwscale', 'adafactor' or 'adamw', got {name!r}.")


def cosine_factor(step: int, warmup_steps: int, total_steps: int, final_fraction: float) -> float:
    """Multiplier of the peak rate: linear warm-up to 1, then a half cosine down to ``final_fraction``."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
    return final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress))


def inverse_sqrt_factor(step: int, warmup_steps: int) -> float:
    """Multiplier of the peak rate: linear warm-up, then 1/sqrt(step) (the legacy T5/Adafactor schedule)."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    return math.sqrt(warmup_steps / (step + 1))


def build_scheduler(name: str, optimizer, warmup_steps: int, total_steps: int, final_learning_rate: float):
    """A LambdaLR stepping once per optimizer step: "cosine" (nanoT5's default) or "inverse_sqrt"."""
    from torch.optim.lr_scheduler import LambdaLR

    peak = optimizer.param_groups[0]["lr"]
    if name == "cosine":
        return LambdaLR(
            optimizer, lambda step: cosine_factor(step, warmup_steps, total_steps, final_learning_rate / peak)
        )
    if name == "inverse_sqrt":
        return LambdaLR(optimizer, lambda step: inverse_sqrt_factor(step, warmup_steps))
    raise ValueError(f"lr_scheduler must be 'cosine' or 'inverse_sqrt', got {name!r}.")
