"""``make bench``: how long the guide takes to build and test, against its budgets."""
