"""The roof: the commands and the service wiring that import everything; nothing imports this package."""
