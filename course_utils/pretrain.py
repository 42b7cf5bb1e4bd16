"""Moved: lesson 04's pretraining lives in ``course_utils/pretraining/``, and its command is
``python -m course_utils.pretraining``. This forward keeps ``python -m course_utils.pretrain`` working for a while."""

if __name__ == "__main__":
    import sys

    from course_utils.pretraining.__main__ import main

    print("python -m course_utils.pretrain has moved: run python -m course_utils.pretraining", file=sys.stderr)
    sys.exit(main())
