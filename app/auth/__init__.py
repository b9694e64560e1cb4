"""Who is calling: JWTs, API keys, stream tokens, and the one check they all go through."""
