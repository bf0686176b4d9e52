"""The decimal column kind: its class is in :mod:`.kind`."""
