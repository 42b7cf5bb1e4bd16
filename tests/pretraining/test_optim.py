"""AdamW with RMS scaling against hand-computed and torch.optim steps; the schedules at chosen steps."""

import math

import pytest
import torch

from course_utils.pretraining.optim import (
    AdamWScale,
    build_optimizer,
    build_scheduler,
    cosine_factor,
    inverse_sqrt_factor,
    parameter_groups,
)


def test_one_step_by_hand():
    p = torch.nn.Parameter(torch.tensor([3.0, -4.0]))  # RMS = sqrt((9 + 16) / 2) = 3.5355
    p.grad = torch.tensor([0.5, 2.0])
    AdamWScale([p], lr=0.1, betas=(0.9, 0.999), eps=1e-6).step()
    # step 1: m_hat = g, v_hat = g^2, so m_hat / (sqrt(v_hat) + eps) = sign(g) (up to eps)
    step_size = 0.1 * math.sqrt(1 - 0.999) / (1 - 0.9)  # bias correction folded into the step
    m, v = 0.1 * torch.tensor([0.5, 2.0]), 0.001 * torch.tensor([0.25, 4.0])
    expected = torch.tensor([3.0, -4.0]) - step_size * math.sqrt(12.5) * m / (v.sqrt() + 1e-6)
    assert torch.allclose(p.detach(), expected, atol=1e-7)
    assert torch.allclose(p.detach(), torch.tensor([3.0, -4.0]) - 0.1 * math.sqrt(12.5), atol=1e-5)


def test_equals_torch_adamw_when_the_weight_rms_is_one():
    torch.manual_seed(0)
    start = torch.randn(64)
    start = start / start.pow(2).mean().sqrt()  # RMS exactly 1 at the first step
    ours, theirs = torch.nn.Parameter(start.clone()), torch.nn.Parameter(start.clone())
    opt_ours = AdamWScale([ours], lr=1e-3, eps=1e-8)
    opt_theirs = torch.optim.AdamW([theirs], lr=1e-3, eps=1e-8, weight_decay=0.0)
    grad = torch.randn(64)
    ours.grad, theirs.grad = grad.clone(), grad.clone()
    opt_ours.step()
    opt_theirs.step()
    assert torch.allclose(ours, theirs, atol=1e-7)


@pytest.mark.parametrize("scale, factor", [(0.5, 0.5), (1e-5, 1e-3)])
def test_the_step_scales_with_rms_and_has_a_floor(scale, factor):
    big, small = torch.nn.Parameter(torch.ones(4)), torch.nn.Parameter(torch.full((4,), scale))
    for p in (big, small):
        p.grad = torch.ones(4)
        AdamWScale([p], lr=0.01).step()
    assert torch.allclose((scale - small.detach()) / (1 - big.detach()), torch.tensor(factor), rtol=1e-4)


def test_decoupled_weight_decay_after_the_step():
    p = torch.nn.Parameter(torch.tensor([2.0]))
    p.grad = torch.tensor([0.0])
    AdamWScale([p], lr=0.1, weight_decay=0.5).step()
    assert p.item() == pytest.approx(2.0 * (1 - 0.1 * 0.5))  # zero gradient: only the decay acts


def test_no_weight_decay_on_biases_and_layer_norms():
    from course_utils.models_and_data.models import load_model

    model = load_model("standin:t5-v1_1-base")
    decay, no_decay = parameter_groups(model, weight_decay=0.01)
    names = {id(p): n for n, p in model.named_parameters()}
    assert decay["weight_decay"] == 0.01 and no_decay["weight_decay"] == 0.0
    assert all("layer_norm" in names[id(p)] for p in no_decay["params"]) and no_decay["params"]
    assert not any("layer_norm" in names[id(p)] for p in decay["params"])
    assert build_optimizer("adafactor", model, 1e-3, 0.0).__class__.__name__ == "Adafactor"
    with pytest.raises(ValueError, match="'adamwscale', 'adafactor' or 'adamw'"):
        build_optimizer("sgd", model, 1e-3, 0.0)


