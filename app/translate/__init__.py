"""Pure translation functions between vendor formats, AIKit messages and our parts."""
