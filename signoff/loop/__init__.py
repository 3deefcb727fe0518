"""The tool loop with an approval gate: a pure, synchronous state machine and its vocabulary."""
