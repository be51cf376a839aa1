"""(being written)"""
__all__ = []
def linear(x, weight, bias=None):
    raise NotImplementedError
