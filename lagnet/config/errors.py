"""The error every config problem raises."""


class ConfigError(ValueError):
    """A config that cannot be run: names the key path and what was expected."""
