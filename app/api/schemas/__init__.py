"""Request and response models (DTOs) of the HTTP API, separate from tables and domain."""
