"""Words of the topic layout are refused as ids, in site files and by the ACL generator.

Station ``ingest`` was granted ``siltwatch/v1/<site>/ingest/#`` and could forge the
service's retained lease; station ``inspections`` could publish the site's
inspections (issue 23, item 4). Each check here passed the forged id before.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from app.brokeraccess_cli import add_broker_acl_parser
from siltwatch.brokeraccess import SiteStations, acl_text
from siltwatch.config import ConfigError, load_site
from siltwatch.topic_words import RESERVED_IDS, filter_covers

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _lake_george(tmp_path: Path, old: str, new: str) -> Path:
    text = (EXAMPLES / "lake-george-site.toml").read_text(encoding="utf-8")
    assert old in text, old
    path = tmp_path / "site.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize("word", ["ingest", "inspections", "log", "alerts", "status", "cmd"])
def test_a_station_named_like_a_topic_word_is_refused_with_file_key_and_why(
    tmp_path: Path, word: str
) -> None:
    path = _lake_george(tmp_path, 'id = "up-1"', f'id = "{word}"')
    with pytest.raises(ConfigError) as info:
        load_site(path)
    (line,) = [x for x in info.value.lines if "stations[0].id" in x]
    assert line.startswith(f"{path}: stations[0].id: station id {word!r} is a word of the topic")
    assert "choose another id" in line


@pytest.mark.parametrize(("old", "key"), [('id = "turb-up"', "stations[0].sensors[0].id")])
@pytest.mark.parametrize("word", ["status", "reading", "cmd"])
def test_a_sensor_named_like_a_topic_word_is_refused(
    tmp_path: Path, old: str, key: str, word: str
) -> None:
    # The pair and the trap refer to the sensor by id: rename those too.
    path = _lake_george(tmp_path, old, f'id = "{word}"')
    text = path.read_text(encoding="utf-8").replace('"turb-up"', f'"{word}"')
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert [x for x in info.value.lines if "topic layout" in x] == [
        f"{path}: {key}: sensor id {word!r} is a word of the topic layout (reserved: "
        f"{', '.join(sorted(RESERVED_IDS))}); as a topic level it would let the sensor "
        f"write or shadow another topic (siltwatch/v1/<site>/{word}/...): choose another id"
    ]


def test_a_site_named_like_a_topic_word_is_refused(tmp_path: Path) -> None:
    path = _lake_george(tmp_path, 'id = "lg-route9n"', 'id = "alerts"')
    with pytest.raises(ConfigError) as info:
        load_site(path)
    assert any(x.startswith(f"{path}: site.id: site id 'alerts'") for x in info.value.lines)


def test_ordinary_ids_still_load() -> None:
    assert load_site(EXAMPLES / "lake-george-site.toml").stations[0].id == "up-1"


@pytest.mark.parametrize("word", ["ingest", "inspections", "log", "alerts"])
def test_the_acl_generator_refuses_a_grant_over_a_parent_or_service_topic(word: str) -> None:
    with pytest.raises(ValueError) as info:
        acl_text([SiteStations("lg-route9n", ("up-1", word))], command="test")
    text = str(info.value)
    assert text.startswith(
        f"site 'lg-route9n' station {word!r}: the grant siltwatch/v1/lg-route9n/{word}/# "
        "would cover siltwatch/v1/lg-route9n/"
    )
    assert "topic layout" in text


def test_broker_acl_command_writes_nothing_for_a_station_named_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = _lake_george(tmp_path, 'id = "up-1"', 'id = "ingest"')
    parser = argparse.ArgumentParser(prog="siltwatch")
    add_broker_acl_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["broker-acl", "--site", str(site), "--out", str(tmp_path / "o")])
    assert args.func(args) == 1
    assert not (tmp_path / "o").exists()
    assert "stations[0].id: station id 'ingest' is a word of the topic" in capsys.readouterr().err


def test_filter_covers_follows_mqtt_matching() -> None:
    assert filter_covers("a/b/#", "a/b")  # '#' also matches its parent level
    assert filter_covers("a/b/#", "a/b/c/d")
    assert filter_covers("a/+/c", "a/x/c")
    assert not filter_covers("a/+/c", "a/x/c/d")
    assert not filter_covers("a/b/#", "a/bc")
