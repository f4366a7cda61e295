"""Test double of the TRex client package (see stl/api.py)."""
