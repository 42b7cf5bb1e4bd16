"""Lesson 04's support, in nanoT5's spirit (its ``utils/`` beside a short ``main``): one folder, a module a job.

- ``config``           the typed config and its checks, the plan it comes to on a machine, the run's result
- ``data``             text streamed and cut into span-corrupted batches in DataLoader workers; the held-out batches
- ``span_corruption``  T5's objective: the noise mask, the sentinels, the exact input and target lengths
- ``optim``            AdamW with RMS scaling, Adafactor, the cosine and inverse-square-root schedules
- ``checkpoints``      checkpoints that survive a kill, the resume, the stop signals
- ``run``              ``PretrainRun``: what the loop calls besides forward, backward and step
- ``loop``             (from notebook 04's cells) the model from its config, the training step, the loop
- ``race``             the optimizer race: the same run once per variant
- ``__main__``         the command: ``python -m course_utils.pretraining --help``

Importing the folder imports nothing heavy; each module says how it is used.
"""
