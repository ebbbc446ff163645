"""The shell: one lexer and one reading of a shell line, for the action verdict and the live phases."""
