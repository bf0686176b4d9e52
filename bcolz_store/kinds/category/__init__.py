"""The category column kind: its class is in :mod:`.kind`."""
