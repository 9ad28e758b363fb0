"""The host side of the plugin system: hook specifications and the adapter registry."""
