"""Lesson 00's saved code (course_utils/from_notebooks/device_report.py): library versions and the compile check."""

from course_utils.from_notebooks.device_report import compile_check


def test_the_compile_check_names_a_failure():
    # Its success, inductor building C++ kernels on this CPU, is asserted by the GPU check's tiny test.
    failed = compile_check("cpu", backend="no_such_backend")
    assert not failed["compiles"] and "no_such_backend" in failed["error"]
