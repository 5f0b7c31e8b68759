"""Tests of alert delivery: real SMTP (aiosmtpd) and HTTP servers on loopback."""
