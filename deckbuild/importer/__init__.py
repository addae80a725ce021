"""`deckbuild import`: parse the seed question banks and keep cards/*.yaml in step with them."""
