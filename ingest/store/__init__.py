"""The store, the truth: SQLite and PostgreSQL behind one set of queries, opened from --db, fenced to its owner."""
