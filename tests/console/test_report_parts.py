"""What makes the report a filing (console/report/parts.py): the verdict line, the
certification each site's law asks for, people's names for subjects, the footer's CSS."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from console.report.parts import (
    DEFAULT,
    LAKE_LURE,
    NY_GP,
    certifications,
    css_string,
    same_text,
    subject_name,
    verdict,
)
from siltwatch.config import load_site
from siltwatch.rulepacks import site_rules
from siltwatch.schema import Duty
from tests.console.app_world import EXAMPLES, SITE

NEW_YORK = ZoneInfo("America/New_York")


def test_the_verdict_says_what_was_missed_and_what_is_open() -> None:
    found = verdict(
        ["met", "missed", "late", "open"],
        [(True, True, False), (True, False, True), (False, True, False)],
    )
    assert not found.clean
    assert found.text == (
        "1 duty missed, 1 duty met late, 2 regulatory alerts, "
        "1 without a recorded corrective action, 2 alerts still open."
    )
    clean = verdict(["met", "open"], [(False, False, False)])
    assert clean.clean
    assert (
        clean.text
        == "No violations found: every duty met on time, no regulatory alert; 1 other alert."
    )


def test_each_law_gets_its_own_certification_and_signature_lines() -> None:
    lure = certifications(site_rules(load_site(EXAMPLES / "lake-lure-site.toml")).packs)
    assert lure == [LAKE_LURE]
    # 96.05(B)(17)(b): name, address, affiliation, telephone number, signature, date
    for field in (
        "Name",
        "Address",
        "Affiliation",
        "Telephone number",
        "Signature",
        "Date of inspection",
    ):
        assert field in LAKE_LURE.lines
    assert "96.05(B)(17)" in LAKE_LURE.cite
    assert certifications(site_rules(SITE).packs) == [NY_GP]  # Lake George stacks on the NY GP
    assert "40 CFR 122.22(d)" in NY_GP.cite and "secondary" in NY_GP.cite
    assert certifications([]) == [DEFAULT]


def test_subjects_are_named_as_people_name_them() -> None:
    zone = NEW_YORK
    duty = Duty(
        id="du-dad6971507091ccf", kind="stabilization", reason="exposed_24h", subject="stockpile",
        created_at=datetime(2026, 5, 5, 15, tzinfo=UTC), due_at=datetime(2026, 5, 6, 15, tzinfo=UTC),
        completed_at=None, rule="Lake George §148-11 I(3)(e)[3][b]",
    )  # fmt: skip
    duties = {duty.id: duty}
    assert (
        subject_name(SITE, duty.id, duties, zone) == "Topsoil stockpile by West Brook (stockpile)"
    )
    assert subject_name(SITE, SITE.site.id, duties, zone) == "the whole site"
    assert subject_name(SITE, "gauge-1@2026-05-05T14:15:00Z", duties, zone) == (
        "storm at gauge-1 from 2026-05-05 10:15 EDT"
    )
    assert subject_name(SITE, "clearing_completed", duties, zone) == "clearing completed"
    assert subject_name(SITE, "outfall-a", duties, zone) == "outfall-a"


def test_the_footer_text_cannot_break_out_of_its_css_string() -> None:
    assert (
        css_string('Site "A" \\ </style><script>') == '"Site \\"A\\" \\\\ \\3c /style>\\3c script>"'
    )
    assert same_text("Rebuilt  the fence\n", "rebuilt the FENCE")
