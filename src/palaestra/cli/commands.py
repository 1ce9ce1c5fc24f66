"""Imports every command module so that each registers its commands on the app."""

from palaestra.cli import agent, debug, demo, matches, ratings, server  # noqa: F401
