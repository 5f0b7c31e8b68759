"""The site configuration: the reference configs load, mistakes are named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest

from siltwatch.config import ConfigError, load_site

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


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


FIVE_MISTAKES = """
[site]
id = "bad-site"
timezone = "America/New_Yrok"
rule_packs = ["ny-lake-george", "ny-lake-georg"]

[[receiving_waters]]
id = "brook"
class = "stream"

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
    with pytest.raises(ConfigError) as info:
        load_site(path)
    lines = info.value.lines
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
  [[stations.sensors]]
  id = "x"
  kind = "rain"
  unit = "mm"
  interval_s = 300
  [[stations.sensors]]
  id = "x"
  kind = "rain"
  unit = "mm"
  intervall_s = 300
""",
    )
    with pytest.raises(ConfigError) as info:
        load_site(path)
    text = "\n".join(info.value.lines)
    assert "stations[0].sensors[1].id: duplicate sensor id 'x'" in text
    assert "stations[0].sensors[1].intervall_s: is not a known key" in text
    assert "stations[0].sensors[1].interval_s: is required but missing" in text


def test_narrative_standard_requires_a_site_limit(tmp_path: Path) -> None:
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    path = _write(tmp_path, text.replace("limit = { over_background_ntu = 25 }", ""))
    with pytest.raises(ConfigError) as info:
        load_site(path)
    (line,) = info.value.lines
    assert "turbidity_pairs[0].limit: is required" in line
    assert "Lake George §148-9 B" in line


def test_bad_limit_shape_and_toml_syntax(tmp_path: Path) -> None:
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    path = _write(tmp_path, text.replace("over_background_ntu = 25", "over_backgrund_ntu = 25"))
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert "turbidity_pairs[0].limit" in info.value.lines[0]
    assert "over_backgrund_ntu" in info.value.lines[0]
    path.write_text("[site\nid=1", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert "is not valid TOML" in info.value.lines[0]
    with pytest.raises(ConfigError, match="file not found"):
        load_site(tmp_path / "nope.toml")
