"""Bundled Modbus register maps (TOML), loaded by :func:`hardware.registermap.load_map`."""
