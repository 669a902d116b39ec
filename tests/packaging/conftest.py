"""The distribution as a user gets it: an sdist and a wheel built by ``python -m build`` from the source tree."""

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Dist:
    sdist: Path
    wheel: Path


def source_files() -> list[str]:
    """The files of the checkout, tracked or new, never ignored ones (caches, virtualenvs, databases)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def copy_source(target: Path) -> Path:
    for name in source_files():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target / name)
    return target


def build(source: Path, out: Path, *kinds: str) -> None:
    # An isolated build, as `python -m build` does for a user (setuptools from PyPI, or pip's cache).
    result = subprocess.run(
        [sys.executable, "-m", "build", *kinds, "--outdir", str(out), str(source)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dist]:
    """``python -m build`` on a clean copy of the checkout: what a clone would build."""
    source = copy_source(tmp_path_factory.mktemp("source"))
    out = tmp_path_factory.mktemp("dist")
    build(source, out)
    (sdist,) = out.glob("django_toolcalling-*.tar.gz")
    (wheel,) = out.glob("django_toolcalling-*-py3-none-any.whl")
    yield Dist(sdist=sdist, wheel=wheel)
