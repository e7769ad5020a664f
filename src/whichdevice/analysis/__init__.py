"""Pure analysis: records in, tables and verdicts out. Nothing here measures or prints."""
