"""Tests that drive a real browser over the served site."""
