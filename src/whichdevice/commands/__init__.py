"""One module per command; each registers itself on `commands.common.app`."""
