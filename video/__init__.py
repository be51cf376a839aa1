"""Video recognition: data (decoding, frame sampling, clip transforms, datasets, a generator of
labelled videos, frame features), models, tasks and the video metrics."""
