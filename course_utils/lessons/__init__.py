"""The lessons' hand-written support: what a notebook imports but does not show, named for what it does.

The fine-tune as one command (lessons 01, 02 and 04 launch it) and its launcher, DeepSpeed's configs checked, each
lesson's settings, lm-eval's task files, lab 01L's data. The map of every
module is ``course_utils/README.md``.
"""
