"""No module of the app is over 400 lines: each is named for its one job and read whole (migrations aside,
which Django writes)."""

from pathlib import Path

import toolcalling

LIMIT = 400
PACKAGE = Path(toolcalling.__file__).parent


def test_no_module_of_the_app_is_over_400_lines():
    modules = [path for path in PACKAGE.rglob("*.py") if "migrations" not in path.relative_to(PACKAGE).parts]
    lengths = {str(path.relative_to(PACKAGE)): len(path.read_text().splitlines()) for path in modules}
    assert len(lengths) > 100  # the whole package was read
    assert {name: lines for name, lines in lengths.items() if lines > LIMIT} == {}
