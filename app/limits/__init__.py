"""Per-caller limits: requests per minute, concurrent runs, tokens per day."""
