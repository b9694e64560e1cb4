"""Pure domain types: parts, messages, provider stream events, run events, errors.

Nothing in this package imports fastapi, sqlalchemy or a vendor SDK: every other layer
speaks these types, so they are the one vocabulary of the service.
"""
