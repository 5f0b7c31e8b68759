"""The site configuration: the reference configs load, mistakes are named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from siltwatch.config import ConfigError, SiteConfig, load_site

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CONTRACT = Path("/work/shared/contract")
NOT_FINITE = (
    "(nan and inf are valid TOML but would silently switch off the check that uses this value)"
)


def test_reference_sites_load_unchanged() -> None:
    lg = load_site(EXAMPLES / "lake-george-site.toml")
    assert lg.site.id == "lg-route9n"
    assert set(lg.sensors()) == {"turb-up", "turb-down", "rain-1", "lvl-basin-a", "sed-trap-1"}
    assert lg.turbidity_pairs[0].limit == {"over_background_ntu": 25}
    assert lg.water("west-brook").water_class == "stream"
    ll = load_site(EXAMPLES / "lake-lure-site.toml")
    assert ll.infiltration_practices[0].drain_limit_h == 72
    assert ll.sensor("rain-yard").tip_depth_mm() == pytest.approx(0.2)
    assert lg.sensor("rain-1").tip_depth_mm() == pytest.approx(0.254)
    # Lake Lure keys carry metres; Lake George feet: both become metres.
    assert ll.infiltration_practices[0].tolerance_metres() == pytest.approx(0.02)
    assert lg.infiltration_practices[0].tolerance_metres() == pytest.approx(0.05 * 0.3048)
    assert ll.stage_storage_m(ll.sediment_traps[0]) == [
        (0.0, 0.0),
        (0.3, 40.0),
        (0.6, 95.0),
        (0.9, 165.0),
        (1.2, 250.0),
    ]
    length, width, slope, depth = lg.sediment_traps[0].shape.metres()  # type: ignore[union-attr]
    assert (length, width, slope, depth) == pytest.approx(
        (20 * 0.3048, 10 * 0.3048, 2.0, 3 * 0.3048)
    )


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "site.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _lake_george(tmp_path: Path, old: str, new: str) -> Path:
    """The Lake George example with its first ``old`` replaced by ``new``."""
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    assert old in text, old
    return _write(tmp_path, text.replace(old, new, 1))


def _lines(path: Path) -> list[str]:
    """The lines of the ConfigError that loading ``path`` must raise."""
    with pytest.raises(ConfigError) as info:
        load_site(path)
    return info.value.lines


FIVE_MISTAKES = """
[site]
id = "bad-site"
timezone = "America/New_Yrok"
rule_packs = ["ny-lake-george", "ny-lake-georg"]

[[receiving_waters]]
id = "brook"
class = "stream"

[[contacts]]
name = "Sam Okafor"
role = "officer"
email = "officer@example.org"

[[stations]]
id = "s1"
  [[stations.sensors]]
  id = "turb-up"
  kind = "turbidity"
  unit = "ft"
  interval_s = 60
  [[stations.sensors]]
  id = "rain-1"
  kind = "rain"
  unit = "in"
  interval_s = 300

[[turbidity_pairs]]
id = "p"
upstream = "turb-up"
downstream = "turb-dwn"
receiving_water = "brook"
limit = { over_background_ntu = 25 }

