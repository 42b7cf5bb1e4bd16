"""The labs' support: the checks a lab calls after each task, and its questions. ``check`` is the face:

    from course_utils.labs import check
    check.prompt_masked(tokenize_example, tokenizer)     # prints one line starting with ✔, or raises CheckFailed
    check.question("01L", 2, q2)                         # the chosen option explained, right or wrong

The map of every module is ``course_utils/README.md``.

The student copies of the labs are written from their solutions by ``python tools/labs.py``.
"""
