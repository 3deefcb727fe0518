"""The file tools' ground: confined paths, what they never touch, the workspace scope."""
