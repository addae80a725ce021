"""The learning lint: warnings for cards that test more than one thing or give their answer away."""