@pytest.mark.parametrize("scale", [0.5, 1e-5])
def test_plain_adamw_is_adamwscale_without_the_rms_scaling(scale):
    # nanoT5's baseline: the same Adam step, not multiplied by max(1e-3, RMS(weight)).
    import torch

    class One(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.randn(8, 8, generator=torch.Generator().manual_seed(0)) * scale)

    grad = torch.randn(8, 8, generator=torch.Generator().manual_seed(1))
    steps = {}
    for name in ("adamw", "adamwscale"):
        model = One()
        start = model.weight.detach().clone()
        optimizer = build_optimizer(name, model, 1e-2, 0.0)
        model.weight.grad = grad.clone()
        optimizer.step()
        steps[name] = model.weight.detach() - start
    rms_scale = max(1e-3, float(start.norm() / 8))
    torch.testing.assert_close(steps["adamwscale"], steps["adamw"] * rms_scale, rtol=1e-5, atol=1e-9)


def test_cosine_schedule_at_chosen_steps():
    # warm-up of 10 steps to the peak, cosine over the next 90 down to a 1 % floor
    assert cosine_factor(0, 10, 100, 0.01) == pytest.approx(0.1)
    assert cosine_factor(9, 10, 100, 0.01) == pytest.approx(1.0)
    assert cosine_factor(10, 10, 100, 0.01) == pytest.approx(1.0)
    assert cosine_factor(55, 10, 100, 0.01) == pytest.approx(0.01 + 0.99 * 0.5)  # halfway: cos(pi/2) = 0
    assert cosine_factor(100, 10, 100, 0.01) == pytest.approx(0.01)
    assert cosine_factor(500, 10, 100, 0.01) == pytest.approx(0.01)  # stays on the floor


def test_inverse_sqrt_schedule_at_chosen_steps():
    assert inverse_sqrt_factor(4, 100) == pytest.approx(0.05)
    assert inverse_sqrt_factor(99, 100) == pytest.approx(1.0)
    assert inverse_sqrt_factor(399, 100) == pytest.approx(0.5)  # 4x the warm-up: 1/2
    assert inverse_sqrt_factor(9999, 100) == pytest.approx(0.1)


def test_schedulers_drive_the_optimizer_learning_rate():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = AdamWScale([p], lr=2e-2)
    sched = build_scheduler("cosine", opt, warmup_steps=10, total_steps=100, final_learning_rate=1e-5)
    rates = []
    for _ in range(100):
        rates.append(opt.param_groups[0]["lr"])
        p.grad = torch.zeros(1)
        opt.step()
        sched.step()
    assert rates[0] == pytest.approx(2e-3) and rates[9] == pytest.approx(2e-2)
    assert opt.param_groups[0]["lr"] == pytest.approx(1e-5)
    with pytest.raises(ValueError, match="'cosine' or 'inverse_sqrt'"):
        build_scheduler("linear", opt, 10, 100, 1e-5)


def test_decay_rule_by_name():
    from course_utils.pretraining.optim import decays

    assert decays("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
    assert decays("lm_head.weight")
    assert not decays("encoder.final_layer_norm.weight") and not decays("classifier.bias")
    assert not decays("bert.LayerNorm.weight")


def test_a_step_keeps_the_rms_on_the_device(monkeypatch):
    # .item() on a CUDA tensor waits for the GPU: once per tensor per step would stall every step.
    reads = []
    real_item = torch.Tensor.item
    monkeypatch.setattr(torch.Tensor, "item", lambda self: reads.append(1) or real_item(self))
    weights = [torch.nn.Parameter(torch.randn(8, 8)) for _ in range(3)]
    for w in weights:
        w.grad = torch.randn(8, 8)
    AdamWScale(weights, lr=1e-2).step()
    assert reads == []
