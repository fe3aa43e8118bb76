"""The library's version, in a module of its own so that the stores can stamp it without importing the package's face."""

__version__ = "0.1.0"
