#!/usr/bin/env bash
# Install the siltwatch edge agent on Raspberry Pi OS (Bookworm or later).
#
#   sudo ./edge/install.sh [--src DIR] [--config FILE] [--no-start]
#
# Installs OS packages (python venv, lgpio for gpiozero, i2c-tools), enables I2C
# and the serial port, creates the 'siltwatch' user, a virtualenv in
# /opt/siltwatch/venv with siltwatch[edge], the config in /etc/siltwatch/edge.toml
# (the example if none is given; never overwritten), and the systemd unit.
set -euo pipefail

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CONFIG=""
START=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --src) SRC="$2"; shift 2 ;;
        --config) CONFIG="$2"; shift 2 ;;
        --no-start) START=0; shift ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) echo "unknown option: $1" >&2; exit 2 ;;
    esac
done

if [[ $EUID -ne 0 ]]; then
    echo "run as root (sudo $0)" >&2
    exit 1
fi

echo "== OS packages"
apt-get update
apt-get install -y python3-venv python3-dev python3-lgpio python3-gpiozero i2c-tools

echo "== enable I2C and the serial port (no login shell on it)"
if command -v raspi-config >/dev/null; then
    raspi-config nonint do_i2c 0
    raspi-config nonint do_serial_hw 0 || true
    raspi-config nonint do_serial_cons 1 || true
fi

echo "== user"
if ! id siltwatch >/dev/null 2>&1; then
    useradd --system --home-dir /var/lib/siltwatch-edge --shell /usr/sbin/nologin siltwatch
fi
for group in gpio i2c dialout; do
    if getent group "$group" >/dev/null; then usermod -aG "$group" siltwatch; fi
done

echo "== virtualenv in /opt/siltwatch/venv"
install -d -m 0755 /opt/siltwatch
rm -rf /opt/siltwatch/src
install -d -m 0755 /opt/siltwatch/src
tar -C "$SRC" --exclude=.venv --exclude=.git --exclude='*.egg-info' -cf - . \
    | tar -C /opt/siltwatch/src -xf -
# system site packages: the apt builds of lgpio/gpiozero match the Pi's kernel
python3 -m venv --system-site-packages /opt/siltwatch/venv
/opt/siltwatch/venv/bin/pip install --upgrade pip
/opt/siltwatch/venv/bin/pip install "/opt/siltwatch/src[edge]" pyserial

echo "== configuration in /etc/siltwatch"
install -d -m 0750 -g siltwatch /etc/siltwatch
if [[ ! -e /etc/siltwatch/edge.toml ]]; then
    install -m 0640 -g siltwatch "${CONFIG:-$SRC/edge/example.toml}" /etc/siltwatch/edge.toml
    echo "   wrote /etc/siltwatch/edge.toml: edit site, station, broker and sensors"
else
    echo "   /etc/siltwatch/edge.toml exists: left unchanged"
fi
install -d -m 0750 -o siltwatch -g siltwatch /var/lib/siltwatch-edge

echo "== systemd unit"
install -m 0644 "$SRC/edge/siltwatch-edge.service" /etc/systemd/system/siltwatch-edge.service
systemctl daemon-reload
systemctl enable siltwatch-edge.service

if [[ $START -eq 1 ]]; then
    if /opt/siltwatch/venv/bin/python -m edge --config /etc/siltwatch/edge.toml --check; then
        systemctl restart siltwatch-edge.service
        echo "== started: journalctl -u siltwatch-edge -f"
    else
        echo "== not started: fix /etc/siltwatch/edge.toml, then systemctl start siltwatch-edge" >&2
    fi
fi
