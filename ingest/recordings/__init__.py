"""Recordings: sensor data captured to files and read back, and replay through the same engine as live."""
