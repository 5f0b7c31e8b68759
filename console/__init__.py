"""The web console and the inspector's report: what people look at and answer.

Reads the store (ingest/store/queries.py) and keeps its own tables in the same
database, the SQLite file or the PostgreSQL database (accounts, sessions, the audit log, acknowledgements, comments and
corrective actions), because the store is the truth: an acknowledgement that
stops an escalation must survive a restart as surely as the reading that
raised the alert.
"""
