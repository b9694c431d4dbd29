"""The instruction budget: instructions per request counted in process under callgrind, held to budgets.toml."""
