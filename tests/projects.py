"""A project a test builds by following a documentation page: its directory, and its commands run there with the
project's own virtualenv first, as a reader's shell would run them."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path


class ProjectDirectory:
    """The project's directory and the environment its commands run in (its virtualenv first on PATH)."""

    placeholders: dict[str, str] = {}  # words of a page's commands the reader fills in, and what the test types

    def __init__(self, root: Path, venv: Path, env: dict[str, str]) -> None:
        self.root, self.venv, self.env = root, venv, env
        self.outputs: dict[str, str] = {}

    def run(self, line: str) -> str:
        """Run one command line of the page; its output is kept under the line, a failure shows both streams."""
        argv = [self.placeholders.get(arg, arg) for arg in shlex.split(line)]
        if argv[:3] == ["python", "manage.py", "createsuperuser"]:
            argv.append("--noinput")  # username, e-mail and password come from DJANGO_SUPERUSER_*
        argv[0] = str(self.venv / "bin" / argv[0])
        result = subprocess.run(argv, cwd=self.root, env=self.env, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        self.outputs[line] = result.stdout + result.stderr
        return result.stdout

    def popen(self, argv: list[str], log: Path) -> subprocess.Popen:
        """Start a long-running command of the project (a worker, a web server), its output in ``log``."""
        argv = [str(self.venv / "bin" / argv[0]), *argv[1:]]
        return subprocess.Popen(argv, cwd=self.root, env=self.env, stdout=log.open("w"), stderr=subprocess.STDOUT)
