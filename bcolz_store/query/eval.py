"""eval (being written)."""


def eval(*args, **kwargs):
    raise NotImplementedError
