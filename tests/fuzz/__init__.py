"""Fuzzing: hostile and careless inputs through parse, verify, schedule, build, database and trace loading."""
