"""Vision data: dict-in/dict-out image transforms (also used on video frames) and image folders.

OpenCV is imported only when an image is decoded or resized.
"""
from . import folder, photometric, transforms
from .folder import *  # noqa: F401,F403
from .photometric import *  # noqa: F401,F403
from .shapes import make_shapes, draw_shape, SHAPES
from .transforms import *  # noqa: F401,F403

__all__ = ["make_shapes", "draw_shape", "SHAPES"] + transforms.__all__ + photometric.__all__ + folder.__all__
