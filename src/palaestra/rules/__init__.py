"""The arena's decisions, pure: no I/O, no clock reads."""
