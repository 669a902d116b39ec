"""What the guides tell a new user holds: the extras they list are the distribution's, the ``ai`` version they
name is the one the tests run, and the testing guide's standalone model server serves without a terminal."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import tomllib

import httpx2

from .test_site import DOCS, ROOT


def test_every_extra_is_listed_where_installing_is_explained():
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]) - {"dev"}
    for page in (ROOT / "README.md", DOCS / "tutorial.md"):
        text = page.read_text()
        assert {extra for extra in extras if f"`[{extra}]`" not in text} == set(), page.name


def test_the_ai_version_the_guide_and_the_example_name_is_the_one_the_tests_run():
    lock = json.loads((ROOT / "tests/frontends/js/package-lock.json").read_text())
    locked = lock["packages"]["node_modules/ai"]["version"]
    assert re.findall(r"they pin `ai` ([\d.]+)", (DOCS / "guides/frontends.md").read_text()) == [locked]
    example = json.loads((ROOT / "examples/ai-sdk-react/package.json").read_text())
    assert example["dependencies"]["ai"] == locked


def test_building_the_wheel_says_to_install_build_first():
    for page in (ROOT / "README.md", DOCS / "tutorial.md"):
        text = page.read_text()
        assert text.index("install build") < text.index("python -m build"), page.name


def test_the_standalone_model_server_of_the_testing_guide_serves_without_a_terminal(tmp_path):
    guide = (DOCS / "guides/testing.md").read_text()
    (script,) = re.findall(r"```python\n(# try_model\.py.*?)```", guide, flags=re.S)
    (tmp_path / "try_model.py").write_text(script.replace("port=8765", "port=0"))
    # As under nohup, a supervisor or `&`: no terminal, standard input closed, standard output a pipe.
    process = subprocess.Popen([sys.executable, "try_model.py"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), process.stderr.read() if process.stderr else ""
        answer = httpx2.post(f"{base_url}/chat/completions", headers={"Authorization": "Bearer x"}, timeout=10,
                             json={"model": "m", "messages": [{"role": "user", "content": "hi"}]})  # fmt: skip
        assert answer.status_code == 200, answer.text
        assert answer.json()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "whoami"
        assert process.poll() is None  # still serving
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
