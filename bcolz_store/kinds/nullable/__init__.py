"""The nullable column kind: its class is in :mod:`.kind`."""
