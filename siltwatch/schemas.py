"""JSON Schemas of everything siltwatch reads or writes, for integrators.

``siltwatch schema --out DIR`` writes them; docs/schema/ holds the committed
copy that docs/wire-format.md documents, and a test keeps the two identical.
"""

from __future__ import annotations

from typing import Any

from siltwatch.schema import WIRE_MODELS, Alert, Duty


def json_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema: the MQTT payloads plus the replay outputs (ALERTS/DUTIES.jsonl lines)."""
    out = {name: model.model_json_schema() for name, model in WIRE_MODELS.items()}
    out["alerts-jsonl-line"] = Alert.model_json_schema()
    out["duties-jsonl-line"] = Duty.model_json_schema()
    return out
