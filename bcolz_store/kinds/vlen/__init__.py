"""The vlen column kind: its class is in :mod:`.kind`."""
