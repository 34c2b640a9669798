"""Small services: what a router asks for, done against the database and the graphs."""
