"""The fixed_binary column kind: its class is in :mod:`.kind`."""
