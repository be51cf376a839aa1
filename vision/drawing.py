"""Drawing detections onto images (OpenCV), for ``oar run --output_dir`` and for looking at results."""
import numpy

from .data.transforms import require_cv2

__all__ = ["draw_detections", "PALETTE"]

PALETTE = ((230, 25, 75), (60, 180, 75), (255, 225, 25), (0, 130, 200), (245, 130, 48), (145, 30, 180),
           (70, 240, 240), (240, 50, 230), (210, 245, 60), (250, 190, 212))   # RGB, one per label in turn


def draw_detections(image, result):
    """A copy of ``image`` (H, W, 3) uint8 RGB with each box of ``result`` (``{"boxes": [[x1, y1, x2, y2],
    ...], "labels": [...], "scores": [...]}``, pixels) drawn as a rectangle captioned ``label score``,
    a colour per label."""
    cv2 = require_cv2()
    out = numpy.ascontiguousarray(image).copy()
    colours = {}
    for box, label, score in zip(result["boxes"], result["labels"], result["scores"]):
        colour = colours.setdefault(label, PALETTE[len(colours) % len(PALETTE)])
        x1, y1, x2, y2 = (int(round(v)) for v in box)
        cv2.rectangle(out, (x1, y1), (x2, y2), colour, 2)
        caption = f"{label} {score:.2f}"
        (w, h), _ = cv2.getTextSize(caption, cv2.FONT_HERSHEY_SIMPLEX, 0.4, 1)
        top = max(y1 - h - 4, 0)
        cv2.rectangle(out, (x1, top), (x1 + w + 2, top + h + 4), colour, -1)
        cv2.putText(out, caption, (x1 + 1, top + h + 1), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    return out
