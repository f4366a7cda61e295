"""Conformance matrices: per behavior, the frames sent and what the RFCs say the
SUT must do with each (forward as, or drop with a reason)."""
