"""The error every config problem raises."""

from .._errors import LagnetError


class ConfigError(LagnetError, ValueError):
    """A config that cannot be run: names the key path and what was expected."""
