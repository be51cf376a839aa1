"""``UsageError``: arguments of an ``oar`` command that cannot be used together or with this model."""
from framework.errors import UserError

__all__ = ["UsageError"]


class UsageError(UserError):
    """Arguments that cannot be used together or with this model: exit status 2, like argparse's own errors."""
