"""Providers: translate between a vendor's wire format and our parts, nothing more."""
