"""The struct column kind: its class is in :mod:`.kind`."""
