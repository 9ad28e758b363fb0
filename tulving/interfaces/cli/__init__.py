"""The ``tulving`` command line."""
