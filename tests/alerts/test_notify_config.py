"""NOTIFY.toml: loads, resolves secrets from files, and names the file and key of each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from alerts.notify_config import Delivery, load_notify
from siltwatch.config import load_site
from siltwatch.configerrors import ConfigError
from tests.alerts.helpers import FakeClock

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "lake-george-site.toml"

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
    delivery = Delivery(notify, load_site(EXAMPLE), FakeClock())
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


PLAIN_SMTP = """\
[smtp]
host = "{host}"
port = 25
security = "none"
username = "siltwatch"
password_file = "smtp-password"
from = "siltwatch@town.example"
{extra}
"""


def load_error(tmp_path: Path, text: str) -> list[str]:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_notify(path)
    return info.value.lines


def test_a_password_over_plain_smtp_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    lines = load_error(tmp_path, PLAIN_SMTP.format(host="smtp.town.example", extra=""))
    assert lines == [
        f'{tmp_path / "notify.toml"}: smtp.security: "none" would send the SMTP password in '
        'clear text; use "starttls" or "tls", or set allow_plaintext_auth = true for a relay '
        "on loopback"
    ]


def test_allow_plaintext_auth_is_only_for_a_relay_on_loopback(tmp_path: Path) -> None:
    lines = load_error(
        tmp_path,
        PLAIN_SMTP.format(host="smtp.town.example", extra="allow_plaintext_auth = true"),
    )
    assert lines == [
        f"{tmp_path / 'notify.toml'}: smtp.allow_plaintext_auth: only for a relay on loopback "
        "(127.0.0.0/8, ::1, localhost), not smtp.host 'smtp.town.example'; "
        'use security = "starttls" or "tls"'
    ]
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost", "LOCALHOST"):
        text = PLAIN_SMTP.format(host=host, extra="allow_plaintext_auth = true")
        notify = load_notify(write(tmp_path, text))
        assert notify.smtp is not None and notify.smtp.plaintext_auth_allowed, host


def test_plain_smtp_without_a_password_is_fine(tmp_path: Path) -> None:
    text = PLAIN_SMTP.format(host="relay.town.example", extra="")
    text = text.replace('username = "siltwatch"\n', "").replace(
        'password_file = "smtp-password"\n', ""
    )
    notify = load_notify(write(tmp_path, text))
    assert notify.smtp is not None and notify.smtp.username is None


def test_plain_http_for_the_sms_gateway_and_the_webhook_is_refused(tmp_path: Path) -> None:
    text = GOOD.replace('"https://api.twilio.com"', '"http://api.twilio.com"').replace(
        '"https://hooks.town.example/siltwatch"', '"http://hooks.town.example/T0123/B456/xyzzy"'
    )
    path = tmp_path / "notify.toml"
    lines = load_error(tmp_path, text)
    assert lines == [
        f'{path}: sms.base_url: "http://" would send the SMS gateway\'s auth token in clear '
        'text; use "https://", or set allow_insecure_http = true for a gateway stand-in on '
        "loopback",
        f'{path}: webhook.url: "http://" would send the webhook URL (a credential for chat '
        'services) and the alert in clear text; use "https://", or set '
        "allow_insecure_http = true for a receiver on loopback",
    ]
    allowed = text.replace("max_per_hour = 2", "max_per_hour = 2\nallow_insecure_http = true")
    allowed = allowed.replace('secret_file = "hook-secret"', 'secret_file = "hook-secret"\n'
                              "allow_insecure_http = true")  # fmt: skip
    lines = load_error(tmp_path, allowed)
    assert lines == [
        f"{path}: sms.allow_insecure_http: only for a gateway stand-in on loopback "
        "(127.0.0.0/8, ::1, localhost), not host 'api.twilio.com' of sms.base_url; use https://",
        f"{path}: webhook.allow_insecure_http: only for a receiver on loopback "
        "(127.0.0.0/8, ::1, localhost), not host 'hooks.town.example' of webhook.url; "
        "use https://",
    ]
    assert all("xyzzy" not in line for line in lines)  # the secret part of the URL


def test_loopback_stand_ins_may_use_http_when_allowed(tmp_path: Path) -> None:
    text = (
        GOOD.replace('"https://api.twilio.com"', '"http://127.0.0.1:8080"')
        .replace('"https://hooks.town.example/siltwatch"', '"http://[::1]:9000/hook"')
        .replace("max_per_hour = 2", "max_per_hour = 2\nallow_insecure_http = true")
        .replace('secret_file = "hook-secret"', 'secret_file = "hook-secret"\n'
                 "allow_insecure_http = true")
    )  # fmt: skip
    notify = load_notify(write(tmp_path, text))
    assert notify.sms is not None and notify.sms.allow_insecure_http
    assert notify.webhook is not None and notify.webhook.url == "http://[::1]:9000/hook"


def test_a_bad_webhook_url_is_reported_without_quoting_it(tmp_path: Path) -> None:
    lines = load_error(tmp_path, GOOD.replace('url = "https://hooks', 'url = "ftp://hooks'))
    assert lines == [
        f"{tmp_path / 'notify.toml'}: webhook.url: expected an https:// URL "
        "(not shown here: it is a secret)"
    ]


def test_the_loaded_settings_do_not_show_their_secrets(tmp_path: Path) -> None:
    """A Notify printed in a log line or a traceback shows no password, token or URL."""
    text = GOOD.replace("/siltwatch", "/services/T0123/B456/xyzzy")
    notify = load_notify(write(tmp_path, text))
    shown = repr(notify)
    assert "smtp.town.example" in shown and "siltwatch@town.example" in shown
    for secret in ("'pw'", "'tok'", "b's'", "xyzzy"):
        assert secret not in shown, secret


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
    from app.cli import EXIT_FAIL, REPO_EXAMPLES, main

    path = write(tmp_path, GOOD.replace("max_per_hour = 2", "max_per_hour = 0"))
    argv = ["serve", "--site", str(REPO_EXAMPLES / "lake-george-site.toml"), "--notify", str(path)]
    argv += ["--broker", "mqtt://127.0.0.1:1", "--db", str(tmp_path / "db.sqlite3")]
    assert main(argv) == EXIT_FAIL
    err = capsys.readouterr().err
    assert f"error: {path}: sms.max_per_hour: " in err
    assert not (tmp_path / "db.sqlite3").exists()
