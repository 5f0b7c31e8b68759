"""siltwatch package."""
