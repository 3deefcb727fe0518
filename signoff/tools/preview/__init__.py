"""Effect previews: what a write or a removal would change, shown before anyone decides."""
