"""The course's machinery: paths, the offline switches, typed configs and profiles, a notebook's session, the device,
memory, the metrics record, the notebook runner, the ``course`` command and the launcher.

None of it is a lesson's subject; the map of every module is ``course_utils/README.md``.
"""
