"""A fake of the part of jaxlib the shim reads (tests/python/frameworks)."""
