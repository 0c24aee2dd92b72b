"""Sample models bundled with GraphLab (see manifest.json)."""
