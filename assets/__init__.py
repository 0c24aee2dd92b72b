"""Static files of the GraphLab app (CSS, client-side scripts)."""
