"""ctable (being written)."""


class ctable:  # placeholder until the real class lands
    pass
