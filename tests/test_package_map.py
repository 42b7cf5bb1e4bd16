"""course_utils/README.md is the one map of the package: every module on it, and nothing on it that is not there."""

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "course_utils"
MAP = PACKAGE / "README.md"


def mapped_modules(text: str) -> set[str]:
    """The modules the map's tables name in their first column, as paths relative to the package."""
    return set(re.findall(r"^\| `([\w/]+\.py)` \|", text, re.M))


def mapped_folders(text: str) -> set[str]:
    return set(re.findall(r"^\| `(\w+)/` \|", text, re.M))


def package_modules() -> set[str]:
    return {
        str(p.relative_to(PACKAGE))
        for p in PACKAGE.rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }


def package_folders() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}


def test_the_map_names_every_module_of_the_package_and_no_other():
    text = MAP.read_text()
    missing, extra = package_modules() - mapped_modules(text), mapped_modules(text) - package_modules()
    assert not missing, f"modules missing from course_utils/README.md: {sorted(missing)}"
    assert not extra, f"course_utils/README.md names modules that do not exist: {sorted(extra)}"


def test_the_map_names_every_folder_and_the_package_keeps_no_module_outside_one():
    assert mapped_folders(MAP.read_text()) == package_folders()
    assert [p.name for p in PACKAGE.glob("*.py")] == ["__init__.py"], "a module outside the folders: file it in one"


def test_the_map_check_sees_a_missing_and_an_invented_module():
    text = MAP.read_text()
    assert "`machinery/paths.py`" in text
    assert "machinery/paths.py" not in mapped_modules(text.replace("| `machinery/paths.py` |", "| paths |"))
    assert "machinery/ghost.py" in mapped_modules(text + "\n| `machinery/ghost.py` | a module that is not there |\n")


def test_generated_modules_stand_in_their_folder_and_say_so():
    import sys

    sys.path.insert(0, str(PACKAGE.parent / "tools"))
    import export

    generated = {e.module.removeprefix("course_utils/") for e in export.EXPORTS}
    assert generated == {m for m in package_modules() if m.startswith("from_notebooks/")}
    for module in generated:
        head = (PACKAGE / module).read_text()[:400]
        assert "Never edit this file by hand" in head and ".ipynb" in head, module


def test_the_readme_links_the_map_and_keeps_no_copy_of_it():
    readme = (PACKAGE.parent / "README.md").read_text()
    assert "(course_utils/README.md)" in readme
    assert not re.search(r"^\| `(machinery|lessons|models_and_data|from_notebooks)/\w+\.py` \|", readme, re.M)
    for init in PACKAGE.rglob("__init__.py"):
        assert not re.search(r"^- ``\w+``\s{2,}", init.read_text(), re.M), (
            f"{init}: a module list (the map is README.md)"
        )


# Test files in a folder that test a module under another name: pytest needs unique file names across folders.
TESTED_UNDER_ANOTHER_NAME = {
    "pretraining/test_pretraining_data.py": "pretraining/data.py",
    "lessons/test_finetune_payoff.py": "lessons/finetune.py",
}


def test_the_tests_mirror_the_package():
    """tests/<folder>/test_<module>.py tests course_utils/<folder>/<module>.py, tests/<folder>/test_<folder>.py the
    folder whole, tests/tools/ the tools and the benchmarks' record: a maintainer who changes a module knows which
    file to run."""
    tests, root = PACKAGE.parent / "tests", PACKAGE.parent
    for path in sorted(tests.glob("*/test_*.py")):
        relative = str(path.relative_to(tests))
        if relative.startswith("tools/"):
            name = path.name.removeprefix("test_")
            assert (root / "tools" / name).exists() or (root / "benchmarks" / name).exists(), relative
            continue
        if path.name == f"test_{path.parent.name}.py":  # a folder tested whole: labs/, standins/
            assert (PACKAGE / path.parent.name).is_dir(), relative
            continue
        module = TESTED_UNDER_ANOTHER_NAME.get(relative, relative.replace("test_", "", 1))
        assert (PACKAGE / module).exists(), f"tests/{relative} mirrors no module: course_utils/{module} is not there"
    folders = {p.name for p in tests.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders - {"tools"} <= package_folders()
