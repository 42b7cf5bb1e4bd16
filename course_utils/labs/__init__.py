"""The labs' support: the checks a lab calls after each task, and its questions. ``check`` is the face:

    from course_utils.labs import check
    check.prompt_masked(tokenize_example, tokenizer)     # prints one line starting with ✔, or raises CheckFailed
    check.question("01L", 2, q2)                         # the chosen option explained, right or wrong

- ``check``               every lab's checks under one name
- ``verdict``             how a check reports: one line raised on a wrong answer, one printed on a right one
- ``quiz``                the multiple-choice questions, each option explained
- ``what_fits``           lab 00L: T5's parameters, training-state bytes, the rows that fit
- ``instruction_tuning``  lab 01L: prompt, labels, EOS, padding, falling loss, batched generation, LoRA's size
- ``zero_by_hand``        lab 02L: a ZeRO-3 offload config, model-state bytes, the fastest setup that fits
- ``rouge_from_scratch``  lab 03L: ROUGE's tokens, ROUGE-N, ROUGE-L and Lead-3
- ``nanot5_parts``        lab 04L: noise mask, sentinels, schedule and the AdamW step
- ``evaluation_by_hand``  lab 05L: the paired bootstrap, the judge's consistency filter and win rate, Cohen's kappa,
                          an lm-eval task

The student copies of the labs are written from their solutions by ``python tools/labs.py``.
"""
