"""chat-bff: a backend-for-frontend for AI chat UIs."""
