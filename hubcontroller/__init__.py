"""hubcontroller package."""
