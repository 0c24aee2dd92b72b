"""One module per panel: its ids, ``layout(services)``, ``register(app, services)`` and, at the
end, its `Panel` declaration; `registry` lists them in page order."""
