"""One module per panel: each has ``layout(...)`` (its components) and ``register(app, services)``
(its callbacks)."""
