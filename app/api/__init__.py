"""HTTP surfaces: thin routers, DTOs, SSE encoders. The only package that imports fastapi."""
