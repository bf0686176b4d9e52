"""carray (being written)."""


class carray:  # placeholder until the real class lands
    pass


class chunk:  # placeholder until the real class lands
    pass
