"""The InfluxDB mirror for Grafana: line protocol, per-site mirrors, re-copies after an outage, replays loaded for dashboards."""