[[sediment_traps]]
id = "t"
depth_sensor = "rain-1"
shape = { bottom_length_ft = 20.0, bottom_width_ft = 10.0, side_slope = 2.0, depth_ft = 3.0 }
"""


def test_five_mistakes_give_five_precise_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, FIVE_MISTAKES)
    lines = _lines(path)
    assert len(lines) == 5, lines
    assert all(line.startswith(f"{path}: ") for line in lines)
    expected = [
        ("site.timezone", "America/New_Yrok"),
        ("stations[0].sensors[0].unit", "does not fit a turbidity sensor"),
        ("site.rule_packs[1]", "unknown rule pack 'ny-lake-georg'"),
        ("turbidity_pairs[0].downstream", "no sensor 'turb-dwn'"),
        ("sediment_traps[0].depth_sensor", "is a rain sensor, expected a sediment_depth sensor"),
    ]
    for key, fragment in expected:
        assert any(f": {key}: " in line and fragment in line for line in lines), (key, lines)


def test_duplicate_ids_unknown_keys_and_missing_keys(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        """
[site]
id = "s"
rule_packs = ["nc-ncg01"]
[[stations]]
id = "a"
sensors = [
  { id = "x", kind = "rain", unit = "mm", interval_s = 300 },
  { id = "x", kind = "rain", unit = "mm", intervall_s = 300 },
]
""",
    )
    text = "\n".join(_lines(path))
    assert "stations[0].sensors[1].id: duplicate sensor id 'x'" in text
    assert "stations[0].sensors[1].intervall_s: is not a known key" in text
    assert "stations[0].sensors[1].interval_s: is required but missing" in text


def test_narrative_standard_requires_a_site_limit(tmp_path: Path) -> None:
    path = _lake_george(tmp_path, "limit = { over_background_ntu = 25 }", "")
    (line,) = _lines(path)
    assert "turbidity_pairs[0].limit: is required" in line
    assert "Lake George §148-9 B" in line


def test_bad_limit_shape_and_toml_syntax(tmp_path: Path) -> None:
    path = _lake_george(tmp_path, "over_background_ntu = 25", "over_backgrund_ntu = 25")
    first = _lines(path)[0]
    assert "turbidity_pairs[0].limit" in first
    assert "over_backgrund_ntu" in first
    path.write_text("[site\nid=1", encoding="utf-8")
    assert "is not valid TOML" in _lines(path)[0]
    with pytest.raises(ConfigError, match="file not found"):
        load_site(tmp_path / "nope.toml")


@pytest.mark.parametrize("name", ["lake-george-site.toml", "lake-lure-site.toml"])
def test_contract_sites_load_with_their_areas(name: str) -> None:
    """The reference files declare [[areas]] (contract README, "Site areas and the site log").

    examples/ holds copies of the contract files; the originals are loaded too
    where this checkout sits next to them.
    """
    paths = [EXAMPLES / name] + ([CONTRACT / name] if (CONTRACT / name).exists() else [])
    for path in paths:
        site = load_site(path)
        if name.startswith("lake-george"):
            assert [a.id for a in site.areas] == ["north-cut", "pad-b", "stockpile"]
            north = site.areas[0]
            assert (north.acres, north.slope_pct, north.distance_to_water_ft) == (0.6, 22, 650)
            assert north.hqw_zone is False
        else:
            assert [a.id for a in site.areas] == ["lot-1", "drive"]
            assert site.site.disturbed_acres == 1.6


ONE_MISTAKE = [
    # ``nan`` NTU is never exceeded: the legally required alert would never fire.
    pytest.param(
        "over_background_ntu = 25",
        "over_background_ntu = nan",
        "turbidity_pairs[0].limit.over_background_ntu: expected a finite number, "
        f"got nan {NOT_FINITE}",
        id="nan-turbidity-limit",
    ),
    pytest.param(
        "travel_time_s = 120",
        "travel_time_s = inf",
        f"turbidity_pairs[0].travel_time_s: expected a finite number, got inf {NOT_FINITE}",
        id="infinite-travel-time",
    ),
    # A newline in an address would let the file add mail headers to every alert.
    pytest.param(
        'email = "stormwater.officer@example.org"',
        'email = "stormwater.officer@example.org\\nBcc: all@example.net"',
        "contacts[1].email: expected an email address (e.g. 'officer@town.example.org'), "
        "got 'stormwater.officer@example.org\\nBcc: all@example.net': it contains '\\n'; "
        "a control character such as a newline could inject mail headers",
        id="email-with-a-newline",
    ),
    # Names go into mail headers (``To: Sam Okafor <...>``): a CR or LF there forges headers.
    pytest.param(
        'name = "Sam Okafor"',
        'name = "Sam\\rOkafor"',
        "contacts[1].name: must not contain control characters such as newlines, "
        "got 'Sam\\rOkafor' (has '\\r')",
        id="contact-name-with-a-control-character",
    ),
    # Overdue inspections go to the officer; with none, the law's escalation goes nowhere.
    pytest.param(
        'role = "officer"',
        'role = "qualified_inspector"',
        'contacts: no contact has role "officer"; the ny-lake-george rules send overdue '
        "inspections and critical turbidity, drain-time and sediment-trap alerts to the town's "
        'officer (add one: [[contacts]] with role = "officer" and an email or phone)',
        id="no-officer",
    ),
    pytest.param(
        'email = "stormwater.officer@example.org"\nphone = "+15185550199"',
        "",
        "contacts[1]: an officer needs an email or a phone: alerts reach the officer "
        "only through them",
        id="officer-nobody-can-reach",
    ),
    pytest.param(
        'id = "pad-b"',
        'id = "north-cut"',
        "areas[1].id: duplicate area id 'north-cut' (also at areas[0])",
        id="duplicate-area-ids",
    ),
    pytest.param(
        "interval_s = 60",
        "interval_s = 60\nmin_value = 5\nmax_value = 5",
        "stations[0].sensors[0]: min_value (5) must be below max_value (5): otherwise "
        "every reading is out of range",
        id="sensor-range-that-excludes-every-reading",
    ),
]


@pytest.mark.parametrize(("old", "new", "line"), ONE_MISTAKE)
def test_one_mistake_is_refused_with_its_key_path(
    tmp_path: Path, old: str, new: str, line: str
) -> None:
    """The Lake George example with ``old`` replaced by ``new``: exactly one line, naming
    the file and the key."""
    path = _lake_george(tmp_path, old, new)
    assert _lines(path) == [f"{path}: {line}"]


def test_non_finite_rule_override_and_area_are_each_reported_once(tmp_path: Path) -> None:
    path = _lake_george(tmp_path, "acres = 0.6", "acres = -inf")
    with path.open("a", encoding="utf-8") as f:
        f.write('\n[rule_overrides]\n"turbidity.window_s" = nan\n"drain.limit_h.dry_well" = 0\n')
    assert _lines(path) == [
        f"{path}: areas[0].acres: expected a finite number, got -inf {NOT_FINITE}",
        f"{path}: rule_overrides.turbidity.window_s: expected a finite number, got nan "
        f"{NOT_FINITE}",
        f"{path}: rule_overrides.drain.limit_h.dry_well: expected a number > 0, got 0",
    ]


@pytest.mark.parametrize(
    ("email", "why"),
    [
        ("stormwater.officer.example.org", "it has no @"),
        ("a@b@example.org", "it has 2 @ signs"),
        ("@example.org", "nothing before the @"),
        ("officer@localhost", "the domain 'localhost' needs a dot between non-empty parts"),
        ("officer @example.org", "it contains whitespace"),
    ],
)
def test_email_that_is_not_an_address_is_refused(tmp_path: Path, email: str, why: str) -> None:
    path = _lake_george(tmp_path, 'email = "stormwater.officer@example.org"', f'email = "{email}"')
    assert _lines(path) == [
        f"{path}: contacts[1].email: expected an email address (e.g. 'officer@town.example.org'), "
        f"got {email!r}: {why}"
    ]


@pytest.mark.parametrize("phone", ["518-555-0199", "+1 518 555 0199", "+123456", "+0185550199"])
def test_phone_that_is_not_e164_is_refused(tmp_path: Path, phone: str) -> None:
    path = _write(
        tmp_path,
        (EXAMPLES / "lake-lure-site.toml")
        .read_text(encoding="utf-8")
        .replace('phone = "+18285550111"', f'phone = "{phone}"'),
    )
    assert _lines(path) == [
        f"{path}: contacts[1].phone: expected an E.164 phone number: + then 7 to 15 digits with "
        f"the country code, no spaces or dashes (e.g. '+15185550199'), got {phone!r}"
    ]


def test_a_site_without_rule_packs_needs_no_officer(tmp_path: Path) -> None:
    path = _write(tmp_path, '[site]\nid = "bare"\n')
    assert load_site(path).contacts == []


def test_a_model_built_without_load_site_refuses_nan_too() -> None:
    """Tests and benchmarks build SiteConfig directly: the models themselves refuse nan/inf."""
    with pytest.raises(ValidationError, match="finite number"):
        SiteConfig.model_validate(
            {"site": {"id": "s", "disturbed_acres": float("nan")}},
        )
