"""Imports every command module so that each registers its commands on the app."""

from palaestra.cli import agent, debug, demo, matches, ratings, runs, server  # noqa: F401
