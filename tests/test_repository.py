"""Repository hygiene: clean notebooks, parameters from the environment, matching dependency lists."""

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LABS = sorted((ROOT / "notebooks" / "labs").rglob("*.ipynb"))  # student copies and solutions
HF_IMPORT = re.compile(r"^\s*(from|import)\s+(transformers|datasets|evaluate|huggingface_hub)\b", re.M)


def test_there_are_numbered_notebooks():
    assert NOTEBOOKS and all(re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", p.name) for p in NOTEBOOKS)


@pytest.mark.parametrize("path", NOTEBOOKS + LABS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_notebook_is_stored_without_outputs(path):
    cells = json.loads(path.read_text())["cells"]
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code)


@pytest.mark.parametrize("path", NOTEBOOKS + LABS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_parameters_come_from_the_environment_before_any_hf_import(path):
    cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
    tagged = [i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    params = "".join(cells[tagged[0]]["source"])
    assert 'os.environ.get("COURSE_PROFILE", "smoke")' in params and "COURSE_OUTPUT_DIR" in params
    sources = ["".join(c["source"]) for c in cells]
    setup = next(i for i, s in enumerate(sources) if "start_session(" in s)
    first_hf = next((i for i, s in enumerate(sources) if HF_IMPORT.search(s)), len(sources))
    assert tagged[0] < setup < first_hf


def test_nbstripout_hook_is_configured():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert any(h["id"] == "nbstripout" for repo in config["repos"] for h in repo["hooks"])


def _requirement_pins(requirements):
    return {re.split(r"[=<>~!]", r, maxsplit=1)[0].strip().lower(): r.replace(" ", "") for r in requirements}


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = _requirement_pins(project["dependencies"] + project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict)]
    assert "python=3.11" in env["dependencies"] and len(pip_lists) == 1
    assert _requirement_pins(pip_lists[0]) == wanted


def test_torch_is_pinned_to_the_cpu_wheel_version():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "torch==2.13.0" in project["dependencies"]


def test_ci_calls_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make course" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def package_imports() -> dict[str, set[str]]:
    """{module: the package's modules it imports}, wherever in the file the import is. Modules are named by their
    dotted path below the package ("models", "pretraining.config"); relative imports (``from .x``, ``from ..x``,
    ``from . import x``) and the absolute ones (``from course_utils.x import ...``, which the modules written from
    notebook cells use) are both followed."""
    import ast

    package = ROOT / "course_utils"
    modules = {
        ".".join(p.relative_to(package).with_suffix("").parts): p
        for p in package.rglob("*.py")
        if p.stem not in ("__init__", "__main__")
    }
    imports = {}
    for name, path in modules.items():
        here = name.split(".")[:-1]  # the folder the module stands in
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = here[: len(here) - node.level + 1]
            elif (node.module or "").startswith("course_utils"):
                base = []
            else:
                continue
            target = [
                *base,
                *(
                    node.module.split(".")[1:]
                    if not node.level and node.module
                    else (node.module or "").split(".")
                    if node.module
                    else []
                ),
            ]
            candidates = [".".join(target)] + [".".join([*target, alias.name]) for alias in node.names]
            found |= {c for c in candidates if c in modules and c != name}
        imports[name] = found
    return imports


def folders(imports: dict[str, set[str]]) -> dict[str, set[str]]:
    """{folder: the other folders its modules import}: the package as course_utils/README.md draws it."""
    folder = lambda module: module.split(".")[0]  # noqa: E731
    drawn: dict[str, set[str]] = {}
    for module, targets in imports.items():
        drawn.setdefault(folder(module), set()).update(folder(t) for t in targets if folder(t) != folder(module))
    return drawn


def import_depths(imports: dict[str, set[str]]) -> dict[str, int]:
    """1 for a module that imports nothing of the package, else one more than its deepest import; an import cycle
    is an error that names it."""
    depths: dict[str, int] = {}

    def depth(name: str, path: tuple[str, ...] = ()) -> int:
        assert name not in path, f"import cycle: {' -> '.join((*path, name))}"
        if name not in depths:
            depths[name] = 1 + max((depth(d, (*path, name)) for d in imports[name]), default=0)
        return depths[name]

    for name in imports:
        depth(name)
    return depths


def test_no_module_imports_itself_through_others():
    import_depths(package_imports())


def test_the_folders_use_each_other_as_the_map_says():
    """course_utils/README.md: machinery/ at the bottom (only its `cli` reaches up, to models_and_data/hub for
    `course prefetch` and to labs/grading for `course grade`), models_and_data/ on machinery/ alone, and nothing else
    of the package imports labs/ or standins/."""
    imports = package_imports()
    drawn = folders(imports)
    assert drawn["models_and_data"] == {"machinery"}
    reaching_up = {m for m, targets in imports.items() if m.startswith("machinery.") and folders({m: targets})}
    reaching_up = {m for m in reaching_up if folders({m: imports[m]})["machinery"]}
    assert reaching_up == {"machinery.cli"} and drawn["machinery"] == {"models_and_data", "labs"}
    assert {t for t in imports["machinery.cli"] if not t.startswith("machinery.")} == {
        "models_and_data.hub",
        "labs.grading",
    }
    assert not any(
        {"labs", "standins"} & used for folder, used in drawn.items() if folder not in ("labs", "standins", "machinery")
    )


def test_the_import_reader_follows_every_form_of_import():
    imports = package_imports()
    assert "pretraining.span_corruption" in imports["labs.nanot5_parts"]  # from course_utils.pretraining import x
    assert "pretraining.config" in imports["pretraining.run"]  # from course_utils.pretraining.config import ...
    assert "models_and_data.models" in imports["from_notebooks.pretraining_loop"]
    assert "machinery.hardware" in imports["pretraining.config"]
    drawn = folders(imports)
    assert drawn["pretraining"] >= {"models_and_data", "machinery"} and "pretraining" not in drawn["pretraining"]


# Commands whose package imports must wait until main() has set the offline switches: what they import pulls in
# transformers, which reads the switches once, when it is imported.
LATE_IMPORTS_ALLOWED = {"standins/__main__.py"}


def test_sibling_modules_are_imported_at_the_top_of_each_file():
    import ast

    for path in sorted((ROOT / "course_utils").rglob("*.py")):
        if str(path.relative_to(ROOT / "course_utils")) in LATE_IMPORTS_ALLOWED:
            continue
        tree = ast.parse(path.read_text())
        top = {id(node) for node in tree.body}
        late = [
            node.lineno
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and (node.level >= 1 or (node.module or "").startswith("course_utils"))
            and id(node) not in top
        ]
        assert not late, f"{path.name}: the package's imports inside functions at lines {late}"


def test_the_depth_check_finds_a_cycle_and_counts_a_chain():
    assert import_depths({"a": set(), "b": {"a"}, "c": {"b", "a"}}) == {"a": 1, "b": 2, "c": 3}
    with pytest.raises(AssertionError, match="import cycle: a -> b -> a"):
        import_depths({"a": {"b"}, "b": {"a"}})


def test_every_file_the_docs_and_comments_name_exists():
    """A path such as tests/test_x.py or course_utils/x.py named in prose must be there, so no comment
    sends a reader to a file that was renamed or never written."""
    sources = [
        ROOT / "README.md",
        ROOT / "pyproject.toml",
        ROOT / "environment.yml",
        ROOT / "Makefile",
        *NOTEBOOKS,
        *(ROOT / "course_utils").rglob("*.py"),
        ROOT / "course_utils" / "README.md",
        *(ROOT / "benchmarks").glob("*.py"),
        *(ROOT / "tests" / "rehearsal").glob("*.py"),
        *(ROOT / "data").glob("*.md"),
    ]
    named = re.compile(
        r"\b((?:tests|course_utils|benchmarks|data|deepspeed_configs|notebooks)/[\w/.-]+\.(?:py|md|jsonl?|txt)\b)"
    )
    missing = sorted(
        {
            f"{source.name}: {path}"
            for source in sources
            for path in named.findall(source.read_text(encoding="utf-8"))
            if not (ROOT / path).exists() and "<" not in path
        }
    )
    assert not missing, missing


def test_a_deprecation_in_the_course_or_a_library_it_calls_is_an_error_in_the_tests():
    """pyproject.toml's filterwarnings: a FutureWarning or DeprecationWarning attributed to the course, a test, or
    transformers, datasets, accelerate, peft, torch, evaluate or lm-eval fails the test that raised it."""
    import warnings

    for category, module in (
        (FutureWarning, "transformers.modeling_utils"),
        (DeprecationWarning, "course_utils.machinery.memory"),
        (FutureWarning, "peft.peft_model"),
        (DeprecationWarning, "torch.utils.data"),
    ):
        with pytest.raises(category):
            warnings.warn_explicit("going away", category, "somewhere.py", 1, module=module)
    from course_utils.machinery.memory import choose_accumulation  # an old name: it warns where it is called

    with pytest.raises(FutureWarning, match="is now course_utils.machinery.memory.accumulation_steps"):
        choose_accumulation(128, 1, 16)
    with pytest.warns(DeprecationWarning):  # another library's own business stays a warning
        warnings.warn_explicit("going away", DeprecationWarning, "somewhere.py", 1, module="jupyter_client.session")
