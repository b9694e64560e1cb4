"""One encoder per wire protocol: pure functions from run events to SSE frames."""
