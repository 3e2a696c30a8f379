"""The project's set-up promises: pyproject.toml and environment.yml name the same packages, the
required top-level layout exists, and CI runs the README's test command."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Names environment.yml may carry that pip cannot provide: the interpreter, pip itself, and the
# Java runtime PySpark needs.
CONDA_ONLY = {"python", "pip", "openjdk"}

REQUIRED_DIRS = ["notebooks", "txnlab", "widgets", "datasets", "tests"]


def normalise(spec: str) -> str:
    """A requirement (pip or conda spelling) reduced to its bare, normalised package name."""
    spec = spec.split(";", 1)[0].split("#", 1)[0].strip()   # markers, comments
    name = re.split(r"[\[<>=!~\s]", spec, maxsplit=1)[0]      # extras, version specifiers
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_environment_yml(text: str) -> tuple[list[str], list[str]]:
    """The conda and the pip entries of an environment.yml's ``dependencies:``.

    Understands only the shape such files have (a block list, optionally holding one ``- pip:``
    block list), which is all this project's file uses; PyYAML is not one of our dependencies.
    """
    conda: list[str] = []
    pip: list[str] = []
    section = None          # None, "deps" or "pip"
    deps_indent = pip_indent = -1
    for raw in text.splitlines():
        if raw.lstrip().startswith("#"):
            continue
        line = raw.split(" #", 1)[0].rstrip()      # trailing comment
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        body = line.strip()
        if indent == 0:
            section = "deps" if body == "dependencies:" else None
            continue
        if section is None or not body.startswith("- "):
            continue
        item = body[2:].strip().strip("'\"")
        if section == "pip" and indent <= deps_indent:
            section = "deps"
        if section == "deps":
            deps_indent = indent if deps_indent < 0 else deps_indent
            if item == "pip:":
                section, pip_indent = "pip", -1
            else:
                conda.append(item)
        else:
            pip_indent = indent if pip_indent < 0 else pip_indent
            pip.append(item)
    return conda, pip


def pyproject_names(data: dict) -> set[str]:
    project = data["project"]
    specs = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        specs += extra
    return {normalise(s) for s in specs}


def environment_names(text: str) -> set[str]:
    conda, pip = parse_environment_yml(text)
    names = {normalise(s) for s in conda} | {normalise(s) for s in pip if not s.startswith("-")}
    return names - CONDA_ONLY


def differences(pyproject: set[str], environment: set[str]) -> dict[str, set[str]]:
    """What each file names that the other does not (empty sets when they agree)."""
    return {"only in pyproject.toml": pyproject - environment,
            "only in environment.yml": environment - pyproject}


def read_pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def read_environment() -> str:
    return (ROOT / "environment.yml").read_text()


# ---- the real files ------------------------------------------------------------------------

def test_pyproject_and_environment_yml_name_the_same_packages():
    py, env = pyproject_names(read_pyproject()), environment_names(read_environment())
    assert differences(py, env) == {"only in pyproject.toml": set(),
                                    "only in environment.yml": set()}


def test_environment_yml_lists_names_not_just_the_project():
    conda, pip = parse_environment_yml(read_environment())
    assert "python=3.11" in conda
    assert {"pyspark", "jupyterlab", "confluent-kafka"} <= environment_names(read_environment())
    assert len([p for p in pip if not p.startswith("-")]) > 0


def test_pyproject_packages_the_engine_and_the_widgets_only():
    data = read_pyproject()
    assert data["project"]["requires-python"] == ">=3.11"
    find = data["tool"]["setuptools"]["packages"]["find"]
    assert set(find["include"]) == {"txnlab*", "widgets*"}
    assert {"tests*", "bench*", "notebooks*"} <= set(find["exclude"])


def test_required_top_level_folders_exist():
    missing = [d for d in REQUIRED_DIRS if not (ROOT / d).is_dir()]
    assert missing == []


def test_ci_runs_make_test():
    lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()]
    commands = [ln for ln in lines if ln and not ln.startswith("#")]
    assert "set -euo pipefail" in commands
    assert any(re.fullmatch(r"make test", c) for c in commands)


def test_makefile_has_the_documented_targets():
    text = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.M))
    assert {"lab", "test", "bench", "browser-deps", "clean"} <= targets


# ---- the checks themselves can fail --------------------------------------------------------

def test_a_package_missing_from_environment_yml_is_reported():
    pyproject = {"project": {"dependencies": ["pyspark>=4.3.0,<4.4", "Py_Arrow[extra]>=26"],
                             "optional-dependencies": {"test": ["confluent_kafka>=2.16"]}}}
    env = """\
name: x
dependencies:
  - python=3.11
  - pip
  - py-arrow=26        # conda spelling, different case and separator
  - pip:
      - pyspark>=4.3.0,<4.4
      - -e .
"""
    assert differences(pyproject_names(pyproject), environment_names(env)) == {
        "only in pyproject.toml": {"confluent-kafka"},
        "only in environment.yml": set(),
    }


def test_a_package_only_in_environment_yml_is_reported():
    env = "dependencies:\n  - numpy\n  - pip:\n    - kaleido>=1\nother:\n  - pandas\n"
    assert differences({"numpy"}, environment_names(env)) == {
        "only in pyproject.toml": set(),
        "only in environment.yml": {"kaleido"},
    }


def test_names_are_normalised():
    assert normalise("Confluent_Kafka[avro]>=2.16 ; python_version>'3'") == "confluent-kafka"
    assert normalise("python=3.11") == "python"
    assert normalise("pandas>=2.3,<3") == "pandas"
    assert normalise("zope.interface") == "zope-interface"
