"""The one error type of model compression: a setting that cannot be used, named in the message."""
from ..errors import UserError

__all__ = ["SlimError"]


class SlimError(UserError, ValueError):
    """A compression setting that cannot be used (a ratio that removes every filter, an unreachable FLOPs
    target, an unknown layer, an empty calibration set, teacher and student with different labels); the
    message names the setting."""
