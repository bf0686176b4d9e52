"""The uuid column kind (Arrow's canonical ``arrow.uuid`` extension type): its
class is in :mod:`.kind`."""
