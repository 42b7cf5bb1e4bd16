"""Modules written from the lessons' cells marked ``#@save`` by ``python tools/export.py``: never edit them by hand.

Each one's docstring names its notebook; edit the cells there and rerun the command (``tests/tools/test_export.py``
fails when a module and its cells differ). The launchers (``deepspeed``, ``torchrun``, ``accelerate launch``) and
the tests import the lessons' code from here. The map of every module is ``course_utils/README.md``.
"""
