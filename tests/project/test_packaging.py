"""environment.yml and pyproject.toml must name the same packages."""
import re
import tomllib

import yaml

from support import ROOT


def _name(requirement):
    return re.split(r"[<>=!~\[ ]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_and_pyproject_name_the_same_dependencies():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    for extra in project["optional-dependencies"].values():
        wanted |= {_name(r) for r in extra}

    conda = yaml.safe_load((ROOT / "environment.yml").read_text())["dependencies"]
    listed = set()
    for item in conda:
        if isinstance(item, dict):
            listed |= {_name(r) for r in item["pip"]}
        elif _name(item) not in ("python", "pip"):
            listed.add(_name(item))
    assert listed == wanted, (f"only in environment.yml: {sorted(listed - wanted)}; "
                              f"only in pyproject.toml: {sorted(wanted - listed)}")
