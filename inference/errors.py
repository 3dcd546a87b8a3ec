"""The one exception family Betwixt raises for bad input.

Users see these messages in a terminal or Blender's status bar, so each names the file and the line,
joint or bone at fault and says what to do; nothing deep inside the code should leak a bare
IndexError or ValueError for something the user handed us.
"""


class BetwixtError(Exception):
    """Bad input or an impossible request, explained for the person who made it."""


class BVHError(BetwixtError):
    """A BVH file that cannot be read as written."""

    def __init__(self, path, message, line=None):
        self.path = str(path)
        self.line = line
        where = f"{self.path}, line {line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class DataError(BetwixtError):
    """A data set (folder or archive) that cannot serve as motion data."""
