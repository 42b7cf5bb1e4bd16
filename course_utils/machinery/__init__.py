"""The course's machinery: paths, the offline switches, typed configs and profiles, a notebook's session, the device,
memory, batched generation, the metrics record and ROUGE, the notebook runner and the ``course`` command.

None of it is a lesson's subject; the map of every module is ``course_utils/README.md``.
"""
