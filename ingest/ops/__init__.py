"""The operations endpoints: Prometheus metrics, /healthz and /readyz."""
