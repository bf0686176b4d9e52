"""attrs (being written)."""


class attrs:  # placeholder until the real class lands
    pass
