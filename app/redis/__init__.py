"""What every user of the process's Redis shares: its circuit breaker (`outage`). The
limits' Redis backend and the runs' bus both build on it, neither on the other; `/readyz`
reads it, and PINGs through it when it has heard nothing lately (`readiness`)."""
