"""Use cases orchestrating the ports: the Memory facade and the services behind it."""
