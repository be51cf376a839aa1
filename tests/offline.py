"""What "ran offline" means for a test's ``$OAR_HOME`` (the ``offline`` fixture's folder)."""
import os

# What running a model keeps in $OAR_HOME by itself: traced programs, compiled CPU kernels and the optical flow
# of the videos it read, never a download.
RUN_CACHES = {"programs", "numba", "video_flow"}


def fetched_nothing(home):
    """True when ``home`` (a pathlib.Path) holds nothing but the caches running a model writes."""
    return not home.exists() or set(os.listdir(home)) <= RUN_CACHES
