"""The labs' checks, under one name: ``from course_utils.labs import check``, then ``check.prompt_masked(...)``.

Each check runs the student's function or value on fixed inputs, compares it with the course's own code,
and either prints one short line or raises ``CheckFailed`` with what it expected, what it got and a hint.

| lab | checks |
|---|---|
| 00L what fits | parameter_count, training_state_bytes, rows_that_fit |
| 01L instruction tuning | prompt_template, prompt_masked, eos_learned, padding_masked, loss_falls, responses, lora_parameters |
| 02L ZeRO by hand | zero3_offload_config, model_state_bytes, cheapest_setup |
| 03L ROUGE from scratch | rouge_tokens, rouge_n, rouge_l, lead_3 |
| 04L nanoT5's parts | noise_mask, sentinels, cosine_schedule, adamw_rms_step |
| 05L evaluation by hand | bootstrap_difference, consistent_winners, win_rate, cohen_kappa, lm_eval_yaml |
| every lab | question (the multiple-choice questions) |
"""

from course_utils.labs.evaluation_by_hand import (
    bootstrap_difference,
    cohen_kappa,
    consistent_winners,
    lm_eval_yaml,
    win_rate,
)
from course_utils.labs.instruction_tuning import (
    eos_learned,
    lora_parameters,
    loss_falls,
    padding_masked,
    prompt_masked,
    prompt_template,
    responses,
)
from course_utils.labs.nanot5_parts import adamw_rms_step, cosine_schedule, noise_mask, sentinels
from course_utils.labs.quiz import question
from course_utils.labs.rouge_from_scratch import lead_3, rouge_l, rouge_n, rouge_tokens
from course_utils.labs.verdict import CheckFailed
from course_utils.labs.what_fits import parameter_count, rows_that_fit, training_state_bytes
from course_utils.labs.zero_by_hand import cheapest_setup, model_state_bytes, zero3_offload_config

CHECKS = {
    "00L": (parameter_count, training_state_bytes, rows_that_fit),
    "01L": (prompt_template, prompt_masked, eos_learned, padding_masked, loss_falls, responses, lora_parameters),
    "02L": (zero3_offload_config, model_state_bytes, cheapest_setup),
    "03L": (rouge_tokens, rouge_n, rouge_l, lead_3),
    "04L": (noise_mask, sentinels, cosine_schedule, adamw_rms_step),
    "05L": (bootstrap_difference, consistent_winners, win_rate, cohen_kappa, lm_eval_yaml),
}

__all__ = ["CHECKS", "CheckFailed", "question", *(f.__name__ for checks in CHECKS.values() for f in checks)]
