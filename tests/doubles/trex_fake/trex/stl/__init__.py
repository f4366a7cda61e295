"""Test double of trex.stl (see api.py)."""
