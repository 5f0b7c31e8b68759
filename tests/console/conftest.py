"""The console tests' ``world``: the app over a fresh copy of the Lake George week."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.app_world import World, make_world


@pytest.fixture
def world(tmp_path: Path) -> World:
    return make_world(tmp_path)
