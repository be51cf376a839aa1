"""``register_everything``: import the packages that fill the registries (the zoo sits above them all)."""

__all__ = ["register_everything"]


def register_everything():
    """Import the packages that register models, datasets, metrics and tasks (the zoo sits above them all)."""
    from . import toy  # noqa: F401
    import nlp.lac.data  # noqa: F401
    import nlp.lac.metrics  # noqa: F401
    import nlp.lac.model  # noqa: F401
    import nlp.lac.official_task  # noqa: F401
    import nlp.lac.task  # noqa: F401
    import nlp.senta.data  # noqa: F401
    import nlp.senta.model  # noqa: F401
    import nlp.senta.task  # noqa: F401
    import nlp.simnet.data  # noqa: F401
    import nlp.simnet.metrics  # noqa: F401
    import nlp.simnet.model  # noqa: F401
    import nlp.simnet.task  # noqa: F401
    import video.data  # noqa: F401
    import video.metrics  # noqa: F401
    import vision.data  # noqa: F401
    import vision.metrics  # noqa: F401
    import vision.models  # noqa: F401
    import vision.tasks  # noqa: F401
    import video.models  # noqa: F401
    import video.tasks  # noqa: F401
