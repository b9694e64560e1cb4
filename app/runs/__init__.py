"""Runs: background tasks that own a turn and write its event log; readers tail the log."""
