"""One module per record type, each with ``render(console, record, png, *, loglog)``: the
terminal text, and beside ``png`` the plots and the HTML report (present/registry.py names them)."""
