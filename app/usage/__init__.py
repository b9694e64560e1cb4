"""Usage accounting and budgets: every model call's tokens and cost, stored per caller,
and the budgets computed from them (see `app.usage.book`)."""
