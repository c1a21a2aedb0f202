"""Exercise checks of the course's notebooks, one module per notebook (``nb03`` for notebook 03): each check raises AssertionError with a message that says what to change."""
