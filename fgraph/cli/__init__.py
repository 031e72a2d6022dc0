"""The click CLI: parse, call one library function, render. No SQL and no business rule here."""
