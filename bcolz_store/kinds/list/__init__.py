"""The list column kind: its class is in :mod:`.kind`."""
