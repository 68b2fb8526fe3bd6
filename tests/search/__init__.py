"""Tests of the auto-scheduler (search/)."""
