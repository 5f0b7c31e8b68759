"""NOTIFY.toml: loads, resolves secrets from files, and names the file and key of each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from alerts.notify_config import Delivery, load_notify
from siltwatch.configerrors import ConfigError
from tests.alerts.helpers import SITE, FakeClock

GOOD = """\
outbox = "state/outbox.sqlite3"

[smtp]
host = "smtp.town.example"
port = 465
security = "tls"
username = "siltwatch"
password_file = "smtp-password"
from = "siltwatch@town.example"

[sms]
base_url = "https://api.twilio.com"
account_sid = "AC0123"
auth_token_file = "twilio-token"
from_number = "+15185550100"
max_per_hour = 2

[webhook]
url = "https://hooks.town.example/siltwatch"
secret_file = "hook-secret"

[retry]
delays_s = [30, 60]
"""


def write(tmp_path: Path, text: str) -> Path:
    for name, value in (("smtp-password", "pw\n"), ("twilio-token", "tok\n"), ("hook-secret", "s")):
        (tmp_path / name).write_text(value)
    path = tmp_path / "notify.toml"
    path.write_text(text)
    return path


def test_a_good_file_loads_with_secrets_from_files_and_paths_from_its_folder(
    tmp_path: Path,
) -> None:
    notify = load_notify(write(tmp_path, GOOD))
    assert notify.outbox_path == tmp_path / "state" / "outbox.sqlite3"
    assert notify.smtp is not None and notify.smtp.password == "pw"
    assert notify.smtp.security == "tls" and notify.smtp.from_addr == "siltwatch@town.example"
    assert notify.sms is not None and notify.sms.auth_token == "tok"
    assert notify.webhook is not None and notify.webhook.secret == b"s"
    delivery = Delivery(notify, SITE, FakeClock())
    try:
        assert [c.name for c in delivery.channels] == ["email", "sms", "webhook"]
        assert delivery.worker.retry.delays_s == (30.0, 60.0)
        assert delivery.worker.sms_limit is not None
        assert delivery.worker.sms_limit.max_per_window == 2
    finally:
        delivery.outbox.close()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (('port = 465', 'port = "x"'), "smtp.port: "),
        (('security = "tls"', 'security = "ssl"'), "smtp.security: expected 'none', 'starttls' or 'tls'"),
        (('from_number = "+15185550100"', 'from_number = "555-0100"'), "sms.from_number: "),
        (('account_sid = "AC0123"', 'account_sid = "AC0123"\nauth_token = "inline"'), "sms.auth_token: secrets are not written inline"),
        (('max_per_hour = 2', 'max_per_hour = 0'), "sms.max_per_hour: "),
        (('url = "https://hooks', 'url = "ftp://hooks'), "webhook.url: "),
        (('delays_s = [30, 60]', 'delays_s = [30, -1]'), "retry.delays_s: expected 1 to 30 positive delays"),
        (('[webhook]', '[webhooks]'), "webhooks: is not a known key"),
        (('password_file = "smtp-password"', 'password_file = "missing"'), "smtp.password_file: cannot read"),
    ],
)  # fmt: skip
def test_each_mistake_names_the_file_and_key(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    assert change[0] in GOOD
    path = write(tmp_path, GOOD.replace(change[0], change[1]))
    with pytest.raises(ConfigError) as info:
        load_notify(path)
    assert any(line.startswith(f"{path}: {expected}") for line in info.value.lines), (
        info.value.lines
    )


def test_all_mistakes_at_once(tmp_path: Path) -> None:
    bad = GOOD.replace("port = 465", "port = 0").replace("max_per_hour = 2", "max_per_hour = -1")
    with pytest.raises(ConfigError) as info:
        load_notify(write(tmp_path, bad))
    assert len(info.value.lines) == 2


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_notify(tmp_path / "nope.toml")
    assert info.value.lines == [f"{tmp_path / 'nope.toml'}: file not found"]


def test_serve_refuses_a_bad_notify_file_before_connecting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from siltwatch.cli import EXIT_FAIL, REPO_EXAMPLES, main

    path = write(tmp_path, GOOD.replace("max_per_hour = 2", "max_per_hour = 0"))
    argv = ["serve", "--site", str(REPO_EXAMPLES / "lake-george-site.toml"), "--notify", str(path)]
    argv += ["--broker", "mqtt://127.0.0.1:1", "--db", str(tmp_path / "db.sqlite3")]
    assert main(argv) == EXIT_FAIL
    err = capsys.readouterr().err
    assert f"error: {path}: sms.max_per_hour: " in err
    assert not (tmp_path / "db.sqlite3").exists()
