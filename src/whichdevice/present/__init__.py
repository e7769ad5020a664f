"""Presenters: render records and analyses. They never measure and never decide verdicts."""
