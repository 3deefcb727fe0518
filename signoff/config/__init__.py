"""A worker's configuration: its settings and the secret files it keeps to itself."""
