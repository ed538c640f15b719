"""Built-in rules, one module each; `CENTRALITY_RULES` lists which modules are loaded."""
