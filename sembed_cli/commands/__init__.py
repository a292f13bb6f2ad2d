"""One module per subcommand: a thin typer function over a plain records-in, records-out function."""
