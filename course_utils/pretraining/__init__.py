"""Lesson 04's support, in nanoT5's spirit (its ``utils/`` beside a short ``main``): one folder, a module a job.

The map of every module, and its pretraining run's loop in ``from_notebooks/``, is ``course_utils/README.md``.

Importing the folder imports nothing heavy; each module says how it is used.
"""
