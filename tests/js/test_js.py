"""The web page's JavaScript unit tests (`tests/js/*.test.js`), run by Node's own test
runner so that `make test` covers them. Node ships on the development machines and CI;
elsewhere these tests are skipped, except in CI, where a missing Node is a failure."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def test_javascript_units() -> None:
    node = shutil.which("node")
    if not node:
        if os.environ.get("CI"):
            pytest.fail("node is missing")
        pytest.skip("node is missing")
    files = sorted(str(path) for path in HERE.glob("*.test.js"))
    result = subprocess.run(
        [node, "--test", *files], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
