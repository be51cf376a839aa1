"""Vision data: dict-in/dict-out image transforms (also used on video frames), image folders, VOC and COCO
detection sets and the transforms that move their boxes.

OpenCV is imported only when an image is decoded or resized.
"""
from . import box_transforms, detection, folder, photometric, transforms
from .box_transforms import *  # noqa: F401,F403
from .detection import *  # noqa: F401,F403
from .folder import *  # noqa: F401,F403
from .photometric import *  # noqa: F401,F403
from .shapes import make_shapes, draw_shape, SHAPES
from .transforms import *  # noqa: F401,F403

__all__ = (["make_shapes", "draw_shape", "SHAPES"] + box_transforms.__all__ + detection.__all__ + transforms.__all__
           + photometric.__all__ + folder.__all__)
