"""The library version (its own module, so any layer can name it without importing the
package root and everything the root re-exports)."""

__version__ = "0.1.0"
