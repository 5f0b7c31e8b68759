"""Rule packs: every shipped pack loads, packs stack, site overrides win and say so."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from analytics.calendar import SiteCalendar
from siltwatch import rulepacks
from siltwatch.config import ConfigError, load_site
from siltwatch.rulepacks import (
    RULE_KEYS,
    available_packs,
    check_value,
    load_pack,
    pack_chain,
    resolve_rules,
)


def test_every_shipped_pack_loads_with_citations() -> None:
    packs = available_packs()
    for required in (
        "ny-lake-george",
        "ny-big-flats",
        "nc-ncg01",
        "nc-lake-lure",
        "epa-cgp-2022",
        "wa-cswgp",
    ):
        assert required in packs
    for pack_id in packs:
        pack = load_pack(pack_id)
        for key, entry in pack.rules.items():
            assert key in RULE_KEYS
            assert entry.citation.strip()
            assert entry.verified in ("seed", "primary", "secondary", "default")


def test_seed_values_match_the_ordinances() -> None:
    lg = resolve_rules(["ny-lake-george"])
    assert lg.require("sediment.cleanout_fraction").value == 0.5
    assert lg.require("sediment.cleanout_fraction").cite() == "Lake George §148-10 A"
    limits = {
        t: lg.number(f"drain.limit_h.{t}") / 24
        for t in (
            "infiltration_basin",
            "infiltration_trench",
            "dry_well",
            "porous_pavement",
            "vegetated_depression",
        )
    }
    assert limits == {
        "infiltration_basin": 5,
        "infiltration_trench": 15,
        "dry_well": 15,
        "porous_pavement": 2,
        "vegetated_depression": 1,
    }
    # Lake George extends the NY general permit; §148-10 A adopts its Part IV cadence.
    routine = lg.require("inspection.routine_days")
    assert routine.pack == "ny-lake-george" and routine.value == 7
    assert routine.cite() == "Lake George §148-10 A; NY GP-0-25-001 Part IV.C"


def test_packs_stack_later_wins_and_extends_come_first() -> None:
    assert pack_chain(["nc-lake-lure"]) == ["siltwatch-defaults", "nc-ncg01", "nc-lake-lure"]
    ll = resolve_rules(["nc-ncg01", "nc-lake-lure"])
    assert ll.require("calendar.weekend").pack == "nc-lake-lure"  # overrides the default
    assert ll.number("inspection.storm_threshold_in") == 1.0
    epa = resolve_rules(["epa-cgp-2022"])
    assert epa.number("inspection.storm_threshold_in") == 0.25


def test_site_override_wins_and_is_recorded() -> None:
    rules = resolve_rules(["ny-lake-george"], {"sediment.cleanout_fraction": 0.4})
    value = rules.require("sediment.cleanout_fraction")
    assert value.value == 0.4
    assert value.cite() == "site override of Lake George §148-10 A"
    assert [v.key for v in rules.overrides()] == ["sediment.cleanout_fraction"]


@pytest.mark.parametrize(
    ("key", "value", "fragment"),
    [
        ("inspection.routine_dayz", 7, "unknown rule key"),
        ("inspection.routine_days", "seven", "expected int or float"),
        ("inspection.quarterly", 1, "expected bool"),
        ("turbidity.limit.lake", {"max_ntu": -1}, "must be a number >= 0"),
        (
            "turbidity.limit.any",
            {"pct_above_background_ntu": 50, "over_background_ntu": 5},
            "piecewise",
        ),
    ],
)
def test_bad_values_are_refused(key: str, value: object, fragment: str) -> None:
    problem = check_value(key, value)
    assert problem is not None and fragment in problem


def test_a_pack_whose_weekend_is_the_whole_week_is_refused_naming_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seven weekend days leave no working day: "15 working days" (Lake Lure 96.07(D))
    would be counted for ever. The pack is refused at load, naming its file and key."""
    week = '["mon", "tue", "wed", "thu", "fri", "sat", "sun"]'
    (tmp_path / "all-weekend.toml").write_text(
        '[pack]\nid = "all-weekend"\ntitle = "t"\nversion = "1"\n\n'
        f'[rules."calendar.weekend"]\nvalue = {week}\ncitation = "x"\nverified = "seed"\n',
        encoding="utf-8",
    )
    monkeypatch.setattr(rulepacks, "_pack_dir", lambda: tmp_path)
    with pytest.raises(ConfigError) as info:
        load_pack("all-weekend")
    (line,) = info.value.lines
    assert line.startswith(f"{tmp_path / 'all-weekend.toml'}: rules.calendar.weekend.value: ")
    assert "all seven days are weekend days" in line
    # Six days is a (strange) weekend that still leaves a working day; "Sunday" and
    # "SAT" are read by their first three letters; a name that is no day is refused.
    assert check_value("calendar.weekend", ["mon", "tue", "wed", "thu", "fri", "SAT"]) is None
    assert "expected one of" in (check_value("calendar.weekend", ["sat", "holiday"]) or "")
    assert "all seven" in (
        check_value("calendar.weekend", ["Monday", "tue", "wed", "thu", "fri", "sat", "Sunday"])
        or ""
    )


def test_a_site_override_of_a_seven_day_weekend_is_refused_and_a_hand_built_calendar_raises(
    tmp_path: Path,
) -> None:
    """The site file's override is refused the same way (its key path named), and a
    calendar built by hand with such a weekend raises instead of looping."""
    site = Path(__file__).resolve().parents[2] / "examples" / "lake-lure-site.toml"
    path = tmp_path / "site.toml"
    path.write_text(
        site.read_text(encoding="utf-8") + '\n[rule_overrides]\n"calendar.weekend" = '
        '["sun", "mon", "tue", "wed", "thu", "fri", "sat"]\n',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert [ln for ln in info.value.lines if "calendar.weekend" in ln] == [
        f"{path}: rule_overrides.calendar.weekend: all seven days are weekend days: no "
        "working day or business day is left, so no 'N working days' or 'next business "
        "day' deadline could ever end"
    ]
    calendar = SiteCalendar(weekend=(0, 1, 2, 3, 4, 5, 6))
    with pytest.raises(ValueError, match="all seven days"):
        calendar.add_working_days(date(2026, 12, 18), 15)
    with pytest.raises(ValueError, match="all seven days"):
        calendar.add_business_days(date(2026, 12, 18), 1)
