"""The one error of image building."""


class ImageError(Exception):
    """An image cannot be built or found; the message says what, where, and the fix."""
