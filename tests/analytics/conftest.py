"""Fixtures of the analytics tests: the example sites, loaded once per module."""

from __future__ import annotations

import pytest

from siltwatch.config import SiteConfig, load_site
from tests.analytics.site_log_helpers import EXAMPLES


@pytest.fixture(scope="module")
def george() -> SiteConfig:
    """Lake George: areas north-cut, pad-b and stockpile."""
    return load_site(EXAMPLES / "lake-george-site.toml")


@pytest.fixture(scope="module")
def lure() -> SiteConfig:
    """Lake Lure: areas lot-1 and drive."""
    return load_site(EXAMPLES / "lake-lure-site.toml")


@pytest.fixture(scope="module")
def flats(george: SiteConfig) -> SiteConfig:
    """The Lake George example site under the Big Flats pack."""
    return george.model_copy(
        update={"site": george.site.model_copy(update={"rule_packs": ["ny-big-flats"]})}
    )
