"""What the core needs from the world, as typing.Protocol interfaces (one module each)."""
